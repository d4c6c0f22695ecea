//! Whether a binding needs scheduling: the reference's decision ladder.
//!
//! Pure functions of the binding and the cluster snapshot. The first matching row wins; the
//! row decides the `schedule_type` label of the scheduling metrics.

use karmada_api::Cluster;
use karmada_api::policy::{ClusterAffinityTerm, Placement, ReplicaSchedulingType};
use karmada_api::work::ResourceBindingSpec;

use crate::model::binding::Binding;

/// The `schedule_type` metric label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScheduleType {
    ReconcileSchedule,
    ScaleSchedule,
}

impl ScheduleType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReconcileSchedule => "ReconcileSchedule",
            Self::ScaleSchedule => "ScaleSchedule",
        }
    }
}

/// Why a binding is scheduled, for the log line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    PlacementChanged,
    ReplicasChanged,
    RescheduleTriggered,
    Duplicated,
    TerminatingTargetCluster,
    /// Our result patch landed but the status of that attempt did not (see
    /// [`unfinished_write`]): the attempt is made again to complete it.
    UnfinishedWrite,
    /// Not the daemon's: `simulate` and `explain` make an attempt whatever the ladder says.
    Requested,
}

/// What to do with a binding taken from the queue.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Being deleted: a Warning event, nothing else.
    Deleting,
    /// `spec.placement` missing: an error, retried.
    NoPlacement,
    /// Run the scheduling procedure.
    Schedule(ScheduleType, Trigger),
    /// Nothing to schedule; sync `status.schedulerObservedGeneration` when it lags.
    UpToDate { sync_generation: Option<i64> },
}

/// The reference's ladder, first match wins.
pub fn decide(binding: &Binding, clusters: &[&Cluster], multiple_pod_templates: bool) -> Decision {
    if binding.is_deleting() {
        return Decision::Deleting;
    }
    let Some(placement) = binding.spec.placement.as_ref() else {
        return Decision::NoPlacement;
    };
    let spec = &binding.spec;
    let status = &binding.status;
    use ScheduleType::*;
    if unfinished_write(binding) {
        return Decision::Schedule(ReconcileSchedule, Trigger::UnfinishedWrite);
    }
    if placement_changed(
        placement,
        binding.applied_placement(),
        &status.scheduler_observed_affinity_name,
    ) {
        return Decision::Schedule(ReconcileSchedule, Trigger::PlacementChanged);
    }
    if replicas_changed(spec, placement, multiple_pod_templates) {
        return Decision::Schedule(ScaleSchedule, Trigger::ReplicasChanged);
    }
    if reschedule_required(spec, status) {
        return Decision::Schedule(ReconcileSchedule, Trigger::RescheduleTriggered);
    }
    if always_rescheduled(spec) {
        return Decision::Schedule(ReconcileSchedule, Trigger::Duplicated);
    }
    if has_terminating_target(spec, clusters) {
        return Decision::Schedule(ReconcileSchedule, Trigger::TerminatingTargetCluster);
    }
    let generation = binding.generation();
    Decision::UpToDate {
        sync_generation: (generation != status.scheduler_observed_generation).then_some(generation),
    }
}

/// Our addition before row 1: the binding was left between our two writes. Its last spec
/// write is our result patch (the marker names the current generation), and no status was
/// written for that generation: a success would have set `schedulerObservedGeneration` to it,
/// and a fit error writes empty clusters with a `Scheduled=False` condition (the one attempt
/// outcome that writes a result without observing the generation). Such a binding is
/// scheduled again whatever the other rows say: the reference's rows would see an applied
/// placement and at most sync the observed generation, leaving no `Scheduled` condition.
pub fn unfinished_write(binding: &Binding) -> bool {
    let generation = binding.generation();
    if binding.result_generation() != Some(generation)
        || binding.status.scheduler_observed_generation == generation
    {
        return false;
    }
    let failed = binding
        .status
        .conditions
        .iter()
        .any(|c| c.type_ == crate::model::condition::SCHEDULED && c.status == "False");
    !(failed && binding.spec.clusters.is_empty())
}

/// Row 4 of the ladder: non-workloads and Duplicated workloads are scheduled again on every
/// enqueue, whatever changed.
pub fn always_rescheduled(spec: &ResourceBindingSpec) -> bool {
    !spec.is_workload()
        || spec
            .placement
            .as_ref()
            .is_some_and(|p| p.replica_scheduling_type() == Some(ReplicaSchedulingType::Duplicated))
}

