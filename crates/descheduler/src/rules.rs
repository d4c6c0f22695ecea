//! The descheduling rules of Karmada v1.18.2, as pure functions of a binding and the
//! estimators' answers (no I/O: the controller feeds them and writes what they decide).
//!
//! 1. [`is_candidate`]: only Deployment bindings whose applied placement divides replicas
//!    dynamically (weighted by a dynamic factor, or aggregated) are looked at.
//! 2. [`replica_status`]: per target cluster, the replicas assigned (`spec.clusters`) and the
//!    replicas ready there (`readyReplicas` of the cluster's `status.aggregatedStatus` entry;
//!    [`UNKNOWN`] when the cluster reports none).
//! 3. [`undesired`]: the clusters with fewer ready replicas than assigned are the ones the
//!    estimators are asked about.
//! 4. [`merge_answers`]: each estimator's answer lowers a cluster's unschedulable count to the
//!    smallest one given; an estimator that failed is ignored entirely, and a cluster nobody
//!    answered for keeps 0.
//! 5. [`plan`]: each cluster loses its unschedulable replicas, but never below what is ready
//!    there; the new `spec.clusters` and the event message say how many left which cluster.

use std::collections::HashMap;

use karmada_api::policy::APPLIED_PLACEMENT_ANNOTATION;
use karmada_api::work::{ResourceBinding, TargetCluster};
use serde_json::Value;

/// The estimators' "no answer" and the ready count of a cluster that reports none.
pub const UNKNOWN: i32 = -1;

/// The only workload kind the reference deschedules.
pub const SUPPORTED_KINDS: &[(&str, &str)] = &[("apps/v1", "Deployment")];

/// One target cluster of a binding, as the rules see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterReplicaStatus {
    pub cluster: String,
    /// Replicas assigned in `spec.clusters`.
    pub spec: i32,
    /// Ready replicas reported, or [`UNKNOWN`].
    pub ready: i32,
    /// Replicas the estimators say cannot be scheduled (filled by [`merge_answers`]).
    pub unschedulable: i32,
}

/// Why a binding is not looked at (for logs; the reference only logs placement errors).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Skip {
    /// Not a supported workload kind.
    Kind,
    /// No applied placement annotation.
    NoPlacement,
    /// The applied placement annotation is not a placement.
    BadPlacement(String),
    /// Replicas are not divided dynamically.
    StaticDivision,
}

/// Whether the reference's descheduler considers this binding at all.
pub fn is_candidate(rb: &ResourceBinding) -> Result<(), Skip> {
    if !is_supported_kind(rb) {
        return Err(Skip::Kind);
    }
    let annotation = rb
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(APPLIED_PLACEMENT_ANNOTATION))
        .filter(|v| !v.is_empty());
    let Some(text) = annotation else {
        return Err(Skip::NoPlacement);
    };
    if divides_dynamically(text).map_err(Skip::BadPlacement)? {
        Ok(())
    } else {
        Err(Skip::StaticDivision)
    }
}

/// Whether the binding's workload is of a kind the descheduler handles at all.
pub fn is_supported_kind(rb: &ResourceBinding) -> bool {
    let r = &rb.spec.resource;
    SUPPORTED_KINDS
        .iter()
        .any(|(v, k)| *v == r.api_version && *k == r.kind)
}

