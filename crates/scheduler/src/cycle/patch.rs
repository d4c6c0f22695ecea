//! The scheduler's writes as data: JSON merge patches touching only the scheduler's fields.
//!
//! The reference diffs its cache copy against a modified copy and sends the merge patch (keys
//! sorted, as Go marshals maps). These functions compute the same documents directly from the
//! binding and the decision; `None` means "nothing to send". Two patches per attempt suffice:
//! the result on the main resource, and one status patch carrying the `Scheduled` condition,
//! the observed generation, `lastScheduledTime` and the observed affinity name (the reference
//! sends the last two in separate requests; the resulting object is the same).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use karmada_api::work::{ResourceBindingStatus, TargetCluster};
use serde_json::{Map, Value, json};

use crate::model::binding::{
    APPLIED_PLACEMENT_ANNOTATION, Binding, BindingKind, RESULT_GENERATION_ANNOTATION,
};
use crate::model::condition::{SCHEDULED, SUCCESS_MESSAGE, ScheduledCondition, cut_message};

/// `{name, replicas, components}` as v1.19.0 encodes a `TargetCluster` (`replicas` omitted
/// when 0, `components` when empty: v1.18.2's encoding whenever there are none).
fn target_json(t: &TargetCluster) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), Value::String(t.name.to_string()));
    if t.replicas != 0 {
        m.insert("replicas".into(), Value::from(t.replicas));
    }
    let components = t.components();
    if !components.is_empty() {
        m.insert(
            "components".into(),
            serde_json::to_value(components).unwrap_or_default(),
        );
    }
    Value::Object(m)
}

fn same_targets(a: &[TargetCluster], b: &[TargetCluster]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.name == y.name && x.replicas == y.replicas && x.components() == y.components()
        })
}

/// The result patch: the applied-placement annotation and `spec.clusters`, plus our marker
/// of the generation the patch produces ([`RESULT_GENERATION_ANNOTATION`]).
pub fn result_patch(
    binding: &Binding,
    placement_json: &str,
    result: &[TargetCluster],
) -> Option<Value> {
    let mut patch = Map::new();
    if binding.applied_placement() != placement_json
        || !binding
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(APPLIED_PLACEMENT_ANNOTATION))
    {
        patch.insert(
            "metadata".into(),
            json!({"annotations": {APPLIED_PLACEMENT_ANNOTATION: placement_json}}),
        );
    }
    if !same_targets(&binding.spec.clusters, result) {
        let clusters = if result.is_empty() {
            Value::Null
        } else {
            Value::Array(result.iter().map(target_json).collect())
        };
        patch.insert("spec".into(), json!({"clusters": clusters}));
    }
    if patch.is_empty() {
        return None;
    }
    // The marker of an unfinished write: a spec change bumps the generation by exactly one (the
    // patch is sent with a resourceVersion precondition, so nothing else lands in between).
    let next = binding.generation() + i64::from(patch.contains_key("spec"));
    let meta = patch
        .entry("metadata")
        .or_insert_with(|| json!({"annotations": {}}));
    if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
        annotations.insert(
            RESULT_GENERATION_ANNOTATION.into(),
            Value::String(next.to_string()),
        );
    }
    Some(Value::Object(patch))
}

/// Kubernetes `meta.SetStatusCondition`: insert when missing; on a status flip set the
/// transition time to `now`; overwrite reason, message and observed generation. The message
/// is cut to the CRD's limit ([`cut_message`]) whoever built the condition.
pub fn set_condition(conditions: &mut Vec<Condition>, new: &ScheduledCondition, now: &Time) {
    let status = if new.status { "True" } else { "False" }.to_string();
    let message = cut_message(new.message.clone());
    match conditions.iter_mut().find(|c| c.type_ == SCHEDULED) {
        None => conditions.push(Condition {
            type_: SCHEDULED.to_string(),
            status,
            reason: new.reason.to_string(),
            message,
            last_transition_time: now.clone(),
            observed_generation: None,
        }),
        Some(existing) => {
            if existing.status != status {
                existing.status = status;
                existing.last_transition_time = now.clone();
            }
            existing.reason = new.reason.to_string();
            existing.message = message;
            existing.observed_generation = None;
        }
    }
}