/// Whether the placement changed. Both sides are compared after decoding, so absent and empty collections are equal
/// (the reference distinguishes them and then reschedules such bindings on every enqueue; we
/// deliberately do not).
pub fn placement_changed(current: &Placement, applied: &str, observed_affinity: &str) -> bool {
    if applied.is_empty() {
        return true;
    }
    let applied: Placement = match serde_json::from_str(applied) {
        Ok(p) => p,
        Err(e) => {
            tracing::error!("Failed to unmarshal applied placement string: {e}");
            return false;
        }
    };
    let current = normalized(current);
    let applied = normalized(&applied);
    if current == applied {
        return false;
    }
    if current.cluster_affinity != applied.cluster_affinity
        || current.cluster_tolerations != applied.cluster_tolerations
        || current.spread_constraints != applied.spread_constraints
        || current.replica_scheduling != applied.replica_scheduling
    {
        return true;
    }
    cluster_affinities_changed(
        current.cluster_affinities.as_deref().unwrap_or_default(),
        applied.cluster_affinities.as_deref().unwrap_or_default(),
        observed_affinity,
    )
}

/// An empty `clusterAffinities` list is omitted by the Go encoder, so it reads back as absent;
/// treat both alike.
fn normalized(p: &Placement) -> Placement {
    let mut p = p.clone();
    if p.cluster_affinities.as_ref().is_some_and(Vec::is_empty) {
        p.cluster_affinities = None;
    }
    p
}

fn cluster_affinities_changed(
    current: &[ClusterAffinityTerm],
    applied: &[ClusterAffinityTerm],
    observed: &str,
) -> bool {
    if observed.is_empty() {
        return true;
    }
    let find =
        |terms: &[ClusterAffinityTerm]| terms.iter().find(|t| t.affinity_name == observed).cloned();
    match (find(current), find(applied)) {
        (Some(a), Some(b)) => a != b,
        _ => true,
    }
}

/// `IsBindingReplicasChanged`.
pub fn replicas_changed(
    spec: &ResourceBindingSpec,
    placement: &Placement,
    multiple_pod_templates: bool,
) -> bool {
    let Some(strategy) = placement.replica_scheduling.as_ref() else {
        return false;
    };
    if multiple_pod_templates && !spec.components.is_empty() && spec.clusters.is_empty() {
        return true;
    }
    match strategy.replica_scheduling_type {
        Some(ReplicaSchedulingType::Duplicated) => {
            spec.clusters.iter().any(|c| c.replicas != spec.replicas)
        }
        Some(ReplicaSchedulingType::Divided) => {
            let sum: i64 = spec.clusters.iter().map(|c| i64::from(c.replicas)).sum();
            sum != i64::from(spec.replicas)
        }
        None => false,
    }
}

/// `RescheduleRequired`: a trigger strictly after the last successful scheduling.
pub fn reschedule_required(
    spec: &ResourceBindingSpec,
    status: &karmada_api::work::ResourceBindingStatus,
) -> bool {
    match (&spec.reschedule_triggered_at, &status.last_scheduled_time) {
        (Some(trigger), Some(last)) => trigger.0 > last.0,
        _ => false,
    }
}

/// Row 5: a cluster still in the snapshot, being deleted, and named in `spec.clusters`.
pub fn has_terminating_target(spec: &ResourceBindingSpec, clusters: &[&Cluster]) -> bool {
    clusters
        .iter()
        .any(|c| c.is_terminating() && spec.target_contains(c.name()))
}