/// The reference's `IsReplicaDynamicDivided` of an applied-placement annotation: `Divided`
/// replicas with the `Aggregated` preference, or `Weighted` with any dynamic weight factor.
/// The annotation is read leniently, as Go's decoder reads it into typed fields: a factor this
/// version does not know still counts, a field of the wrong JSON type is an error.
pub fn divides_dynamically(annotation: &str) -> Result<bool, String> {
    let placement: Value = serde_json::from_str(annotation).map_err(|e| e.to_string())?;
    let Some(placement) = placement.as_object() else {
        return Err("the applied placement is not a JSON object".into());
    };
    let strategy = match placement.get("replicaScheduling") {
        None | Some(Value::Null) => return Ok(false),
        Some(Value::Object(s)) => s,
        Some(_) => return Err("replicaScheduling is not an object".into()),
    };
    let text = |v: Option<&Value>, field: &str| -> Result<String, String> {
        match v {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(format!("{field} is not a string")),
        }
    };
    if text(
        strategy.get("replicaSchedulingType"),
        "replicaSchedulingType",
    )? != "Divided"
    {
        return Ok(false);
    }
    let preference = text(
        strategy.get("replicaDivisionPreference"),
        "replicaDivisionPreference",
    )?;
    match preference.as_str() {
        "Aggregated" => Ok(true),
        "Weighted" => match strategy.get("weightPreference") {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Object(w)) => {
                Ok(!text(w.get("dynamicWeight"), "weightPreference.dynamicWeight")?.is_empty())
            }
            Some(_) => Err("weightPreference is not an object".into()),
        },
        _ => Ok(false),
    }
}

/// `readyReplicas` per cluster from `status.aggregatedStatus`. Entries without a status, or
/// whose status has no numeric `readyReplicas`, say nothing (the reference crashes on a
/// non-numeric one; here it is skipped and reported in the second list).
pub fn ready_replicas(rb: &ResourceBinding) -> (HashMap<String, i32>, Vec<String>) {
    let mut ready = HashMap::new();
    let mut problems = Vec::new();
    for item in &rb.status.aggregated_status {
        let Some(status) = item.status.as_ref() else {
            continue;
        };
        // Only `readyReplicas` is decoded; the rest of a member's status, however deep, is
        // scanned past.
        if !status.as_str().trim_start().starts_with('{') {
            problems.push(format!(
                "status.aggregatedStatus[cluster {}].status is not an object",
                item.cluster_name
            ));
            continue;
        }
        match status.field("readyReplicas") {
            Ok(None) => {}
            Ok(Some(Value::Number(n))) => {
                // Go reads JSON numbers as float64 and converts with int32(...).
                let v = n.as_f64().unwrap_or_default();
                ready.insert(item.cluster_name.clone(), v as i32);
            }
            Ok(Some(other)) => problems.push(format!(
                "status.aggregatedStatus[cluster {}].status.readyReplicas is {}, not a number",
                item.cluster_name,
                karmada_api::excerpt(&other.to_string(), 64)
            )),
            Err(e) => problems.push(format!(
                "status.aggregatedStatus[cluster {}].status.readyReplicas cannot be read: {e}",
                item.cluster_name
            )),
        }
    }
    (ready, problems)
}

/// The replica status of every `spec.clusters` entry, in that order.
pub fn replica_status(
    rb: &ResourceBinding,
    ready: &HashMap<String, i32>,
) -> Vec<ClusterReplicaStatus> {
    rb.spec
        .clusters
        .iter()
        .map(|c| ClusterReplicaStatus {
            cluster: c.name.to_string(),
            spec: c.replicas,
            ready: ready.get(c.name.as_str()).copied().unwrap_or(UNKNOWN),
            unschedulable: 0,
        })
        .collect()
}

/// Indices of the clusters with fewer ready replicas than assigned.
pub fn undesired(statuses: &[ClusterReplicaStatus]) -> Vec<usize> {
    statuses
        .iter()
        .enumerate()
        .filter(|(_, s)| s.ready < s.spec)
        .map(|(i, _)| i)
        .collect()
}

