//! Assignment tests: worked examples and the upstream tables of
//! `assignment_test.go`, `division_algorithm_test.go`, `common_test.go` and `util_test.go`,
//! re-expressed; plus property tests.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use karmada_api::cluster::{Cluster, ClusterSpec};
use karmada_api::policy::{
    ClusterAffinity, ClusterAffinityTerm, ClusterPreferences, DynamicWeightFactor,
    OverflowClusterAffinity, Placement, ReplicaDivisionPreference, ReplicaSchedulingStrategy,
    ReplicaSchedulingType, StaticClusterWeight,
};
use karmada_api::work::{
    ReplicaRequirements, ResourceBindingSpec, ResourceBindingStatus, TargetCluster,
};
use proptest::prelude::*;

use super::dynamic::{DynamicStrategy, divide};
use super::static_weight::assign_by_static_weight;
use super::*;
use crate::detail::ClusterDetail;

fn clusters(names: &[&str]) -> Vec<Cluster> {
    names
        .iter()
        .map(|n| Cluster::new(n, ClusterSpec::default()))
        .collect()
}

/// Candidates with allocatable replicas; available = allocatable + previous replicas.
fn details<'a>(
    cs: &'a [Cluster],
    alloc: &[i32],
    spec: &ResourceBindingSpec,
) -> Vec<ClusterDetail<'a>> {
    cs.iter()
        .zip(alloc)
        .map(|(c, a)| ClusterDetail {
            name: c.name(),
            cluster: c,
            score: 0,
            overflow_order: 0,
            allocatable_replicas: *a,
            available_replicas: i64::from(*a)
                + i64::from(spec.assigned_replicas_for_cluster(c.name())),
            position: None,
        })
        .collect()
}

fn tcs(v: &[(&str, i32)]) -> Vec<TargetCluster> {
    v.iter().map(|(n, r)| TargetCluster::new(*n, *r)).collect()
}

fn divided(pref: ReplicaDivisionPreference, wp: Option<ClusterPreferences>) -> Placement {
    Placement {
        replica_scheduling: Some(ReplicaSchedulingStrategy {
            replica_scheduling_type: Some(ReplicaSchedulingType::Divided),
            replica_division_preference: Some(pref),
            weight_preference: wp,
        }),
        ..Default::default()
    }
}

fn dynamic_weight() -> Placement {
    divided(
        ReplicaDivisionPreference::Weighted,
        Some(ClusterPreferences {
            static_weight_list: vec![],
            dynamic_weight: Some(DynamicWeightFactor::AvailableReplicas),
        }),
    )
}

fn aggregated() -> Placement {
    divided(ReplicaDivisionPreference::Aggregated, None)
}

fn static_by_name(w: &[(&str, i64)]) -> Placement {
    divided(
        ReplicaDivisionPreference::Weighted,
        Some(ClusterPreferences {
            static_weight_list: w
                .iter()
                .map(|(n, w)| StaticClusterWeight {
                    target_cluster: ClusterAffinity {
                        cluster_names: vec![n.to_string()],
                        ..Default::default()
                    },
                    weight: *w,
                })
                .collect(),
            dynamic_weight: None,
        }),
    )
}

fn workload(replicas: i32, placement: Placement, previous: &[(&str, i32)]) -> ResourceBindingSpec {
    ResourceBindingSpec {
        replicas,
        replica_requirements: Some(ReplicaRequirements::default()),
        clusters: tcs(previous),
        placement: Some(placement),
        ..Default::default()
    }
}

fn sorted(mut v: Vec<TargetCluster>) -> Vec<TargetCluster> {
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
}

fn run(
    names: &[&str],
    alloc: &[i32],
    spec: &ResourceBindingSpec,
) -> Result<Vec<TargetCluster>, ScheduleError> {
    let cs = clusters(names);
    let d = details(&cs, alloc, spec);
    assign_replicas(&d, spec, &ResourceBindingStatus::default())
}

const M3: [&str; 3] = ["m1", "m2", "m3"];

// ---- worked examples ----

#[test]
fn example_1_first_schedule_dynamic_weight() {
    let spec = workload(12, dynamic_weight(), &[]);
    assert_eq!(
        run(&M3, &[6, 8, 10], &spec).unwrap(),
        tcs(&[("m1", 3), ("m2", 4), ("m3", 5)])
    );
}

#[test]
fn example_2_scale_up() {
    let spec = workload(15, dynamic_weight(), &[("m1", 3), ("m2", 4), ("m3", 5)]);
    assert_eq!(
        run(&M3, &[3, 4, 5], &spec).unwrap(),
        tcs(&[("m1", 4), ("m2", 5), ("m3", 6)])
    );
}

#[test]
fn example_3_scale_down() {
    let spec = workload(7, dynamic_weight(), &[("m1", 3), ("m2", 4), ("m3", 5)]);
    assert_eq!(
        run(&M3, &[3, 4, 5], &spec).unwrap(),
        tcs(&[("m1", 2), ("m2", 2), ("m3", 3)])
    );
}

#[test]
fn example_4_aggregated_first_schedule() {
    let spec = workload(12, aggregated(), &[]);
    assert_eq!(
        run(&M3, &[6, 8, 10], &spec).unwrap(),
        tcs(&[("m2", 5), ("m3", 7)])
    );
}

#[test]
fn example_5_aggregated_scale_up_needing_all() {
    let spec = workload(24, aggregated(), &[("m1", 4), ("m2", 8)]);
    assert_eq!(
        run(&M3, &[4, 6, 8], &spec).unwrap(),
        tcs(&[("m1", 7), ("m2", 12), ("m3", 5)])
    );
}

