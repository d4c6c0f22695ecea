//! One view over `ResourceBinding` and `ClusterResourceBinding`.
//!
//! Both kinds share spec and status; they differ in scope, in the queue key, in the words of
//! messages (`ResourceBinding(ns/name)` vs `ClusterResourceBinding(name)`) and in where their
//! Events go. The scheduler handles them through this one type so that every rule is written
//! once.

use component_base::key::ObjectKey;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use karmada_api::work::{ResourceBindingSpec, ResourceBindingStatus};
use serde::Deserialize;
use serde_json::Value;

pub use karmada_api::policy::APPLIED_PLACEMENT_ANNOTATION;

/// Written by every result patch of this scheduler: the `metadata.generation` that patch gives
/// the binding. A binding whose marker names its current generation, but whose status was not
/// written for that generation, was left between our two writes (a lost response, an API
/// server restart, the process killed) and is scheduled again to complete it, by whichever
/// process finds it: the objects alone say what is unfinished (see `decision::unfinished_write`).
/// Our own addition; the reference has no equivalent (docs/compatibility.md).
pub const RESULT_GENERATION_ANNOTATION: &str = "karmada-scheduler-rs.io/result-generation";

/// Labels of which at least one must be non-empty for a binding to be scheduled.
pub const FILTER_LABELS: [&str; 3] = [
    "propagationpolicy.karmada.io/permanent-id",
    "clusterpropagationpolicy.karmada.io/permanent-id",
    "binding.karmada.io/managed-by",
];

/// Namespaced or cluster-scoped binding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BindingKind {
    ResourceBinding,
    ClusterResourceBinding,
}

impl BindingKind {
    pub fn kind(self) -> &'static str {
        match self {
            Self::ResourceBinding => "ResourceBinding",
            Self::ClusterResourceBinding => "ClusterResourceBinding",
        }
    }

    pub fn plural(self) -> &'static str {
        match self {
            Self::ResourceBinding => "resourcebindings",
            Self::ClusterResourceBinding => "clusterresourcebindings",
        }
    }
}

/// Identity of a binding: its kind and its object key (`ns/name`, or `name` for a
/// ClusterResourceBinding), the queue key of the reference.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BindingKey {
    pub kind: BindingKind,
    pub object: ObjectKey,
}

impl BindingKey {
    pub fn rb(namespace: &str, name: &str) -> Self {
        Self {
            kind: BindingKind::ResourceBinding,
            object: ObjectKey::new(namespace, name),
        }
    }

    pub fn crb(name: &str) -> Self {
        Self {
            kind: BindingKind::ClusterResourceBinding,
            object: ObjectKey::new("", name),
        }
    }

    /// The key of a binding of `kind` from the watch's object key (a ClusterResourceBinding
    /// has no namespace, whatever the key says).
    pub fn of(kind: BindingKind, object: &ObjectKey) -> Self {
        match kind {
            BindingKind::ResourceBinding => Self::rb(&object.namespace, &object.name),
            BindingKind::ClusterResourceBinding => Self::crb(&object.name),
        }
    }

    pub fn namespace(&self) -> &str {
        &self.object.namespace
    }

    pub fn name(&self) -> &str {
        &self.object.name
    }

    /// `ResourceBinding(ns/name)` / `ClusterResourceBinding(name)`, as in upstream messages.
    pub fn describe(&self) -> String {
        format!("{}({})", self.kind.kind(), self.object)
    }
}

impl std::fmt::Display for BindingKey {
    /// The reference's queue key: `ns/name` or `name`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.object.fmt(f)
    }
}

/// A decoded binding of either kind.
#[derive(Clone, Debug, PartialEq)]
pub struct Binding {
    pub kind: BindingKind,
    pub metadata: ObjectMeta,
    pub spec: ResourceBindingSpec,
    pub status: ResourceBindingStatus,
}

#[derive(Deserialize)]
struct Wire {
    #[serde(default)]
    metadata: ObjectMeta,
    spec: ResourceBindingSpec,
    #[serde(default)]
    status: ResourceBindingStatus,
}

/// A binding that could not be decoded: enough identity to report it, and the field path.
#[derive(Clone, Debug, PartialEq)]
pub struct MalformedBinding {
    pub key: BindingKey,
    pub metadata: ObjectMeta,
    /// `spec.placement.spreadConstraints[0].spreadByField: unknown variant ...`.
    pub error: String,
}

impl Binding {
    /// The binding as the ResourceBinding the workload group filters read (whatever its
    /// kind: callers pass ResourceBindings).
    pub fn to_resource_binding(&self) -> karmada_api::work::ResourceBinding {
        karmada_api::work::ResourceBinding {
            api_version: karmada_api::work::API_VERSION.into(),
            kind: "ResourceBinding".into(),
            metadata: self.metadata.clone(),
            spec: self.spec.clone(),
            status: self.status.clone(),
        }
    }