/// What the status patch after an attempt must say.
#[derive(Clone, Debug, PartialEq)]
pub struct StatusUpdate {
    pub condition: ScheduledCondition,
    /// On success: the generation that was scheduled (`metadata.generation` of the binding the
    /// decision was made on) — written with `lastScheduledTime`.
    pub scheduled_generation: Option<i64>,
    /// ClusterAffinities success: the term now observed.
    pub affinity_name: Option<String>,
}

/// The status patch (condition, observed generation, time and affinity name in one): computed against `status` (the freshest copy known),
/// `None` when nothing would change.
pub fn status_patch(
    status: &ResourceBindingStatus,
    update: &StatusUpdate,
    now: &Time,
) -> Option<Value> {
    let mut body = Map::new();
    let mut conditions = status.conditions.clone();
    set_condition(&mut conditions, &update.condition, now);
    if conditions != status.conditions {
        body.insert(
            "conditions".into(),
            serde_json::to_value(&conditions).unwrap_or(Value::Null),
        );
    }
    if let Some(generation) = update.scheduled_generation {
        if status.last_scheduled_time.as_ref() != Some(now) {
            body.insert(
                "lastScheduledTime".into(),
                serde_json::to_value(now).unwrap_or(Value::Null),
            );
        }
        if status.scheduler_observed_generation != generation {
            body.insert(
                "schedulerObservedGeneration".into(),
                Value::from(generation),
            );
        }
    }
    if let Some(name) = &update.affinity_name
        && &status.scheduler_observed_affinity_name != name
    {
        body.insert(
            "schedulerObservingAffinityName".into(),
            Value::String(name.clone()),
        );
    }
    (!body.is_empty()).then(|| json!({"status": body}))
}

/// The observed-generation patch: only the observed generation.
pub fn observed_generation_patch(generation: i64) -> Value {
    json!({"status": {"schedulerObservedGeneration": generation}})
}

/// Event reason of a successful attempt.
pub const REASON_SUCCEED: &str = "ScheduleBindingSucceed";
/// Event reason of a failed attempt.
pub const REASON_FAILED: &str = "ScheduleBindingFailed";