#[test]
fn example_6_aggregated_scale_up_prefers_current_holders() {
    let spec = workload(24, aggregated(), &[("m1", 4), ("m2", 8)]);
    // Candidate order as selection produces it: m2 (available 14) before m1 (10).
    let got = run(&["m2", "m1", "m3"], &[6, 6, 20], &spec).unwrap();
    assert_eq!(got, tcs(&[("m1", 10), ("m2", 14)]));
}

#[test]
fn example_7_aggregated_scale_down_consolidates() {
    let spec = workload(6, aggregated(), &[("m1", 4), ("m2", 8)]);
    assert_eq!(
        run(&["m1", "m2"], &[10, 10], &spec).unwrap(),
        tcs(&[("m2", 6)])
    );
}

#[test]
fn example_8_aggregated_region_selection() {
    let spec = workload(16, aggregated(), &[]);
    let got = run(&["b1", "a1", "a2"], &[9, 6, 2], &spec).unwrap();
    assert_eq!(got, tcs(&[("a1", 6), ("a2", 2), ("b1", 8)]));
}

#[test]
fn scale_up_error_keeps_class_and_prefix() {
    let spec = workload(12, dynamic_weight(), &[]);
    let err = run(&M3, &[3, 3, 3], &spec).unwrap_err();
    assert_eq!(
        err,
        ScheduleError::Unschedulable(
            "failed to scale up: Clusters available replicas 9 are not enough to schedule.".into()
        )
    );
    assert_eq!(
        err.wrap("failed to assign replicas").to_string(),
        "failed to assign replicas: failed to scale up: Clusters available replicas 9 are not enough to schedule."
    );
}

#[test]
fn steady_keeps_previous_order() {
    let spec = workload(12, dynamic_weight(), &[("m3", 5), ("m1", 3), ("m2", 4)]);
    assert_eq!(
        run(&M3, &[1, 1, 1], &spec).unwrap(),
        tcs(&[("m3", 5), ("m1", 3), ("m2", 4)])
    );
}

#[test]
fn fresh_mode_recomputes_with_current_replicas_as_capacity() {
    let mut spec = workload(12, dynamic_weight(), &[("m1", 10), ("m2", 2)]);
    let t = |s: &str| Time(s.parse().unwrap());
    spec.reschedule_triggered_at = Some(t("2024-01-01T00:00:10Z"));
    let status = ResourceBindingStatus {
        last_scheduled_time: Some(t("2024-01-01T00:00:00Z")),
        ..Default::default()
    };
    let cs = clusters(&M3);
    let d = details(&cs, &[0, 2, 8], &spec);
    // Weights 10, 4, 8 → Webster 12 seats.
    let got = assign_replicas(&d, &spec, &status).unwrap();
    assert_eq!(got, tcs(&[("m1", 6), ("m2", 2), ("m3", 4)]));
    // Equal timestamps are not "after": Steady, unchanged.
    let status = ResourceBindingStatus {
        last_scheduled_time: spec.reschedule_triggered_at.clone(),
        ..Default::default()
    };
    assert_eq!(
        assign_replicas(&d, &spec, &status).unwrap(),
        tcs(&[("m1", 10), ("m2", 2)])
    );
    // Fresh errors carry their own prefix.
    let d = details(&cs, &[0, 0, 0], &workload(20, dynamic_weight(), &[]));
    let mut spec20 = spec.clone();
    spec20.replicas = 20;
    let status = ResourceBindingStatus {
        last_scheduled_time: Some(t("2024-01-01T00:00:00Z")),
        ..Default::default()
    };
    assert_eq!(
        assign_replicas(&d, &spec20, &status)
            .unwrap_err()
            .to_string(),
        "failed to do fresh scale: Clusters available replicas 12 are not enough to schedule."
    );
}

#[test]
fn reschedule_required_is_strict() {
    let t = |s: &str| Time(s.parse().unwrap());
    let (a, b) = (t("2024-01-01T00:00:00Z"), t("2024-01-01T00:00:01Z"));
    assert!(reschedule_required(Some(&b), Some(&a)));
    assert!(!reschedule_required(Some(&a), Some(&a)));
    assert!(!reschedule_required(Some(&a), Some(&b)));
    assert!(!reschedule_required(None, Some(&a)));
    assert!(!reschedule_required(Some(&a), None));
}

// ---- dispatch, Duplicated, errors ----

#[test]
fn no_candidates_is_an_error() {
    let spec = workload(1, dynamic_weight(), &[]);
    let err = assign_replicas(&[], &spec, &ResourceBindingStatus::default()).unwrap_err();
    assert_eq!(
        err,
        ScheduleError::Other("no clusters available to schedule".into())
    );
}

#[test]
fn non_workloads_and_multi_component_get_every_candidate_with_zero() {
    let mut spec = ResourceBindingSpec {
        placement: Some(aggregated()),
        ..Default::default()
    };
    assert_eq!(
        run(&["b", "a"], &[1, 1], &spec).unwrap(),
        tcs(&[("b", 0), ("a", 0)])
    );
    spec.replicas = 3;
    spec.components = vec![Default::default(), Default::default()];
    assert_eq!(
        run(&["b", "a"], &[1, 1], &spec).unwrap(),
        tcs(&[("b", 0), ("a", 0)])
    );
}

#[test]
fn duplicated_upstream_table() {
    let dup = Placement {
        replica_scheduling: Some(ReplicaSchedulingStrategy {
            replica_scheduling_type: Some(ReplicaSchedulingType::Duplicated),
            ..Default::default()
        }),
        ..Default::default()
    };
    let spec = workload(2, dup.clone(), &[]);
    assert_eq!(
        run(&["member1", "member2"], &[0, 0], &spec).unwrap(),
        tcs(&[("member1", 2), ("member2", 2)])
    );
    // Replicas 0 (requirements present): every entry dropped.
    let spec = workload(0, dup, &[]);
    assert_eq!(
        run(&["member1", "member2"], &[0, 0], &spec).unwrap(),
        vec![]
    );
    // Null replicaScheduling is Duplicated too.
    let spec = workload(3, Placement::default(), &[]);
    assert_eq!(run(&["x"], &[0], &spec).unwrap(), tcs(&[("x", 3)]));
}