    /// The object as JSON again (`apiVersion`, `kind`, `metadata`, `spec`, `status`).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": karmada_api::work::API_VERSION,
            "kind": self.kind.kind(),
            "metadata": self.metadata,
            "spec": self.spec,
            "status": self.status,
        })
    }

    /// Decode one object of the given kind from raw JSON. On failure, the identity that could
    /// still be read is returned with the error, so that the binding itself can be told.
    /// The value is borrowed: a caller that must read more of a malformed object keeps it
    /// without copying it first (a copy costs about half a decode).
    pub fn decode(
        kind: BindingKind,
        raw: &serde_json::Value,
    ) -> Result<Self, Box<MalformedBinding>> {
        match karmada_api::from_json_ref::<Wire>(raw) {
            Ok(w) => Ok(Self {
                kind,
                metadata: w.metadata,
                spec: w.spec,
                status: w.status,
            }),
            Err(e) => Err(Self::malformed(kind, raw, e)),
        }
    }

    /// [`Binding::decode`] from the object's JSON text, as the API server sends it: the typed
    /// fields straight from the text, so that a member status of any depth costs only its
    /// bytes; on failure the identity is read from a shallow value of the text.
    pub fn decode_text(kind: BindingKind, text: &str) -> Result<Self, Box<MalformedBinding>> {
        match karmada_api::from_json_str::<Wire>(text) {
            Ok(w) => Ok(Self {
                kind,
                metadata: w.metadata,
                spec: w.spec,
                status: w.status,
            }),
            Err(e) => {
                let lenient = karmada_api::shallow_value(text, karmada_api::SHALLOW_DEPTH)
                    .unwrap_or_default();
                Err(Self::malformed(kind, &lenient, e))
            }
        }
    }

    /// What a malformed object still tells: its identity (read leniently) and the error.
    fn malformed(
        kind: BindingKind,
        raw: &serde_json::Value,
        e: karmada_api::DecodeError,
    ) -> Box<MalformedBinding> {
        let metadata: ObjectMeta = raw
            .get("metadata")
            .and_then(|m| ObjectMeta::deserialize(m).ok())
            .unwrap_or_default();
        let key = key_of(kind, &metadata);
        Box::new(MalformedBinding {
            key,
            metadata,
            error: e.to_string(),
        })
    }

    pub fn key(&self) -> BindingKey {
        key_of(self.kind, &self.metadata)
    }

    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    pub fn namespace(&self) -> &str {
        self.metadata.namespace.as_deref().unwrap_or_default()
    }

    pub fn generation(&self) -> i64 {
        self.metadata.generation.unwrap_or_default()
    }

    pub fn resource_version(&self) -> Option<&str> {
        self.metadata.resource_version.as_deref()
    }

    pub fn is_deleting(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }

    /// The applied-placement annotation, empty when absent.
    pub fn applied_placement(&self) -> &str {
        self.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(APPLIED_PLACEMENT_ANNOTATION))
            .map(String::as_str)
            .unwrap_or_default()
    }

    /// The generation our last result patch produced, when the marker is present and valid.
    pub fn result_generation(&self) -> Option<i64> {
        self.metadata
            .annotations
            .as_ref()?
            .get(RESULT_GENERATION_ANNOTATION)?
            .parse()
            .ok()
    }

    /// `spec.schedulerName`, with empty meaning `default-scheduler`.
    pub fn scheduler_name(&self) -> &str {
        if self.spec.scheduler_name.is_empty() {
            crate::config::options::DEFAULT_SCHEDULER_NAME
        } else {
            &self.spec.scheduler_name
        }
    }

    /// The reference's event filter: right scheduler, not suspended, and carrying one of
    /// the policy labels.
    pub fn passes_filter(&self, scheduler_name: &str) -> bool {
        passes_filter(
            &self.metadata,
            self.scheduler_name(),
            self.spec.scheduling_suspended(),
            scheduler_name,
        )
    }
}

/// The filter on raw parts, shared with malformed bindings (which have no decoded spec).
pub fn passes_filter(
    meta: &ObjectMeta,
    binding_scheduler: &str,
    suspended: bool,
    ours: &str,
) -> bool {
    if binding_scheduler != ours || suspended {
        return false;
    }
    let labels = meta.labels.as_ref();
    FILTER_LABELS.iter().any(|l| {
        labels
            .and_then(|m| m.get(*l))
            .is_some_and(|v| !v.is_empty())
    })
}

