//! Properties of the whole pipeline on random clusters and placements:
//! - no cluster outside the placement's affinity is ever chosen;
//! - the decision does not depend on the order the clusters come in.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use karmada_api::cluster::{
    ApiEnablement, ApiResource, Cluster, ClusterSpec, ClusterStatus, ResourceSummary,
};
use karmada_api::policy::{
    ClusterAffinity, ClusterPreferences, DynamicWeightFactor, Placement, ReplicaDivisionPreference,
    ReplicaSchedulingStrategy, ReplicaSchedulingType, SpreadConstraint, SpreadFieldValue,
    StaticClusterWeight,
};
use karmada_api::work::{
    ObjectReference, ResourceBindingSpec, ResourceBindingStatus, TargetCluster,
};
use proptest::prelude::*;
use scheduler_core::detail::ClusterDetail;
use scheduler_core::features::FeatureGates;
use scheduler_core::general::GeneralEstimator;
use scheduler_core::schedule::{BindingInput, Decision, Outcome, ScheduleConfig, Scheduler};
use scheduler_core::selector::cluster_matches;
use scheduler_core::snapshot::Snapshot;
use scheduler_core::spread;

fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

const NAMES: [&str; 8] = ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"];

#[derive(Clone, Debug)]
struct ClusterGen {
    env: bool,
    region: u8,
    pods: u32,
}

fn cluster(i: usize, g: &ClusterGen) -> Cluster {
    let mut c = Cluster::new(NAMES[i], ClusterSpec::default());
    c.metadata.labels = Some(
        [("env".to_string(), if g.env { "a" } else { "b" }.to_string())]
            .into_iter()
            .collect(),
    );
    c.spec.region = match g.region {
        0 => String::new(),
        r => format!("r{r}"),
    };
    let allocatable: BTreeMap<String, Quantity> =
        [("pods".to_string(), Quantity(g.pods.to_string()))]
            .into_iter()
            .collect();
    c.status = Some(ClusterStatus {
        api_enablements: vec![ApiEnablement {
            group_version: "apps/v1".into(),
            resources: vec![ApiResource {
                name: "deployments".into(),
                kind: "Deployment".into(),
            }],
        }],
        resource_summary: Some(ResourceSummary {
            allocatable,
            ..Default::default()
        }),
        ..Default::default()
    });
    c
}

fn clusters_strategy() -> impl Strategy<Value = Vec<ClusterGen>> {
    prop::collection::vec(
        (any::<bool>(), 0u8..3, 0u32..40).prop_map(|(env, region, pods)| ClusterGen {
            env,
            region,
            pods,
        }),
        1..=NAMES.len(),
    )
}

fn affinity_strategy() -> impl Strategy<Value = ClusterAffinity> {
    (
        prop::collection::vec(0usize..8, 0..5),
        prop::collection::vec(0usize..8, 0..3),
        any::<bool>(),
    )
        .prop_map(|(names, exclude, by_label)| ClusterAffinity {
            cluster_names: names.into_iter().map(|i| NAMES[i].to_string()).collect(),
            exclude_clusters: exclude.into_iter().map(|i| NAMES[i].to_string()).collect(),
            label_selector: by_label.then(|| LabelSelector {
                match_labels: Some([("env".to_string(), "a".to_string())].into_iter().collect()),
                match_expressions: None,
            }),
            ..Default::default()
        })
}

fn strategy_strategy() -> impl Strategy<Value = ReplicaSchedulingStrategy> {
    let divided = |pref, wp| ReplicaSchedulingStrategy {
        replica_scheduling_type: Some(ReplicaSchedulingType::Divided),
        replica_division_preference: Some(pref),
        weight_preference: wp,
    };
    prop_oneof![
        Just(ReplicaSchedulingStrategy {
            replica_scheduling_type: Some(ReplicaSchedulingType::Duplicated),
            ..Default::default()
        }),
        Just(divided(ReplicaDivisionPreference::Aggregated, None)),
        Just(divided(
            ReplicaDivisionPreference::Weighted,
            Some(ClusterPreferences {
                static_weight_list: vec![],
                dynamic_weight: Some(DynamicWeightFactor::AvailableReplicas)
            })
        )),
        prop::collection::vec((0usize..8, 0i64..4), 0..4).prop_map(move |w| divided(
            ReplicaDivisionPreference::Weighted,
            Some(ClusterPreferences {
                static_weight_list: w
                    .into_iter()
                    .map(|(i, weight)| StaticClusterWeight {
                        target_cluster: ClusterAffinity {
                            cluster_names: vec![NAMES[i].to_string()],
                            ..Default::default()
                        },
                        weight,
                    })
                    .collect(),
                dynamic_weight: None,
            })
        )),
    ]
}