#[test]
fn unsupported_strategy_messages() {
    let mut p = aggregated();
    p.replica_scheduling
        .as_mut()
        .unwrap()
        .replica_division_preference = None;
    let err = run(&["a"], &[1], &workload(1, p, &[])).unwrap_err();
    assert_eq!(
        err,
        ScheduleError::Other(
            "unsupported replica scheduling strategy, replicaSchedulingType: Divided, \
             replicaDivisionPreference: , please try another scheduling strategy"
                .into()
        )
    );
    let p = Placement {
        replica_scheduling: Some(Default::default()),
        ..Default::default()
    };
    assert_eq!(
        run(&["a"], &[1], &workload(1, p, &[]))
            .unwrap_err()
            .to_string(),
        "unsupported replica scheduling strategy, replicaSchedulingType: , \
         replicaDivisionPreference: , please try another scheduling strategy"
    );
}

// ---- static weights: upstream Test_assignByStaticWeightStrategy ----

#[test]
fn static_weight_upstream_table() {
    let m = ["member1", "member2", "member3"];
    let w321 = [("member1", 3), ("member2", 2), ("member3", 1)];
    let cases: Vec<(&[&str], Placement, i32, Vec<TargetCluster>)> = vec![
        (
            &m,
            static_by_name(&w321),
            12,
            tcs(&[("member1", 6), ("member2", 4), ("member3", 2)]),
        ),
        (
            &m,
            divided(ReplicaDivisionPreference::Weighted, None),
            12,
            tcs(&[("member1", 4), ("member2", 4), ("member3", 4)]),
        ),
        (
            &m,
            static_by_name(&w321),
            13,
            tcs(&[("member1", 7), ("member2", 4), ("member3", 2)]),
        ),
        (
            &m,
            static_by_name(&w321),
            14,
            tcs(&[("member1", 7), ("member2", 5), ("member3", 2)]),
        ),
        (
            &m[..2],
            static_by_name(&[("member1", 1), ("member2", 1)]),
            0,
            tcs(&[("member1", 0), ("member2", 0)]),
        ),
        (
            &m[..2],
            static_by_name(&[("member1", 1)]),
            2,
            tcs(&[("member1", 2)]),
        ),
        (
            &m[..2],
            static_by_name(&[("member1", 1), ("member2", 1), ("member1", 2)]),
            3,
            tcs(&[("member1", 2), ("member2", 1)]),
        ),
    ];
    for (i, (names, placement, replicas, want)) in cases.into_iter().enumerate() {
        let spec = workload(replicas, placement, &[]);
        let cs = clusters(names);
        let d = details(&cs, &vec![0; names.len()], &spec);
        assert_eq!(assign_by_static_weight(&d, &spec), want, "case {i}");
    }
}

#[test]
fn static_weight_by_label_and_zero_weights() {
    let mut cs = clusters(&["a", "b", "c"]);
    cs[0].metadata.labels = Some([("tier".to_string(), "gold".to_string())].into());
    let gold = ClusterAffinity {
        label_selector: Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
                match_labels: Some([("tier".to_string(), "gold".to_string())].into()),
                match_expressions: None,
            },
        ),
        ..Default::default()
    };
    let p = divided(
        ReplicaDivisionPreference::Weighted,
        Some(ClusterPreferences {
            static_weight_list: vec![
                StaticClusterWeight {
                    target_cluster: gold,
                    weight: 2,
                },
                StaticClusterWeight {
                    target_cluster: ClusterAffinity {
                        cluster_names: vec!["b".into()],
                        ..Default::default()
                    },
                    weight: 1,
                },
            ],
            dynamic_weight: None,
        }),
    );
    let spec = workload(3, p, &[]);
    let d = details(&cs, &[0, 0, 0], &spec);
    let status = ResourceBindingStatus::default();
    assert_eq!(
        assign_replicas(&d, &spec, &status).unwrap(),
        tcs(&[("a", 2), ("b", 1)])
    );
    // No positive weight anywhere: everyone weighs 1.
    let spec = workload(3, static_by_name(&[("zzz", 5)]), &[]);
    assert_eq!(
        assign_replicas(&d, &spec, &status).unwrap(),
        tcs(&[("a", 1), ("b", 1), ("c", 1)])
    );
}

/// Upstream `Test_DistributionOfReplicas`-style sequence: static weights ignore the past.
#[test]
fn static_weight_is_stateless() {
    let spec = workload(5, static_by_name(&[("a", 1), ("b", 1)]), &[("a", 5)]);
    assert_eq!(
        run(&["a", "b"], &[0, 0], &spec).unwrap(),
        tcs(&[("a", 3), ("b", 2)])
    );
}

// ---- dynamic: upstream Test_dynamicScale, Test_dynamicScaleUp, Test_dynamicDivideReplicas ----