/// `m1:2, m2:1`, in result order.
pub fn result_string(result: &[TargetCluster]) -> String {
    result
        .iter()
        .map(|t| format!("{}:{}", t.name, t.replicas))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The success Event message; the CRB form lacks the colon, as upstream.
pub fn success_event_message(kind: BindingKind, result: &[TargetCluster]) -> String {
    match kind {
        BindingKind::ResourceBinding => {
            format!("{SUCCESS_MESSAGE} Result: {{{}}}", result_string(result))
        }
        BindingKind::ClusterResourceBinding => {
            format!("{SUCCESS_MESSAGE} Result {{{}}}", result_string(result))
        }
    }
}

/// The Warning message for a binding that is being deleted.
pub fn deleting_event_message(binding: &Binding) -> String {
    match binding.kind {
        BindingKind::ResourceBinding => format!(
            "skip schedule deleting resourceBinding: {}/{}",
            binding.namespace(),
            binding.name()
        ),
        BindingKind::ClusterResourceBinding => {
            format!(
                "skip schedule deleting clusterResourceBinding: {}",
                binding.name()
            )
        }
    }
}

/// `patch` with a `metadata.resourceVersion` precondition: the API server refuses it with
/// 409 if the object changed since `resource_version` was read.
pub fn with_precondition(mut patch: Value, resource_version: Option<&str>) -> Value {
    if let (Some(rv), Value::Object(map)) = (resource_version, &mut patch) {
        let meta = map
            .entry("metadata")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Value::Object(meta) = meta {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
    }
    patch
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn t(s: &str) -> Time {
        Time(s.parse().unwrap())
    }

    fn rb(v: Value) -> Binding {
        Binding::decode(BindingKind::ResourceBinding, &v).unwrap()
    }

    fn base(annotations: Value, clusters: Value, status: Value) -> Binding {
        rb(json!({
            "metadata": {"name": "b", "namespace": "ns", "generation": 4, "annotations": annotations},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
                     "replicas": 3, "clusters": clusters, "placement": {}},
            "status": status
        }))
    }

    const P: &str = r#"{"clusterAffinity":{"clusterNames":["m1","m2"]}}"#;

    #[test]
    fn first_schedule_writes_annotation_and_clusters() {
        let b = base(json!({}), json!([]), json!({}));
        let result = vec![TargetCluster::new("m1", 2), TargetCluster::new("m2", 1)];
        assert_eq!(
            result_patch(&b, P, &result).unwrap().to_string(),
            r#"{"metadata":{"annotations":{"policy.karmada.io/applied-placement":"{\"clusterAffinity\":{\"clusterNames\":[\"m1\",\"m2\"]}}","karmada-scheduler-rs.io/result-generation":"5"}},"spec":{"clusters":[{"name":"m1","replicas":2},{"name":"m2","replicas":1}]}}"#
        );
    }

    /// v1.19's per-component result is written with its target, and a change of it alone
    /// (or its removal) is a change of `spec.clusters`.
    #[test]
    fn component_results_are_written_and_compared() {
        let comps = |n: i32| {
            vec![
                karmada_api::work::TargetComponent {
                    name: "jm".into(),
                    replicas: 1,
                },
                karmada_api::work::TargetComponent {
                    name: "tm".into(),
                    replicas: n,
                },
            ]
        };
        let mut t = TargetCluster::new("m1", 0);
        t.set_components(comps(3));
        let b = base(
            json!({APPLIED_PLACEMENT_ANNOTATION: P}),
            json!([]),
            json!({}),
        );
        assert_eq!(
            result_patch(&b, P, std::slice::from_ref(&t)).unwrap()["spec"],
            json!({"clusters": [{"name": "m1", "components": [
                {"name": "jm", "replicas": 1}, {"name": "tm", "replicas": 3}]}]})
        );
        let b = base(
            json!({APPLIED_PLACEMENT_ANNOTATION: P}),
            json!([{"name": "m1", "components": [
                {"name": "jm", "replicas": 1}, {"name": "tm", "replicas": 3}]}]),
            json!({}),
        );
        assert_eq!(result_patch(&b, P, std::slice::from_ref(&t)), None);
        t.set_components(comps(4));
        assert!(result_patch(&b, P, std::slice::from_ref(&t)).is_some());
        assert_eq!(
            result_patch(&b, P, &[TargetCluster::new("m1", 0)]).unwrap()["spec"],
            json!({"clusters": [{"name": "m1"}]})
        );
    }

    #[test]
    fn unchanged_result_sends_nothing_and_changes_send_only_the_difference() {
        let b = base(
            json!({APPLIED_PLACEMENT_ANNOTATION: P}),
            json!([{"name": "m1", "replicas": 3}]),
            json!({}),
        );
        assert_eq!(result_patch(&b, P, &[TargetCluster::new("m1", 3)]), None);
        assert_eq!(
            result_patch(
                &b,
                P,
                &[TargetCluster::new("m1", 2), TargetCluster::new("m2", 1)]
            )
            .unwrap(),
            json!({"spec": {"clusters": [{"name": "m1", "replicas": 2}, {"name": "m2", "replicas": 1}]},
                   "metadata": {"annotations": {RESULT_GENERATION_ANNOTATION: "5"}}})
        );
        // No fit: clusters cleared with null; zero replicas omitted.
        assert_eq!(
            result_patch(&b, P, &[]).unwrap(),
            json!({"spec": {"clusters": null}, "metadata": {"annotations": {RESULT_GENERATION_ANNOTATION: "5"}}})
        );
        assert_eq!(
            result_patch(&b, P, &[TargetCluster::new("m1", 0)])
                .unwrap()
                .to_string(),
            r#"{"spec":{"clusters":[{"name":"m1"}]},"metadata":{"annotations":{"karmada-scheduler-rs.io/result-generation":"5"}}}"#
        );
        assert_eq!(
            result_patch(&b, "{}", &[TargetCluster::new("m1", 3)]).unwrap(),
            // Only metadata changes: the generation stays, and so does the marker's value.
            json!({"metadata": {"annotations": {APPLIED_PLACEMENT_ANNOTATION: "{}", RESULT_GENERATION_ANNOTATION: "4"}}})
        );
    }

    #[test]
    fn success_status_patch() {
        let b = base(
            json!({}),
            json!([]),
            json!({"conditions": [
                {"type": "FullyApplied", "status": "True", "reason": "x", "message": "y", "lastTransitionTime": "2026-01-01T00:00:00Z"}
            ]}),
        );
        let now = t("2026-07-01T10:00:00Z");
        let update = StatusUpdate {
            condition: crate::model::condition::condition_for(None).0,
            scheduled_generation: Some(4),
            affinity_name: None,
        };
        assert_eq!(
            status_patch(&b.status, &update, &now).unwrap().to_string(),
            concat!(
                r#"{"status":{"conditions":[{"lastTransitionTime":"2026-01-01T00:00:00Z","message":"y","reason":"x","status":"True","type":"FullyApplied"},"#,
                r#"{"lastTransitionTime":"2026-07-01T10:00:00Z","message":"Binding has been scheduled successfully.","reason":"Success","status":"True","type":"Scheduled"}],"#,
                r#""lastScheduledTime":"2026-07-01T10:00:00Z","schedulerObservedGeneration":4}}"#
            )
        );
    }

    /// A condition built by hand with a message over the CRD's limit (a decode error quoting
    /// a huge field, as the attempt on a malformed binding builds it) is sent cut to the limit, and the same
    /// failure again sends nothing: the cut message is what is compared.
    #[test]
    fn a_huge_message_is_sent_cut_to_the_crd_limit() {
        use crate::model::condition::MAX_MESSAGE_CHARS;
        let b = base(json!({}), json!([]), json!({}));
        let now = t("2026-07-01T10:00:00Z");
        let update = StatusUpdate {
            condition: ScheduledCondition {
                status: false,
                reason: "SchedulerError",
                message: format!(
                    "failed to decode ResourceBinding(default/x): spec.x: unknown variant `{}`",
                    "é".repeat(100_000)
                ),
            },
            scheduled_generation: None,
            affinity_name: None,
        };
        let patch = status_patch(&b.status, &update, &now).unwrap();
        let message = patch["status"]["conditions"][0]["message"]
            .as_str()
            .unwrap();
        assert_eq!(message.chars().count(), MAX_MESSAGE_CHARS);
        assert!(message.starts_with("failed to decode ResourceBinding(default/x): spec.x: "));
        let mut sent = b.status.clone();
        set_condition(&mut sent.conditions, &update.condition, &now);
        assert_eq!(status_patch(&sent, &update, &now), None);
    }

    #[test]
    fn failure_keeps_transition_time_when_status_does_not_flip() {
        let b = base(
            json!({}),
            json!([]),
            json!({"schedulerObservedGeneration": 3, "conditions": [
                {"type": "Scheduled", "status": "False", "reason": "Unschedulable", "message": "old", "lastTransitionTime": "2026-01-01T00:00:00Z"}
            ]}),
        );
        let now = t("2026-07-01T10:00:00Z");
        let cond = ScheduledCondition {
            status: false,
            reason: "NoClusterFit",
            message: "new".into(),
        };
        let update = StatusUpdate {
            condition: cond.clone(),
            scheduled_generation: None,
            affinity_name: None,
        };
        assert_eq!(
            status_patch(&b.status, &update, &now).unwrap(),
            json!({"status": {"conditions": [
                {"type": "Scheduled", "status": "False", "reason": "NoClusterFit", "message": "new", "lastTransitionTime": "2026-01-01T00:00:00Z"}
            ]}})
        );
        // The same failure again: nothing to send.
        let mut again = b.status.clone();
        set_condition(&mut again.conditions, &cond, &now);
        assert_eq!(status_patch(&again, &update, &now), None);
        // Flip to success: new transition time.
        let ok = StatusUpdate {
            condition: crate::model::condition::condition_for(None).0,
            scheduled_generation: Some(4),
            affinity_name: Some("b".into()),
        };
        let p = status_patch(&again, &ok, &now).unwrap();
        assert_eq!(
            p["status"]["conditions"][0]["lastTransitionTime"],
            "2026-07-01T10:00:00Z"
        );
        assert_eq!(p["status"]["schedulerObservedGeneration"], 4);
        assert_eq!(p["status"]["schedulerObservingAffinityName"], "b");
    }

    #[test]
    fn event_messages() {
        let r = vec![TargetCluster::new("m1", 2), TargetCluster::new("m2", 1)];
        assert_eq!(
            success_event_message(BindingKind::ResourceBinding, &r),
            "Binding has been scheduled successfully. Result: {m1:2, m2:1}"
        );
        assert_eq!(
            success_event_message(
                BindingKind::ClusterResourceBinding,
                &[TargetCluster::new("m1", 0)]
            ),
            "Binding has been scheduled successfully. Result {m1:0}"
        );
        let b = base(json!({}), json!([]), json!({}));
        assert_eq!(
            deleting_event_message(&b),
            "skip schedule deleting resourceBinding: ns/b"
        );
        assert_eq!(
            observed_generation_patch(5),
            json!({"status": {"schedulerObservedGeneration": 5}})
        );
    }
}