fn spread_strategy() -> impl Strategy<Value = Vec<SpreadConstraint>> {
    let sc = |field, min, max| SpreadConstraint {
        spread_by_field: Some(field),
        min_groups: min,
        max_groups: max,
        ..Default::default()
    };
    prop_oneof![
        Just(vec![]),
        (1i64..3, 0i64..4).prop_map(move |(min, extra)| vec![sc(
            SpreadFieldValue::Cluster,
            min,
            min + extra
        )]),
        (1i64..3, 1i64..3, 0i64..3).prop_map(move |(rmin, cmin, extra)| vec![
            sc(SpreadFieldValue::Region, rmin, rmin + 1),
            sc(SpreadFieldValue::Cluster, cmin, cmin + extra)
        ]),
    ]
}

fn binding(
    affinity: ClusterAffinity,
    strategy: ReplicaSchedulingStrategy,
    spread_constraints: Vec<SpreadConstraint>,
    replicas: i32,
    previous: Vec<(usize, i32)>,
) -> ResourceBindingSpec {
    ResourceBindingSpec {
        resource: ObjectReference {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: "ns".into(),
            name: "web".into(),
            ..Default::default()
        },
        replicas,
        clusters: previous
            .into_iter()
            .map(|(i, r)| TargetCluster::new(NAMES[i], r))
            .collect(),
        placement: Some(Placement {
            cluster_affinity: Some(affinity),
            spread_constraints,
            replica_scheduling: Some(strategy),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn scheduler() -> Scheduler {
    let gates = FeatureGates::new();
    Scheduler::from_plugins_flag(
        &["*"],
        ScheduleConfig {
            gates: gates.clone(),
            ..Default::default()
        },
    )
    .unwrap()
    .with_estimator(Arc::new(GeneralEstimator::new(
        gates.customized_cluster_resource_modeling(),
    )))
}

fn schedule(s: &Scheduler, clusters: Vec<Cluster>, spec: &ResourceBindingSpec) -> Outcome {
    let snapshot = Snapshot::from_clusters(clusters);
    let status = ResourceBindingStatus::default();
    block_on(s.schedule_binding(
        BindingInput {
            snapshot: &snapshot,
            spec,
            status: &status,
            workload_index: None,
            assumed: None,
        },
        false,
    ))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn never_outside_the_affinity(
        gens in clusters_strategy(),
        affinity in affinity_strategy(),
        strategy in strategy_strategy(),
        spread_constraints in spread_strategy(),
        replicas in 0i32..30,
        previous in prop::collection::vec((0usize..8, 0i32..10), 0..4),
    ) {
        let clusters: Vec<Cluster> = gens.iter().enumerate().map(|(i, g)| cluster(i, g)).collect();
        let spec = binding(affinity.clone(), strategy, spread_constraints, replicas, previous);
        let outcome = schedule(&scheduler(), clusters.clone(), &spec);
        if let Ok(Decision::Scheduled(targets)) = &outcome.result {
            for t in targets {
                let c = clusters.iter().find(|c| c.name() == t.name);
                prop_assert!(c.is_some(), "{} is not a cluster", t.name);
                prop_assert!(cluster_matches(c.unwrap(), &affinity), "{} is outside the affinity", t.name);
            }
        }
    }

    #[test]
    fn independent_of_cluster_order(
        gens in clusters_strategy(),
        affinity in affinity_strategy(),
        strategy in strategy_strategy(),
        spread_constraints in spread_strategy(),
        replicas in 0i32..30,
        previous in prop::collection::vec((0usize..8, 0i32..10), 0..4),
        seed in any::<u64>(),
    ) {
        let clusters: Vec<Cluster> = gens.iter().enumerate().map(|(i, g)| cluster(i, g)).collect();
        let spec = binding(affinity, strategy, spread_constraints, replicas, previous);
        let s = scheduler();
        let base = schedule(&s, clusters.clone(), &spec);
        let mut shuffled = clusters.clone();
        shuffle(&mut shuffled, seed);
        let other = schedule(&s, shuffled, &spec);
        prop_assert_eq!(format!("{:?}", base.result), format!("{:?}", other.result));
    }

    /// The canonical order and the groups do not depend on the order details come in.
    #[test]
    fn grouping_independent_of_order(
        gens in clusters_strategy(),
        scores in prop::collection::vec(0i64..3, 8),
        avail in prop::collection::vec(0i64..5, 8),
        seed in any::<u64>(),
    ) {
        let clusters: Vec<Cluster> = gens.iter().enumerate().map(|(i, g)| cluster(i, g)).collect();
        let details: Vec<ClusterDetail<'_>> = clusters.iter().enumerate().map(|(i, c)| ClusterDetail {
            name: c.name(),
            cluster: c,
            score: scores[i] * 50,
            overflow_order: 0,
            allocatable_replicas: avail[i] as i32,
            available_replicas: avail[i],
            position: None,
        }).collect();
        let spec = binding(
            ClusterAffinity::default(),
            ReplicaSchedulingStrategy { replica_scheduling_type: Some(ReplicaSchedulingType::Divided), replica_division_preference: Some(ReplicaDivisionPreference::Aggregated), weight_preference: None },
            vec![
                SpreadConstraint { spread_by_field: Some(SpreadFieldValue::Region), min_groups: 1, max_groups: 2, ..Default::default() },
                SpreadConstraint { spread_by_field: Some(SpreadFieldValue::Cluster), min_groups: 1, max_groups: 3, ..Default::default() },
            ],
            7,
            vec![],
        );
        let mut shuffled = details.clone();
        shuffle(&mut shuffled, seed);
        // The details are in name order, as the pipeline hands them over, with or without
        // their snapshot positions.
        let sorted = spread::group_clusters_name_sorted(details.clone(), &spec);
        let mut positioned = details.clone();
        for (i, d) in positioned.iter_mut().enumerate() {
            d.position = Some(i);
        }
        shuffle(&mut positioned, seed);
        let by_position = spread::group_clusters(positioned, &spec);
        let a = spread::group_clusters(details, &spec);
        let b = spread::group_clusters(shuffled, &spec);
        let names = |i: &spread::GroupClustersInfo<'_>| i.clusters.iter().map(|c| c.name.to_string()).collect::<Vec<_>>();
        prop_assert_eq!(names(&a), names(&b));
        prop_assert_eq!(names(&a), names(&sorted));
        prop_assert_eq!(names(&a), names(&by_position));
        let groups = |i: &spread::GroupClustersInfo<'_>| i.regions.values().map(|g| (g.name.clone(), g.score, g.clusters.iter().map(|c| c.name.to_string()).collect::<Vec<_>>())).collect::<Vec<_>>();
        prop_assert_eq!(groups(&a), groups(&b));
        prop_assert_eq!(groups(&a), groups(&sorted));
        prop_assert_eq!(groups(&a), groups(&by_position));
        let placement = spec.placement.as_ref().unwrap();
        let sa = spread::select_best_clusters(placement, &a, 7).map(|s| s.clusters.iter().map(|c| c.name.to_string()).collect::<Vec<_>>());
        let sb = spread::select_best_clusters(placement, &b, 7).map(|s| s.clusters.iter().map(|c| c.name.to_string()).collect::<Vec<_>>());
        prop_assert_eq!(sa, sb);
    }
}

/// A deterministic Fisher-Yates shuffle (xorshift), so that failures reproduce from the seed.
fn shuffle<T>(v: &mut [T], mut seed: u64) {
    seed |= 1;
    for i in (1..v.len()).rev() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let j = (seed % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
}

/// Variations the prepared filter answers depend on: taints, deletion, served APIs.
#[derive(Clone, Debug)]
struct Extra {
    taint: u8,
    deleting: bool,
    api: u8,
}

fn extras_strategy() -> impl Strategy<Value = Vec<Extra>> {
    prop::collection::vec(
        (0u8..5, prop::bool::weighted(0.15), 0u8..4).prop_map(|(taint, deleting, api)| Extra {
            taint,
            deleting,
            api,
        }),
        NAMES.len(),
    )
}

fn with_extra(mut c: Cluster, e: &Extra) -> Cluster {
    use k8s_openapi::api::core::v1::Taint;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    let effect = match e.taint {
        1 => Some("NoSchedule"),
        2 => Some("NoExecute"),
        3 => Some("PreferNoSchedule"),
        _ => None,
    };
    if let Some(effect) = effect {
        c.spec.taints = vec![Taint {
            key: "dedicated".into(),
            value: Some("x".into()),
            effect: effect.into(),
            time_added: None,
        }];
    }
    if e.deleting {
        c.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    }
    let status = c.status.as_mut().unwrap();
    match e.api {
        1 => status.api_enablements[0].group_version = "apps/v1beta1".into(),
        2 => status.api_enablements[0].resources[0].kind = "StatefulSet".into(),
        3 => status.api_enablements.clear(),
        _ => {}
    }
    c
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Filters answering from the prepared sets decide exactly as filters reading every
    /// cluster: same result, same trace, on a fresh snapshot and on one scheduled before.
    #[test]
    fn prepared_filters_change_nothing(
        gens in clusters_strategy(),
        extras in extras_strategy(),
        affinity in affinity_strategy(),
        strategy in strategy_strategy(),
        spread_constraints in spread_strategy(),
        replicas in 0i32..30,
        previous in prop::collection::vec((0usize..8, 0i32..10), 0..4),
        tolerate in any::<bool>(),
        statefulset in prop::bool::weighted(0.2),
        label_weights in prop::option::weighted(0.4, (0i64..4, 0i64..4)),
    ) {
        use k8s_openapi::api::core::v1::{NodeSelectorRequirement, Toleration};
        let clusters: Vec<Cluster> = gens
            .iter()
            .enumerate()
            .map(|(i, g)| with_extra(cluster(i, g), &extras[i]))
            .collect();
        // Static weights by label and by field, answered from the snapshot's sets.
        let strategy = match label_weights {
            None => strategy,
            Some((by_label, by_region)) => ReplicaSchedulingStrategy {
                replica_scheduling_type: Some(ReplicaSchedulingType::Divided),
                replica_division_preference: Some(ReplicaDivisionPreference::Weighted),
                weight_preference: Some(ClusterPreferences {
                    static_weight_list: vec![
                        StaticClusterWeight {
                            target_cluster: ClusterAffinity {
                                label_selector: Some(LabelSelector {
                                    match_labels: Some([("env".to_string(), "a".to_string())].into()),
                                    match_expressions: None,
                                }),
                                ..Default::default()
                            },
                            weight: by_label,
                        },
                        StaticClusterWeight {
                            target_cluster: ClusterAffinity {
                                field_selector: Some(karmada_api::policy::FieldSelector {
                                    match_expressions: vec![NodeSelectorRequirement {
                                        key: "region".into(),
                                        operator: "In".into(),
                                        values: Some(vec!["r1".into()]),
                                    }],
                                }),
                                ..Default::default()
                            },
                            weight: by_region,
                        },
                    ],
                    dynamic_weight: None,
                }),
            },
        };
        let mut spec = binding(affinity, strategy, spread_constraints, replicas, previous);
        if statefulset {
            spec.resource.kind = "StatefulSet".into();
        }
        if tolerate {
            spec.placement.as_mut().unwrap().cluster_tolerations = vec![Toleration {
                key: Some("dedicated".into()),
                operator: Some("Exists".into()),
                effect: Some("NoSchedule".into()),
                ..Default::default()
            }];
        }
        let snapshot = Snapshot::from_clusters(clusters);
        let status = ResourceBindingStatus::default();
        let run = |s: &Scheduler| {
            let o = block_on(s.schedule_binding(
                BindingInput { snapshot: &snapshot, spec: &spec, status: &status, workload_index: None, assumed: None },
                true,
            ));
            format!("{:?} {:?}", o.result, o.trace)
        };
        let direct = run(&scheduler().with_prepared_filters(false));
        let prepared = scheduler();
        prop_assert_eq!(&run(&prepared), &direct);
        prop_assert_eq!(&run(&prepared), &direct);
    }
}