#[test]
fn dynamic_scale_upstream_table() {
    let m = ["member1", "member2", "member3"];
    let m134 = ["member1", "member3", "member4"];
    let prev_246 = [("member1", 2), ("member2", 4), ("member3", 6)];
    let prev_48 = [("member1", 4), ("member2", 8)];
    type Case<'a> = (
        &'a [&'a str],
        Vec<i32>,
        ResourceBindingSpec,
        Option<Vec<TargetCluster>>,
    );
    let cases: Vec<Case<'_>> = vec![
        (
            &m,
            vec![1, 1, 1],
            workload(6, dynamic_weight(), &prev_246),
            Some(tcs(&[("member1", 1), ("member2", 2), ("member3", 3)])),
        ),
        (
            &m,
            vec![10, 10, 10],
            workload(24, dynamic_weight(), &prev_246),
            Some(tcs(&[("member1", 6), ("member2", 8), ("member3", 10)])),
        ),
        (
            &m,
            vec![1, 1, 1],
            workload(24, dynamic_weight(), &prev_246),
            None,
        ),
        (
            &m,
            vec![1, 1, 1],
            workload(6, aggregated(), &prev_48),
            Some(tcs(&[("member2", 6)])),
        ),
        (
            &m[..2],
            vec![100, 100],
            workload(8, aggregated(), &prev_48),
            Some(tcs(&[("member2", 8)])),
        ),
        (
            &m,
            vec![4, 6, 8],
            workload(24, aggregated(), &prev_48),
            Some(tcs(&[("member1", 7), ("member2", 12), ("member3", 5)])),
        ),
        (
            &m,
            vec![6, 6, 20],
            workload(24, aggregated(), &prev_48),
            Some(tcs(&[("member1", 10), ("member2", 14)])),
        ),
        (
            &m,
            vec![1, 1, 1],
            workload(24, aggregated(), &prev_48),
            None,
        ),
        (
            &m134,
            vec![4, 8, 12],
            workload(24, aggregated(), &prev_48),
            Some(tcs(&[("member1", 7), ("member3", 7), ("member4", 10)])),
        ),
    ];
    for (i, (names, alloc, spec, want)) in cases.into_iter().enumerate() {
        let got = run(names, &alloc, &spec);
        match want {
            Some(w) => assert_eq!(sorted(got.unwrap()), w, "case {i}"),
            None => assert!(
                matches!(got, Err(ScheduleError::Unschedulable(_))),
                "case {i}: {got:?}"
            ),
        }
    }
}

#[test]
fn dynamic_scale_up_upstream_table() {
    let m = ["member1", "member2", "member3"];
    type Case<'a> = (
        &'a [&'a str],
        Vec<i32>,
        ResourceBindingSpec,
        Option<Vec<TargetCluster>>,
    );
    let cases: Vec<Case<'_>> = vec![
        (
            &m,
            vec![6, 8, 10],
            workload(12, dynamic_weight(), &[]),
            Some(tcs(&[("member1", 3), ("member2", 4), ("member3", 5)])),
        ),
        (
            &m,
            vec![8, 8, 10],
            workload(12, dynamic_weight(), &[]),
            Some(tcs(&[("member1", 4), ("member2", 4), ("member3", 4)])),
        ),
        (&m, vec![3, 3, 3], workload(12, dynamic_weight(), &[]), None),
        (
            &m,
            vec![6, 8, 10],
            workload(12, aggregated(), &[]),
            Some(tcs(&[("member2", 5), ("member3", 7)])),
        ),
        (
            &m,
            vec![12, 8, 10],
            workload(12, aggregated(), &[]),
            Some(tcs(&[("member1", 12)])),
        ),
        (&m, vec![3, 3, 3], workload(12, aggregated(), &[]), None),
        (
            &m[..2],
            vec![3, 3],
            workload(12, dynamic_weight(), &[("member1", 6), ("member3", 6)]),
            Some(tcs(&[("member1", 9), ("member2", 3)])),
        ),
    ];
    for (i, (names, alloc, spec, want)) in cases.into_iter().enumerate() {
        let got = run(names, &alloc, &spec);
        match want {
            Some(w) => assert_eq!(sorted(got.unwrap()), w, "case {i}"),
            None => assert!(
                got.unwrap_err()
                    .to_string()
                    .starts_with("failed to scale up: "),
                "case {i}"
            ),
        }
    }
}

#[test]
fn dynamic_divide_upstream_table() {
    use DynamicStrategy::{Aggregated, DynamicWeight};
    let m = |a, b, c| tcs(&[("member1", a), ("member2", b), ("member3", c)]);
    let cases = [
        (DynamicWeight, m(18, 12, 6), m(6, 4, 2)),
        (DynamicWeight, m(20, 12, 6), m(6, 4, 2)),
        (DynamicWeight, m(6, 12, 6), m(3, 6, 3)),
        (
            Aggregated,
            tcs(&[("member2", 12), ("member1", 6), ("member3", 6)]),
            tcs(&[("member2", 12)]),
        ),
        (
            Aggregated,
            m(6, 6, 6),
            tcs(&[("member1", 6), ("member2", 6)]),
        ),
    ];
    for (i, (s, avail, want)) in cases.into_iter().enumerate() {
        assert_eq!(divide(s, 12, avail, vec![], "").unwrap(), want, "case {i}");
    }
}

#[test]
fn merge_appends_leftovers_in_previous_order() {
    let old = tcs(&[("z", 1), ("a", 2), ("m", 3)]);
    let new = tcs(&[("b", 1), ("m", 1)]);
    assert_eq!(
        merge(old.clone(), new),
        tcs(&[("b", 1), ("m", 4), ("z", 1), ("a", 2)])
    );
    assert_eq!(merge(old.clone(), vec![]), old);
    assert_eq!(merge(vec![], tcs(&[("x", 1)])), tcs(&[("x", 1)]));
}

#[test]
fn sort_by_replicas_desc_is_stable_up_to_twelve() {
    let mut v = tcs(&[("a", 1), ("b", 2), ("c", 1), ("d", 2)]);
    sort_by_replicas_desc(&mut v);
    assert_eq!(v, tcs(&[("b", 2), ("d", 2), ("a", 1), ("c", 1)]));
}