/// Fill `unschedulable` of the undesired clusters from the estimators' answers: `answers` has
/// one entry per estimator, `None` when it failed, else one `(cluster, replicas)` per undesired
/// cluster in the order of `undesired`. The smallest answer wins; [`UNKNOWN`] answers and
/// answers for another cluster than the one at their position are ignored; a cluster no
/// estimator answered for gets 0.
pub fn merge_answers(
    statuses: &mut [ClusterReplicaStatus],
    undesired: &[usize],
    answers: &[Option<Vec<(String, i32)>>],
) {
    let mut lowest: Vec<Option<i32>> = vec![None; undesired.len()];
    for answer in answers.iter().flatten() {
        for (pos, (cluster, replicas)) in answer.iter().enumerate() {
            let Some(&index) = undesired.get(pos) else {
                continue;
            };
            if *replicas == UNKNOWN || statuses[index].cluster != *cluster {
                continue;
            }
            let slot = &mut lowest[pos];
            if slot.is_none_or(|l| *replicas < l) {
                *slot = Some(*replicas);
            }
        }
    }
    for (pos, &index) in undesired.iter().enumerate() {
        statuses[index].unschedulable = lowest[pos].unwrap_or(0);
    }
}

/// What the descheduler writes for one binding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deschedule {
    /// The new `spec.clusters` (same clusters, same order; some with fewer replicas).
    pub clusters: Vec<TargetCluster>,
    /// Replicas taken away in all.
    pub total: i32,
    /// The `DescheduleBindingSucceed` message.
    pub message: String,
}

/// The prefix of the success message.
pub const SUCCESS_MESSAGE: &str = "Binding has been descheduled";