/// What the event filter and the queue need, read leniently from raw JSON so that malformed
/// bindings are filtered exactly like good ones.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub passes: bool,
    /// `spec.schedulerName` names this scheduler (whatever the other filter rules say).
    pub owned: bool,
    pub generation: i64,
    /// `status.schedulerObservedGeneration`.
    pub observed_generation: i64,
    pub priority: i32,
}

/// Summarise a raw binding for the event filter.
pub fn summarize(raw: &Value, scheduler_name: &str) -> Summary {
    let meta: ObjectMeta = raw
        .get("metadata")
        .cloned()
        .and_then(|m| serde_json::from_value(m).ok())
        .unwrap_or_default();
    let spec = raw.get("spec");
    let binding_scheduler = spec
        .and_then(|s| s.get("schedulerName"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or(crate::config::options::DEFAULT_SCHEDULER_NAME);
    let suspended = spec
        .and_then(|s| s.pointer("/suspension/scheduling"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Summary {
        passes: passes_filter(&meta, binding_scheduler, suspended, scheduler_name),
        owned: binding_scheduler == scheduler_name,
        generation: meta.generation.unwrap_or_default(),
        observed_generation: raw
            .pointer("/status/schedulerObservedGeneration")
            .and_then(Value::as_i64)
            .unwrap_or_default(),
        priority: spec
            .and_then(|s| s.pointer("/schedulePriority/priority"))
            .and_then(Value::as_i64)
            .unwrap_or_default() as i32,
    }
}

pub fn key_of(kind: BindingKind, meta: &ObjectMeta) -> BindingKey {
    BindingKey::of(kind, &ObjectKey::of(meta))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decode_reports_the_field_path_and_keeps_identity() {
        let raw = json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "b", "namespace": "ns"},
            "spec": {"resource": {"apiVersion": "v1", "kind": "Pod", "name": "p"},
                     "placement": {"spreadConstraints": [{"spreadByField": "planet"}]}}
        });
        let e = Binding::decode(BindingKind::ResourceBinding, &raw).unwrap_err();
        assert_eq!(e.key, BindingKey::rb("ns", "b"));
        assert!(
            e.error
                .starts_with("spec.placement.spreadConstraints[0].spreadByField"),
            "{}",
            e.error
        );
    }

    #[test]
    fn a_field_given_twice_takes_its_last_value_from_text_as_from_a_value() {
        let text = r#"{"metadata":{"name":"b","namespace":"ns"},
            "spec":{"resource":{"apiVersion":"v1","kind":"Pod","name":"p"},
                    "replicas":1,"replicas":3}}"#;
        let from_text = Binding::decode_text(BindingKind::ResourceBinding, text).unwrap();
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        let from_value = Binding::decode(BindingKind::ResourceBinding, &value).unwrap();
        assert_eq!(from_text.spec.replicas, 3);
        assert_eq!(from_text, from_value);
        // A text the typed decoder refuses for its content still names the field.
        let bad = r#"{"metadata":{"name":"b","namespace":"ns"},"spec":{"replicas":"x"}}"#;
        let e = Binding::decode_text(BindingKind::ResourceBinding, bad).unwrap_err();
        assert_eq!(e.key, BindingKey::rb("ns", "b"));
        assert!(e.error.contains("spec"), "{}", e.error);
    }

    #[test]
    fn keys_and_descriptions() {
        assert_eq!(BindingKey::rb("ns", "b").to_string(), "ns/b");
        assert_eq!(BindingKey::crb("c").to_string(), "c");
        assert_eq!(
            BindingKey::rb("ns", "b").describe(),
            "ResourceBinding(ns/b)"
        );
        assert_eq!(BindingKey::crb("c").describe(), "ClusterResourceBinding(c)");
    }

    #[test]
    fn filter_needs_a_policy_label_and_our_scheduler() {
        let mut meta = ObjectMeta::default();
        assert!(!passes_filter(
            &meta,
            "default-scheduler",
            false,
            "default-scheduler"
        ));
        meta.labels = Some([("binding.karmada.io/managed-by".to_string(), "x".to_string())].into());
        assert!(passes_filter(
            &meta,
            "default-scheduler",
            false,
            "default-scheduler"
        ));
        assert!(!passes_filter(
            &meta,
            "default-scheduler",
            true,
            "default-scheduler"
        ));
        assert!(!passes_filter(&meta, "other", false, "default-scheduler"));
        meta.labels = Some([("binding.karmada.io/managed-by".to_string(), String::new())].into());
        assert!(!passes_filter(
            &meta,
            "default-scheduler",
            false,
            "default-scheduler"
        ));
    }
}