// ---- overflow tiers (upstream TestAssignReplicas) ----

fn overflow_placement(pref: Placement) -> Placement {
    Placement {
        cluster_affinities: Some(vec![ClusterAffinityTerm {
            affinity_name: "primary".into(),
            affinity: ClusterAffinity {
                cluster_names: vec!["a".into()],
                ..Default::default()
            },
            overflow_affinities: Some(vec![OverflowClusterAffinity {
                affinity_name: "burst".into(),
                affinity: ClusterAffinity {
                    cluster_names: vec!["b".into(), "c".into()],
                    ..Default::default()
                },
            }]),
        }]),
        ..pref
    }
}

#[test]
fn overflow_fills_tiers_in_order() {
    let cs = clusters(&["a", "b", "c"]);
    let spec = workload(10, overflow_placement(dynamic_weight()), &[]);
    let status = ResourceBindingStatus {
        scheduler_observed_affinity_name: "primary".into(),
        ..Default::default()
    };
    let mut d = details(&cs, &[4, 3, 6], &spec);
    d[1].overflow_order = 1;
    d[2].overflow_order = 1;
    let got = assign_replicas(&d, &spec, &status).unwrap();
    assert_eq!(got, tcs(&[("a", 4), ("b", 2), ("c", 4)]));
    // Not enough in all tiers together.
    let spec = workload(20, overflow_placement(dynamic_weight()), &[]);
    let d2 = {
        let mut d = details(&cs, &[4, 3, 6], &spec);
        d[1].overflow_order = 1;
        d[2].overflow_order = 1;
        d
    };
    assert_eq!(
        assign_replicas(&d2, &spec, &status).unwrap_err(),
        ScheduleError::Unschedulable(
            "Clusters available replicas are not enough to schedule.".into()
        )
    );
    // Without an observed affinity name there is no overflow: one Webster over all.
    let plain = assign_replicas(
        &d,
        &workload(10, overflow_placement(dynamic_weight()), &[]),
        &ResourceBindingStatus::default(),
    );
    assert_eq!(plain.unwrap(), tcs(&[("a", 3), ("b", 2), ("c", 5)]));
}

#[test]
fn overflow_lower_tier_reclaims_replicas() {
    // a had no room before; now it has 10 available including its own replicas.
    let cs = clusters(&["a", "b"]);
    let spec = workload(6, overflow_placement(aggregated()), &[("a", 2), ("b", 4)]);
    let status = ResourceBindingStatus {
        scheduler_observed_affinity_name: "primary".into(),
        ..Default::default()
    };
    let mut d = details(&cs, &[8, 0], &spec);
    d[1].overflow_order = 1;
    // Tier 0 gets min(6, 10) = 6: scale up from 2 to 6 on a; tier 1 gets nothing.
    assert_eq!(
        assign_replicas(&d, &spec, &status).unwrap(),
        tcs(&[("a", 6)])
    );
}

// ---- empty-workload propagation: upstream Test_attachZeroReplicasCluster ----

#[test]
fn attach_zero_replica_clusters_appends_missing_in_selection_order() {
    let cs = clusters(&["member1", "member2", "member3"]);
    let spec = ResourceBindingSpec::default();
    let d = details(&cs, &[0, 0, 0], &spec);
    let got = attach_zero_replica_clusters(&d, tcs(&[("member2", 1)]));
    assert_eq!(got, tcs(&[("member2", 1), ("member1", 0), ("member3", 0)]));
}

// ---- properties ----

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("c{i:02}")).collect()
}