/// Index of the term the scheduler observed last; 0 when unknown.
pub fn affinity_index(terms: &[ClusterAffinityTerm], observed: &str) -> usize {
    if observed.is_empty() {
        return 0;
    }
    terms
        .iter()
        .position(|t| t.affinity_name == observed)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::binding::BindingKind;
    use serde_json::json;

    fn binding(v: serde_json::Value) -> Binding {
        Binding::decode(BindingKind::ResourceBinding, &v).unwrap()
    }

    fn cluster(name: &str, deleting: bool) -> Cluster {
        let mut c: Cluster = serde_json::from_value(json!({
            "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": name}, "spec": {}
        }))
        .unwrap();
        if deleting {
            c.metadata.deletion_timestamp =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    "2026-01-01T00:00:00Z".parse().unwrap(),
                ));
        }
        c
    }

    fn divided(annotation: Option<&str>, replicas: i32, clusters: serde_json::Value) -> Binding {
        let placement = json!({"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}});
        let mut meta = json!({"name": "b", "namespace": "ns", "generation": 3});
        if let Some(a) = annotation {
            meta["annotations"] = json!({"policy.karmada.io/applied-placement": a});
        }
        binding(json!({
            "metadata": meta,
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
                     "replicas": replicas, "clusters": clusters, "placement": placement},
            "status": {"schedulerObservedGeneration": 2}
        }))
    }

    const APPLIED: &str = r#"{"replicaScheduling":{"replicaSchedulingType":"Divided","replicaDivisionPreference":"Aggregated"}}"#;

    #[test]
    fn ladder_rows_in_order() {
        let none: Vec<&Cluster> = vec![];
        let b = divided(None, 3, json!([]));
        assert_eq!(
            decide(&b, &none, false),
            Decision::Schedule(ScheduleType::ReconcileSchedule, Trigger::PlacementChanged)
        );
        let b = divided(Some(APPLIED), 3, json!([{"name": "m1", "replicas": 2}]));
        assert_eq!(
            decide(&b, &none, false),
            Decision::Schedule(ScheduleType::ScaleSchedule, Trigger::ReplicasChanged)
        );
        let b = divided(Some(APPLIED), 3, json!([{"name": "m1", "replicas": 3}]));
        assert_eq!(
            decide(&b, &none, false),
            Decision::UpToDate {
                sync_generation: Some(3)
            }
        );
        let m1 = cluster("m1", true);
        assert_eq!(
            decide(&b, &[&m1], false),
            Decision::Schedule(
                ScheduleType::ReconcileSchedule,
                Trigger::TerminatingTargetCluster
            )
        );
        let mut deleting = b.clone();
        deleting.metadata.deletion_timestamp = m1.metadata.deletion_timestamp.clone();
        assert_eq!(decide(&deleting, &none, false), Decision::Deleting);
        let mut no_placement = b.clone();
        no_placement.spec.placement = None;
        assert_eq!(decide(&no_placement, &none, false), Decision::NoPlacement);
        let mut synced = b.clone();
        synced.status.scheduler_observed_generation = 3;
        assert_eq!(
            decide(&synced, &none, false),
            Decision::UpToDate {
                sync_generation: None
            }
        );
    }

    /// The marker of our result patch names the current generation but the status was not
    /// written: scheduled again, ahead of the rows that would only sync the generation.
    #[test]
    fn an_unfinished_write_is_scheduled_again() {
        let none: Vec<&Cluster> = vec![];
        let mut b = divided(Some(APPLIED), 3, json!([{"name": "m1", "replicas": 3}]));
        let marker = |b: &mut Binding, v: &str| {
            b.metadata.annotations.get_or_insert_default().insert(
                crate::model::binding::RESULT_GENERATION_ANNOTATION.into(),
                v.into(),
            );
        };
        let unfinished =
            Decision::Schedule(ScheduleType::ReconcileSchedule, Trigger::UnfinishedWrite);
        marker(&mut b, "3");
        assert_eq!(decide(&b, &none, false), unfinished);
        // A later spec write by someone else: the reference's rows again.
        marker(&mut b, "2");
        assert_eq!(
            decide(&b, &none, false),
            Decision::UpToDate {
                sync_generation: Some(3)
            }
        );
        marker(&mut b, "not a number");
        assert!(!unfinished_write(&b));
        // The status of our success was written.
        marker(&mut b, "3");
        b.status.scheduler_observed_generation = 3;
        assert!(!unfinished_write(&b));
        // A fit error: empty clusters and Scheduled=False do not observe the generation.
        b.status.scheduler_observed_generation = 2;
        b.spec.clusters.clear();
        b.status.conditions =
            vec![serde_json::from_value(json!({
            "type": "Scheduled", "status": "False", "reason": "NoClusterFit", "message": "m",
            "lastTransitionTime": "2026-01-01T00:00:00Z"
        }))
        .unwrap()];
        assert!(!unfinished_write(&b));
        // ...but an old False condition next to clusters we wrote is not that attempt's.
        b.spec.clusters = vec![karmada_api::work::TargetCluster::new("m1", 3)];
        assert_eq!(decide(&b, &none, false), unfinished);
        // A deleted or placement-less binding keeps its rows.
        b.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            "2026-01-01T00:00:00Z".parse().unwrap(),
        ));
        assert_eq!(decide(&b, &none, false), Decision::Deleting);
    }

    #[test]
    fn duplicated_and_non_workloads_always_schedule() {
        let b = binding(json!({
            "metadata": {"name": "b", "namespace": "ns",
                         "annotations": {"policy.karmada.io/applied-placement": "{}"}},
            "spec": {"resource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c"}, "placement": {}}
        }));
        assert_eq!(
            decide(&b, &[], false),
            Decision::Schedule(ScheduleType::ReconcileSchedule, Trigger::Duplicated)
        );
    }

    #[test]
    fn reschedule_trigger_must_be_strictly_later() {
        let mut b = divided(Some(APPLIED), 3, json!([{"name": "m1", "replicas": 3}]));
        let t = |s: &str| {
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                s.parse().unwrap(),
            ))
        };
        b.spec.reschedule_triggered_at = t("2026-01-01T00:00:10Z");
        assert!(
            !reschedule_required(&b.spec, &b.status),
            "no lastScheduledTime yet"
        );
        b.status.last_scheduled_time = t("2026-01-01T00:00:10Z");
        assert!(!reschedule_required(&b.spec, &b.status));
        b.status.last_scheduled_time = t("2026-01-01T00:00:09Z");
        assert!(reschedule_required(&b.spec, &b.status));
    }

    #[test]
    fn placement_changed_rules() {
        let p: Placement =
            serde_json::from_value(json!({"clusterAffinity": {"clusterNames": ["a"]}})).unwrap();
        assert!(placement_changed(&p, "", ""));
        assert!(!placement_changed(&p, "not json", ""));
        assert!(!placement_changed(
            &p,
            r#"{"clusterAffinity":{"clusterNames":["a"]}}"#,
            ""
        ));
        assert!(placement_changed(
            &p,
            r#"{"clusterAffinity":{"clusterNames":["b"]}}"#,
            ""
        ));
        // Absent vs empty lists are the same placement here (a deliberate deviation).
        let empty: Placement = serde_json::from_value(
            json!({"clusterAffinity": {"clusterNames": ["a"], "exclude": []}}),
        )
        .unwrap();
        assert!(!placement_changed(
            &empty,
            r#"{"clusterAffinity":{"clusterNames":["a"]}}"#,
            ""
        ));
    }

    #[test]
    fn affinities_only_the_observed_term_counts() {
        let p: Placement = serde_json::from_value(json!({"clusterAffinities": [
            {"affinityName": "a", "clusterNames": ["m1"]},
            {"affinityName": "b", "clusterNames": ["m3"]}
        ]}))
        .unwrap();
        let applied = r#"{"clusterAffinities":[{"affinityName":"a","clusterNames":["m1"]},{"affinityName":"b","clusterNames":["m2"]}]}"#;
        assert!(!placement_changed(&p, applied, "a"));
        assert!(placement_changed(&p, applied, "b"));
        assert!(placement_changed(&p, applied, ""));
        assert!(placement_changed(&p, applied, "gone"));
        assert_eq!(
            affinity_index(p.cluster_affinities.as_deref().unwrap(), "b"),
            1
        );
        assert_eq!(
            affinity_index(p.cluster_affinities.as_deref().unwrap(), "gone"),
            0
        );
    }

    #[test]
    fn replicas_changed_rules() {
        let b = divided(
            Some(APPLIED),
            3,
            json!([{"name": "m1", "replicas": 1}, {"name": "m2", "replicas": 2}]),
        );
        let p = b.spec.placement.clone().unwrap();
        assert!(!replicas_changed(&b.spec, &p, false));
        let dup: Placement = serde_json::from_value(
            json!({"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}),
        )
        .unwrap();
        assert!(replicas_changed(&b.spec, &dup, false));
        let none = Placement::default();
        assert!(!replicas_changed(&b.spec, &none, false));
    }
}