/// The new assignment: a cluster with `unschedulable` replicas, no more than it was assigned,
/// keeps the rest, but never fewer than are ready there (when no more are ready than
/// assigned). `None` when nothing changes.
pub fn plan(clusters: &[TargetCluster], statuses: &[ClusterReplicaStatus]) -> Option<Deschedule> {
    let mut out = clusters.to_vec();
    let mut total = 0;
    let mut message = String::from(SUCCESS_MESSAGE);
    for (i, s) in statuses.iter().enumerate() {
        if s.unschedulable > 0 && s.spec >= s.unschedulable {
            let mut target = s.spec - s.unschedulable;
            if target < s.ready && s.ready <= s.spec {
                target = s.ready;
            }
            if let Some(c) = out.get_mut(i) {
                c.replicas = target;
            }
            let gone = s.spec - target;
            // int32 in the reference, which wraps: replicas near int32's limit on several
            // clusters sum past it there too (found by fuzzing; a panic here before).
            total = i32::wrapping_add(total, gone);
            message.push_str(&format!(", {gone} replica(s) in cluster({})", s.cluster));
        }
    }
    if total == 0 {
        return None;
    }
    message.push_str(&format!(", {total} total descheduled replica(s)"));
    Some(Deschedule {
        clusters: out,
        total,
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn binding(kind: (&str, &str), placement: Option<&str>) -> ResourceBinding {
        let mut annotations = serde_json::Map::new();
        if let Some(p) = placement {
            annotations.insert(APPLIED_PLACEMENT_ANNOTATION.into(), p.into());
        }
        serde_json::from_value(json!({
            "metadata": {"name": "b", "namespace": "ns", "annotations": annotations},
            "spec": {"resource": {"apiVersion": kind.0, "kind": kind.1, "namespace": "ns", "name": "d"}}
        }))
        .unwrap()
    }

    const AGGREGATED: &str = r#"{"replicaScheduling":{"replicaSchedulingType":"Divided","replicaDivisionPreference":"Aggregated"}}"#;
    const DYNAMIC: &str = r#"{"replicaScheduling":{"replicaSchedulingType":"Divided","replicaDivisionPreference":"Weighted","weightPreference":{"dynamicWeight":"AvailableReplicas"}}}"#;

    #[test]
    fn only_deployments_of_apps_v1_are_candidates() {
        let ok = |v, k| is_candidate(&binding((v, k), Some(AGGREGATED))).is_ok();
        assert!(ok("apps/v1", "Deployment"));
        for (v, k) in [
            ("v1", "Pod"),
            ("custom.example.com/v1", "MyCustomResource"),
            ("apps/v2", "Deployment"),
            ("", "Deployment"),
            ("apps/v1", ""),
            ("apps/v1", "deployment"),
        ] {
            assert!(!ok(v, k), "{v} {k}");
        }
    }

    #[test]
    fn only_dynamic_division_is_a_candidate() {
        let dep = ("apps/v1", "Deployment");
        assert_eq!(is_candidate(&binding(dep, None)), Err(Skip::NoPlacement));
        assert_eq!(
            is_candidate(&binding(dep, Some(""))),
            Err(Skip::NoPlacement)
        );
        assert_eq!(is_candidate(&binding(dep, Some(AGGREGATED))), Ok(()));
        assert_eq!(is_candidate(&binding(dep, Some(DYNAMIC))), Ok(()));
        for placement in [
            r#"{"replicaScheduling":{"replicaSchedulingType":"Duplicated"}}"#,
            r#"{"replicaScheduling":{"replicaSchedulingType":"Divided","replicaDivisionPreference":"Weighted","weightPreference":{}}}"#,
            r#"{"replicaScheduling":{"replicaSchedulingType":"Divided","replicaDivisionPreference":"Weighted"}}"#,
            r#"{"replicaScheduling":{"replicaSchedulingType":"Divided"}}"#,
            r#"{"invalidField":"value"}"#,
            r#"{"clusterAffinity":{"clusterNames":["m1"]}}"#,
        ] {
            assert_eq!(
                is_candidate(&binding(dep, Some(placement))),
                Err(Skip::StaticDivision),
                "{placement}"
            );
        }
        // A factor this version does not know still divides dynamically, as in Go.
        assert!(divides_dynamically(r#"{"replicaScheduling":{"replicaSchedulingType":"Divided","replicaDivisionPreference":"Weighted","weightPreference":{"dynamicWeight":"Future"}}}"#).unwrap());
        assert!(matches!(
            is_candidate(&binding(dep, Some("invalid json"))),
            Err(Skip::BadPlacement(_))
        ));
        assert!(
            divides_dynamically(r#"{"replicaScheduling":{"replicaSchedulingType":7}}"#).is_err()
        );
    }

    fn with_status(clusters: &[(&str, i32)], status: &[(&str, Value)]) -> ResourceBinding {
        let mut rb = binding(("apps/v1", "Deployment"), Some(AGGREGATED));
        rb.spec.clusters = clusters
            .iter()
            .map(|(n, r)| TargetCluster::new(*n, *r))
            .collect();
        rb.status.aggregated_status = status
            .iter()
            .map(|(n, s)| serde_json::from_value(json!({"clusterName": n, "status": s})).unwrap())
            .collect();
        rb
    }

    /// A member status nested 10,000 levels deep still gives its `readyReplicas`, as Go's
    /// typed decode does; a huge non-numeric value is reported in a short excerpt.
    #[test]
    fn ready_replicas_of_a_deeply_nested_status() {
        let deep = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
        let text = format!(
            r#"{{"metadata":{{"name":"a","namespace":"n"}},"spec":{{"resource":{{"apiVersion":"apps/v1","kind":"Deployment","name":"a"}}}},"status":{{"aggregatedStatus":[{{"clusterName":"m1","status":{{"deep":{deep},"readyReplicas":3}}}},{{"clusterName":"m2","status":{{"readyReplicas":"{}"}}}}]}}}}"#,
            "x".repeat(100_000)
        );
        let rb: ResourceBinding = karmada_api::from_json_str(&text).unwrap();
        let (ready, problems) = ready_replicas(&rb);
        assert_eq!(ready.get("m1"), Some(&3));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].len() < 200, "{}", problems[0].len());
    }

    #[test]
    fn ready_replicas_come_from_the_aggregated_status() {
        let rb = with_status(
            &[("c1", 3), ("c2", 2)],
            &[
                ("c1", json!({"readyReplicas": 2})),
                ("c2", json!({"readyReplicas": 1})),
            ],
        );
        let (ready, problems) = ready_replicas(&rb);
        assert!(problems.is_empty());
        assert_eq!(
            replica_status(&rb, &ready),
            [
                ClusterReplicaStatus {
                    cluster: "c1".into(),
                    spec: 3,
                    ready: 2,
                    unschedulable: 0
                },
                ClusterReplicaStatus {
                    cluster: "c2".into(),
                    spec: 2,
                    ready: 1,
                    unschedulable: 0
                },
            ]
        );
        // No readyReplicas, a status that is not an object, no status: unknown (-1).
        let rb = with_status(
            &[("c1", 3), ("c2", 2), ("c3", 1), ("c4", 1)],
            &[
                ("c1", json!({"readyReplicas": 2})),
                ("c2", json!({"someOtherField": 3})),
                ("c3", json!("invalid json")),
            ],
        );
        let (ready, problems) = ready_replicas(&rb);
        assert_eq!(ready, HashMap::from([("c1".to_string(), 2)]));
        assert_eq!(problems.len(), 1, "{problems:?}");
        let readies: Vec<i32> = replica_status(&rb, &ready)
            .iter()
            .map(|s| s.ready)
            .collect();
        assert_eq!(readies, [2, -1, -1, -1]);
        // Go would crash on a non-numeric readyReplicas; here it is unknown, and reported.
        let rb = with_status(&[("c1", 3)], &[("c1", json!({"readyReplicas": "2"}))]);
        let (ready, problems) = ready_replicas(&rb);
        assert!(ready.is_empty());
        assert_eq!(
            problems,
            ["status.aggregatedStatus[cluster c1].status.readyReplicas is \"2\", not a number"]
        );
    }

    fn status(cluster: &str, spec: i32, ready: i32) -> ClusterReplicaStatus {
        ClusterReplicaStatus {
            cluster: cluster.into(),
            spec,
            ready,
            unschedulable: 0,
        }
    }

    #[test]
    fn undesired_clusters_have_fewer_ready_than_assigned() {
        let s = [status("c1", 3, 2), status("c2", 2, 2), status("c3", 4, 1)];
        assert_eq!(undesired(&s), [0, 2]);
        assert!(undesired(&[status("c1", 2, 2), status("c2", 1, 3)]).is_empty());
    }

    #[test]
    fn answers_merge_to_the_smallest_and_failures_count_for_nothing() {
        let answer = |pairs: &[(&str, i32)]| {
            Some(
                pairs
                    .iter()
                    .map(|(c, r)| (c.to_string(), *r))
                    .collect::<Vec<_>>(),
            )
        };
        let mut s = vec![status("c1", 3, 2), status("c2", 2, 1)];
        merge_answers(&mut s, &[0, 1], &[answer(&[("c1", 1), ("c2", 1)])]);
        assert_eq!((s[0].unschedulable, s[1].unschedulable), (1, 1));
        // The estimator failed: nothing is unschedulable.
        let mut s = vec![status("c1", 3, 2), status("c2", 2, 1)];
        merge_answers(&mut s, &[0, 1], &[None]);
        assert_eq!((s[0].unschedulable, s[1].unschedulable), (0, 0));
        // No opinion for c2; an answer at the wrong position is ignored; two estimators:
        // the smaller answer wins.
        let mut s = vec![status("c1", 3, 2), status("c2", 2, 1)];
        merge_answers(
            &mut s,
            &[0, 1],
            &[
                answer(&[("c1", 2), ("c2", -1)]),
                answer(&[("c1", 1), ("c9", 0)]),
            ],
        );
        assert_eq!((s[0].unschedulable, s[1].unschedulable), (1, 0));
    }

    /// One cluster of a table case: name, assigned, ready, unschedulable.
    type Row = (&'static str, i32, i32, i32);

    /// The reference's worker table: (assigned, ready, unschedulable) per cluster → the new
    /// replicas.
    #[test]
    fn new_replicas_follow_the_reference_table() {
        let cases: &[(&[Row], &[i32])] = &[
            (&[("m1", 5, 5, 0)], &[5]),
            (&[("m1", 5, 4, 1)], &[4]),
            (&[("m1", 5, 0, 5)], &[0]),
            (&[("m1", 5, 4, 2)], &[4]),
            (&[("m1", 5, 0, 2)], &[3]),
            (&[("m1", 5, 6, 2)], &[5]),
            (&[("m1", 5, 5, 0), ("m2", 10, 10, 0)], &[5, 10]),
            (&[("m1", 5, 5, 0), ("m2", 10, 9, 1)], &[5, 9]),
            (&[("m1", 5, 2, 3), ("m2", 10, 3, 7)], &[2, 3]),
            (&[("m1", 5, 2, 3), ("m2", 10, -1, 7)], &[2, 3]),
            // More unschedulable than assigned: left alone.
            (&[("m1", 2, 0, 3)], &[2]),
        ];
        for (clusters, want) in cases {
            let targets: Vec<TargetCluster> = clusters
                .iter()
                .map(|(n, spec, _, _)| TargetCluster::new(*n, *spec))
                .collect();
            let mut statuses: Vec<ClusterReplicaStatus> = clusters
                .iter()
                .map(|(n, spec, ready, _)| status(n, *spec, *ready))
                .collect();
            let undesired = undesired(&statuses);
            let answers: Vec<(String, i32)> = undesired
                .iter()
                .map(|&i| (clusters[i].0.to_string(), clusters[i].3))
                .collect();
            merge_answers(&mut statuses, &undesired, &[Some(answers)]);
            let got: Vec<i32> = match plan(&targets, &statuses) {
                Some(p) => p.clusters.iter().map(|c| c.replicas).collect(),
                None => targets.iter().map(|c| c.replicas).collect(),
            };
            assert_eq!(&got, want, "{clusters:?}");
        }
    }

    /// The total is int32 as in the reference and wraps the same way, never panics.
    #[test]
    fn the_total_wraps_as_int32() {
        let clusters = vec![
            TargetCluster::new("m1", i32::MAX),
            TargetCluster::new("m2", 1),
        ];
        let statuses = [
            ClusterReplicaStatus {
                cluster: "m1".into(),
                spec: i32::MAX,
                ready: UNKNOWN,
                unschedulable: i32::MAX,
            },
            ClusterReplicaStatus {
                cluster: "m2".into(),
                spec: 1,
                ready: 0,
                unschedulable: 1,
            },
        ];
        let p = plan(&clusters, &statuses).unwrap();
        assert_eq!(p.total, i32::MIN);
        assert_eq!(
            p.clusters,
            [TargetCluster::new("m1", 0), TargetCluster::new("m2", 0)]
        );
        assert!(
            p.message
                .ends_with(", -2147483648 total descheduled replica(s)")
        );
    }

    #[test]
    fn the_message_names_each_cluster_in_order_and_the_total() {
        let targets = [TargetCluster::new("m1", 5), TargetCluster::new("m2", 10)];
        let statuses = [
            ClusterReplicaStatus {
                cluster: "m1".into(),
                spec: 5,
                ready: 2,
                unschedulable: 3,
            },
            ClusterReplicaStatus {
                cluster: "m2".into(),
                spec: 10,
                ready: 3,
                unschedulable: 7,
            },
        ];
        let p = plan(&targets, &statuses).unwrap();
        assert_eq!(p.total, 10);
        assert_eq!(
            p.message,
            "Binding has been descheduled, 3 replica(s) in cluster(m1), 7 replica(s) in cluster(m2), 10 total descheduled replica(s)"
        );
        // A cluster left with no replicas stays, without a replicas field (as Go writes it).
        let p = plan(
            &[TargetCluster::new("m1", 5)],
            &[ClusterReplicaStatus {
                cluster: "m1".into(),
                spec: 5,
                ready: 0,
                unschedulable: 5,
            }],
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&p.clusters).unwrap(),
            json!([{"name": "m1"}])
        );
        assert_eq!(
            plan(&targets, &[status("m1", 5, 5), status("m2", 10, 10)]),
            None
        );
    }
}