proptest! {
    #[test]
    fn scheduled_replicas_always_sum_to_spec(
        alloc in proptest::collection::vec(0i32..50, 1..20),
        prev in proptest::collection::vec(0i32..20, 0..20),
        replicas in 0i32..300,
        aggregated_pref in any::<bool>(),
    ) {
        let ns = names(alloc.len());
        let refs: Vec<&str> = ns.iter().map(|s| s.as_str()).collect();
        let previous: Vec<(&str, i32)> = refs.iter().zip(&prev).map(|(n, r)| (*n, *r)).collect();
        let p = if aggregated_pref { aggregated() } else { dynamic_weight() };
        let spec = workload(replicas, p, &previous);
        if let Ok(got) = run(&refs, &alloc, &spec) {
            prop_assert_eq!(got.iter().map(|t| t.replicas).sum::<i32>(), replicas);
            prop_assert!(got.iter().all(|t| t.replicas > 0));
        }
    }

    /// Static weights are a Sainte-Laguë apportionment: replicas sum to the request and
    /// for every pair, `w_i / (2·s_i − 1) ≥ w_j / (2·s_j + 1)` whenever `s_i > 0` (the exact
    /// divisor-method characterization; Webster may leave the quota in rare cases, this never).
    #[test]
    fn static_weights_are_a_webster_apportionment(
        weights in proptest::collection::vec(1i64..20, 1..10),
        replicas in 1i32..500,
    ) {
        let ns = names(weights.len());
        let w: Vec<(&str, i64)> = ns.iter().map(|s| s.as_str()).zip(weights.iter().copied()).collect();
        let refs: Vec<&str> = ns.iter().map(|s| s.as_str()).collect();
        let spec = workload(replicas, static_by_name(&w), &[]);
        let got = run(&refs, &vec![0; refs.len()], &spec).unwrap();
        prop_assert_eq!(got.iter().map(|t| t.replicas).sum::<i32>(), replicas);
        let seats = |n: &str| i64::from(got.iter().find(|t| t.name == n).map_or(0, |t| t.replicas));
        for (ni, wi) in &w {
            let si = seats(ni);
            if si == 0 {
                continue;
            }
            for (nj, wj) in &w {
                let sj = seats(nj);
                prop_assert!(wi * (2 * sj + 1) >= wj * (2 * si - 1), "{} {} vs {} {}", ni, si, nj, sj);
            }
        }
    }

    /// The heap agrees with the rule applied literally: one seat at a time to the highest
    /// `votes / (2·seats + 1)`, ties to fewer seats, then to the name the order prefers;
    /// duplicate names and initial seats with map semantics.
    #[test]
    fn webster_heap_agrees_with_a_linear_scan(
        votes in proptest::collection::vec((0usize..12, 0i64..40), 0..14),
        initial in proptest::collection::vec((0usize..12, 0i32..6), 0..5),
        seats in 0i32..150,
        descending in any::<bool>(),
    ) {
        let ns = names(12);
        let votes: Vec<(String, i64)> = votes.iter().map(|(i, v)| (ns[*i].clone(), *v)).collect();
        let initial: Vec<(String, i32)> =
            initial.iter().map(|(i, s)| (ns[*i].clone(), *s)).collect();
        let order = if descending { webster::NameOrder::Descending } else { webster::NameOrder::Ascending };
        let mut parties: std::collections::BTreeMap<String, (i64, i32)> = Default::default();
        for (n, s) in &initial {
            parties.insert(n.clone(), (0, *s));
        }
        for (n, v) in &votes {
            parties.entry(n.clone()).or_insert((0, 0)).0 = *v;
        }
        let mut list: Vec<(String, i64, i32)> =
            parties.into_iter().map(|(n, (v, s))| (n, v, s)).collect();
        let prio = |v: i64, s: i32| v as f64 / f64::from(2 * s + 1);
        for _ in 0..if list.is_empty() { 0 } else { seats } {
            let mut best = 0;
            for i in 1..list.len() {
                let (a, b) = (&list[i], &list[best]);
                let (pa, pb) = (prio(a.1, a.2), prio(b.1, b.2));
                let better = if pa != pb {
                    pa > pb
                } else if a.2 != b.2 {
                    a.2 < b.2
                } else if descending {
                    a.0 > b.0
                } else {
                    a.0 < b.0
                };
                if better {
                    best = i;
                }
            }
            list[best].2 += 1;
        }
        let got: Vec<(String, i64, i32)> = webster::allocate_webster_seats(seats, &votes, &initial, order)
            .into_iter()
            .map(|p| (p.name, p.votes, p.seats))
            .collect();
        prop_assert_eq!(got, list);
    }

    /// Ordering parties by snapshot position gives what ordering them by name gives,
    /// duplicate parties included (the last vote wins).
    #[test]
    fn webster_by_position_agrees_with_by_name(
        votes in proptest::collection::vec((0usize..12, 0i64..40), 0..20),
        seats in 0i32..150,
        descending in any::<bool>(),
    ) {
        let ns = names(12);
        let weights: Vec<(&str, i64)> = votes.iter().map(|(i, v)| (ns[*i].as_str(), *v)).collect();
        let positions: Vec<usize> = votes.iter().map(|(i, _)| *i).collect();
        let uid = if descending { "11111111-1111-1111-1111-111111111111" } else { "" };
        prop_assert_eq!(
            webster::dispense(seats, &weights, Some(&positions), uid),
            webster::dispense(seats, &weights, None, uid)
        );
    }

    #[test]
    fn webster_is_independent_of_party_order(
        weights in proptest::collection::vec(0i64..30, 1..12),
        seats in 0i32..200,
        rotate in 0usize..12,
        descending in any::<bool>(),
    ) {
        let ns = names(weights.len());
        let votes: Vec<(String, i64)> = ns.iter().cloned().zip(weights.iter().copied()).collect();
        let mut shuffled = votes.clone();
        shuffled.rotate_left(rotate % votes.len());
        shuffled.reverse();
        let order = if descending { webster::NameOrder::Descending } else { webster::NameOrder::Ascending };
        prop_assert_eq!(
            webster::allocate_webster_seats(seats, &votes, &[], order),
            webster::allocate_webster_seats(seats, &shuffled, &[], order)
        );
    }
}

/// Upstream `TestAssignReplicas` (common_test.go), re-expressed; the unsupported-type case
/// cannot be built here (unknown enum values fail decoding in karmada-api).
#[test]
fn assign_replicas_upstream_table() {
    let status = ResourceBindingStatus::default();
    let cs = clusters(&["member1", "member2"]);
    // Single cluster, Weighted without preference: default static weights.
    let spec = ResourceBindingSpec {
        replicas: 3,
        placement: Some(divided(ReplicaDivisionPreference::Weighted, None)),
        ..Default::default()
    };
    let d = details(&cs[..1], &[0], &spec);
    assert_eq!(
        assign_replicas(&d, &spec, &status).unwrap(),
        tcs(&[("member1", 3)])
    );
    // No clusters.
    let spec = ResourceBindingSpec {
        replicas: 1,
        ..Default::default()
    };
    assert_eq!(
        assign_replicas(&[], &spec, &status)
            .unwrap_err()
            .to_string(),
        "no clusters available to schedule"
    );
    // Non-workload.
    let spec = ResourceBindingSpec::default();
    let d = details(&cs, &[0, 0], &spec);
    assert_eq!(
        assign_replicas(&d, &spec, &status).unwrap(),
        tcs(&[("member1", 0), ("member2", 0)])
    );

    // Overflow: member1 primary, member2 overflow.
    let overflow = |replicas: i32, previous: &[(&str, i32)]| {
        let mut p = dynamic_weight();
        p.cluster_affinities = Some(vec![ClusterAffinityTerm {
            affinity_name: "affinity1".into(),
            affinity: ClusterAffinity {
                cluster_names: vec!["member1".into()],
                ..Default::default()
            },
            overflow_affinities: Some(vec![OverflowClusterAffinity {
                affinity_name: "overflow".into(),
                affinity: ClusterAffinity {
                    cluster_names: vec!["member2".into()],
                    ..Default::default()
                },
            }]),
        }]);
        ResourceBindingSpec {
            replicas,
            clusters: tcs(previous),
            placement: Some(p),
            ..Default::default()
        }
    };
    let observed = ResourceBindingStatus {
        scheduler_observed_affinity_name: "affinity1".into(),
        ..Default::default()
    };
    let tiered = |alloc: [i32; 2], avail: [i64; 2]| -> Vec<ClusterDetail<'_>> {
        cs.iter()
            .enumerate()
            .map(|(i, c)| ClusterDetail {
                name: c.name(),
                cluster: c,
                score: 0,
                overflow_order: i as i32,
                allocatable_replicas: alloc[i],
                available_replicas: avail[i],
                position: None,
            })
            .collect()
    };
    let got = assign_replicas(&tiered([10, 10], [10, 10]), &overflow(5, &[]), &observed).unwrap();
    assert_eq!(got, tcs(&[("member1", 5)]));
    let got = assign_replicas(&tiered([2, 10], [2, 10]), &overflow(5, &[]), &observed).unwrap();
    assert_eq!(got, tcs(&[("member1", 2), ("member2", 3)]));
    let err = assign_replicas(&tiered([2, 2], [2, 2]), &overflow(10, &[]), &observed).unwrap_err();
    assert!(
        err.to_string()
            .contains("Clusters available replicas are not enough to schedule")
    );
    // Previously assigned replicas count as available in their tier.
    let got = assign_replicas(
        &tiered([2, 10], [5, 10]),
        &overflow(8, &[("member1", 3)]),
        &observed,
    )
    .unwrap();
    assert_eq!(got, tcs(&[("member1", 5), ("member2", 3)]));
}

/// Upstream `Test_DistributionOfReplicas` (generic_scheduler_test.go): static-weight results
/// across replica and weight changes, exact order (name ascending).
#[test]
fn distribution_of_replicas_upstream_table() {
    let cases: [(i32, &[i64], &[i32]); 13] = [
        (3, &[1, 1], &[2, 1]),
        (3, &[1, 1, 1], &[1, 1, 1]),
        (5, &[1, 1, 1], &[2, 2, 1]),
        (7, &[2, 1, 1, 1], &[3, 2, 1, 1]),
        (8, &[2, 1, 1, 1], &[3, 2, 2, 1]),
        (9, &[2, 1, 1, 1], &[3, 2, 2, 2]),
        (8, &[2, 1, 1, 1], &[3, 2, 2, 1]),
        (6, &[1, 1, 1, 1], &[2, 2, 1, 1]),
        (6, &[2, 1, 1, 1], &[3, 1, 1, 1]),
        (5, &[1, 1, 1], &[2, 2, 1]),
        (5, &[1, 1, 1, 1], &[2, 1, 1, 1]),
        (6, &[1, 1, 1, 1], &[2, 2, 1, 1]),
        (6, &[1, 1, 1], &[2, 2, 2]),
    ];
    let all = ["member1", "member2", "member3", "member4"];
    for (i, (replicas, weights, want)) in cases.into_iter().enumerate() {
        let names = &all[..weights.len()];
        let w: Vec<(&str, i64)> = names.iter().copied().zip(weights.iter().copied()).collect();
        let want: Vec<(&str, i32)> = names.iter().copied().zip(want.iter().copied()).collect();
        let spec = workload(replicas, static_by_name(&w), &[]);
        assert_eq!(
            run(names, &vec![0; names.len()], &spec).unwrap(),
            tcs(&want),
            "case {i}"
        );
    }
}

/// Upstream `TestMergeTargetClusters` (pkg/util/binding_test.go), compared as sets like
/// upstream; our order (new entries, then old leftovers) is asserted elsewhere.
#[test]
fn merge_upstream_table() {
    let cases = [
        (tcs(&[]), tcs(&[]), tcs(&[])),
        (tcs(&[]), tcs(&[("member2", 3)]), tcs(&[("member2", 3)])),
        (tcs(&[("member1", 3)]), tcs(&[]), tcs(&[("member1", 3)])),
        (
            tcs(&[("member1", 2)]),
            tcs(&[("member2", 3)]),
            tcs(&[("member1", 2), ("member2", 3)]),
        ),
        (
            tcs(&[("member1", 2)]),
            tcs(&[("member1", 4), ("member2", 3)]),
            tcs(&[("member1", 6), ("member2", 3)]),
        ),
    ];
    for (i, (old, new, want)) in cases.into_iter().enumerate() {
        assert_eq!(sorted(merge(old, new)), want, "case {i}");
    }
}

/// The dynamic strategies as they were written before the borrowed-name rewrite (on owned
/// `TargetCluster`s, linear searches), kept as the oracle of the property below.
mod reference {
    use std::collections::{BTreeMap, BTreeSet};

    use karmada_api::work::{ResourceBindingSpec, TargetCluster};

    use super::super::dynamic::{DynamicStrategy, Mode, sort_by_replicas_desc};
    use super::super::webster::dispense_by_weight;
    use crate::detail::ClusterDetail;
    use crate::error::ScheduleError;

    fn sum(list: &[TargetCluster]) -> i32 {
        list.iter().fold(0i32, |s, t| s.wrapping_add(t.replicas))
    }

    fn merge(old: Vec<TargetCluster>, mut new: Vec<TargetCluster>) -> Vec<TargetCluster> {
        if old.is_empty() {
            return new;
        }
        if new.is_empty() {
            return old;
        }
        let mut remaining: BTreeMap<&str, i32> = BTreeMap::new();
        for t in &old {
            remaining.insert(&t.name, t.replicas);
        }
        for e in &mut new {
            if let Some(v) = remaining.remove(e.name.as_str()) {
                e.replicas = e.replicas.wrapping_add(v);
            }
        }
        for t in &old {
            if let Some(v) = remaining.remove(t.name.as_str()) {
                new.push(TargetCluster::new(t.name.clone(), v));
            }
        }
        new
    }

    fn divide(
        strategy: DynamicStrategy,
        target: i32,
        mut avail: Vec<TargetCluster>,
        prior: Vec<TargetCluster>,
        uid: &str,
    ) -> Result<Vec<TargetCluster>, ScheduleError> {
        let total = sum(&avail);
        if total < target {
            return Err(ScheduleError::Unschedulable(format!(
                "Clusters available replicas {total} are not enough to schedule."
            )));
        }
        if strategy == DynamicStrategy::Aggregated {
            let held: BTreeSet<&str> = prior
                .iter()
                .filter(|t| t.replicas > 0)
                .map(|t| t.name.as_str())
                .collect();
            if !held.is_empty() {
                let (mut first, rest): (Vec<_>, Vec<_>) = avail
                    .into_iter()
                    .partition(|t| held.contains(t.name.as_str()));
                first.extend(rest);
                avail = first;
            }
            let mut running = 0i32;
            if let Some(i) = avail.iter().position(|t| {
                running = running.wrapping_add(t.replicas);
                running >= target
            }) {
                avail.truncate(i + 1);
            }
        }
        let weights: Vec<(String, i64)> = avail
            .iter()
            .map(|t| (t.name.to_string(), i64::from(t.replicas)))
            .collect();
        let fresh = dispense_by_weight(target, &[], &weights, uid);
        Ok(merge(prior, fresh))
    }

    pub fn assign_dynamic(
        cands: &[ClusterDetail<'_>],
        spec: &ResourceBindingSpec,
        strategy: DynamicStrategy,
        mode: Mode,
    ) -> Result<Vec<TargetCluster>, ScheduleError> {
        let names: BTreeSet<&str> = cands.iter().map(|c| c.name).collect();
        let scheduled: Vec<TargetCluster> = spec
            .clusters
            .iter()
            .filter(|t| names.contains(t.name.as_str()))
            .cloned()
            .collect();
        let assigned = sum(&scheduled);
        let uid = spec.resource.uid.as_str();
        let allocatable = || -> Vec<TargetCluster> {
            cands
                .iter()
                .map(|c| TargetCluster::new(c.name, c.allocatable_replicas))
                .collect()
        };
        if mode == Mode::Fresh {
            let mut avail = allocatable();
            for s in &scheduled {
                if let Some(a) = avail.iter_mut().find(|a| a.name == s.name) {
                    a.replicas = a.replicas.wrapping_add(s.replicas);
                }
            }
            sort_by_replicas_desc(&mut avail);
            return divide(strategy, spec.replicas, avail, Vec::new(), uid)
                .map_err(|e| e.wrap("failed to do fresh scale"));
        }
        if assigned > spec.replicas {
            let mut avail = scheduled;
            sort_by_replicas_desc(&mut avail);
            return divide(strategy, spec.replicas, avail, Vec::new(), uid)
                .map_err(|e| e.wrap("failed to scale down"));
        }
        if assigned < spec.replicas {
            let mut avail = allocatable();
            sort_by_replicas_desc(&mut avail);
            return divide(
                strategy,
                spec.replicas.wrapping_sub(assigned),
                avail,
                scheduled,
                uid,
            )
            .map_err(|e| e.wrap("failed to scale up"));
        }
        Ok(scheduled)
    }
}

proptest! {
    /// The dynamic strategies give exactly what the owned-name version gave, entry for
    /// entry and in order (zero entries included), over enough candidates for Go's pdqsort.
    #[test]
    fn dynamic_matches_the_owned_name_version(
        alloc in proptest::collection::vec(0i32..12, 1..40),
        prev in proptest::collection::vec((0usize..45, 0i32..9), 0..12),
        replicas in 0i32..200,
        aggregated_pref in any::<bool>(),
        fresh in any::<bool>(),
        uid in prop_oneof![Just(""), Just("11111111-1111-1111-1111-111111111111"), Just("7c5f1a6e-2d3b-4c8e-9f10-1a2b3c4d5e6f")],
        positioned in any::<bool>(),
    ) {
        let ns = names(45);
        let refs: Vec<&str> = ns[..alloc.len()].iter().map(|s| s.as_str()).collect();
        let previous: Vec<(&str, i32)> = prev.iter().map(|(i, r)| (ns[*i].as_str(), *r)).collect();
        let (p, strategy) = if aggregated_pref {
            (aggregated(), DynamicStrategy::Aggregated)
        } else {
            (dynamic_weight(), DynamicStrategy::DynamicWeight)
        };
        let mut spec = workload(replicas, p, &previous);
        spec.resource.uid = uid.to_string();
        let mode = if fresh { dynamic::Mode::Fresh } else { dynamic::Mode::Steady };
        let cs = clusters(&refs);
        let mut d = details(&cs, &alloc, &spec);
        if positioned {
            // As in the pipeline: positions of a name-sorted snapshot.
            for (i, c) in d.iter_mut().enumerate() {
                c.position = Some(i);
            }
        }
        let want = reference::assign_dynamic(&d, &spec, strategy, mode);
        let got = dynamic::assign_dynamic(&d, &spec, strategy, mode);
        prop_assert_eq!(&got, &want);
        let nonzero = dynamic::assign_dynamic_nonzero(&d, &spec, strategy, mode);
        prop_assert_eq!(nonzero, want.map(remove_zero_replicas));
    }
}
