//! `work.karmada.io/v1alpha2` `ResourceBinding` and `ClusterResourceBinding`.
//!
//! Both kinds share one spec and one status, as upstream. The scheduler reads the spec and
//! status and writes `spec.clusters`, one annotation and a few status fields by merge patch.

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelector, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};
use serde::{Deserialize, Serialize};

use crate::policy::Placement;
use crate::{ClusterName, Extra, ResourceList};

/// API group of the binding kinds.
pub const GROUP: &str = "work.karmada.io";
/// API version of the binding kinds.
pub const VERSION: &str = "v1alpha2";
/// `apiVersion` of the binding kinds.
pub const API_VERSION: &str = "work.karmada.io/v1alpha2";

/// Spec shared by `ResourceBinding` and `ClusterResourceBinding`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceBindingSpec {
    pub resource: ObjectReference,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propagate_deps: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_requirements: Option<ReplicaRequirements>,
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub replicas: i32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<Component>,
    /// The scheduling result: the previous one on input, the new one on output.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<TargetCluster>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub graceful_eviction_tasks: Vec<GracefulEvictionTask>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_by: Vec<BindingSnapshot>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub scheduler_name: String,
    /// Failover behaviour; the scheduler never reads it, so it is kept as raw JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub conflict_resolution: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reschedule_triggered_at: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspension: Option<Suspension>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserve_resources_on_deletion: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_priority: Option<SchedulePriority>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_affinity_groups: Option<WorkloadAffinityGroups>,
    #[serde(flatten)]
    pub extra: Extra,
}

fn is_zero_i32(v: &i32) -> bool {
    *v == 0
}

/// The resource template a binding propagates.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    pub api_version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
}

/// What one replica needs: resources and node constraints.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaRequirements {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_claim: Option<NodeClaim>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resource_request: ResourceList,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub priority_class_name: String,
}

/// One pod template of a multi-template workload.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Component {
    pub name: String,
    pub replicas: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_requirements: Option<ComponentReplicaRequirements>,
}

/// Requirements of one replica of a [`Component`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ComponentReplicaRequirements {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_claim: Option<NodeClaim>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resource_request: ResourceList,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub priority_class_name: String,
}

/// Node constraints of a replica, forwarded to the estimators.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeClaim {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hard_node_affinity: Option<NodeSelector>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
}

/// One entry of `spec.clusters`.
///
/// Written by hand rather than derived: a binding of a Duplicated workload lists every cluster,
/// thousands of entries per binding in a large fleet, all held in the scheduler's cache. The
/// unknown fields are therefore boxed and absent when there are none (8 bytes instead of an
/// empty 72-byte map per entry), and decoding does not buffer each entry as a flattened struct
/// would.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct TargetCluster {
    /// Shared with every other entry naming this cluster (see [`ClusterName`]).
    pub name: ClusterName,
    pub replicas: i32,
    /// Fields this code does not know, kept verbatim; `None` when there are none. v1.19's
    /// `components` lives here too (checked as [`TargetComponent`]s when decoded; read and
    /// written through [`TargetCluster::components`]): it is rare, and an entry of
    /// `spec.clusters` stays three words.
    pub extra: Option<Box<Extra>>,
}

/// Key of v1.19's per-component result in [`TargetCluster::extra`].
const COMPONENTS: &str = "components";

/// One entry of [`TargetCluster::components`] (v1.19 `TargetComponent`): both fields are
/// required by the v1.19 CRD, so `replicas` is written even when 0.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TargetComponent {
    pub name: String,
    #[serde(default)]
    pub replicas: i32,
}

impl TargetCluster {
    pub fn new(name: impl Into<ClusterName>, replicas: i32) -> Self {
        Self {
            name: name.into(),
            replicas,
            extra: None,
        }
    }

    /// v1.19 `components`: the per-component replicas of a multi-template workload placed in
    /// this cluster (written only with `MultiplePodTemplatesScheduling`); empty when absent,
    /// as in every v1.18 object.
    pub fn components(&self) -> Vec<TargetComponent> {
        self.extra
            .as_ref()
            .and_then(|e| e.get(COMPONENTS))
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    }

    /// Set `components`; an empty list removes the field (omitted, as upstream's `omitempty`).
    pub fn set_components(&mut self, components: Vec<TargetComponent>) {
        if components.is_empty() {
            if let Some(e) = self.extra.as_mut() {
                e.remove(COMPONENTS);
                if e.is_empty() {
                    self.extra = None;
                }
            }
            return;
        }
        let value = serde_json::to_value(components).unwrap_or_default();
        self.extra
            .get_or_insert_with(Default::default)
            .insert(COMPONENTS.to_string(), value);
    }
}

impl Serialize for TargetCluster {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let extra = self.extra.as_deref();
        let len = 1 + usize::from(self.replicas != 0) + extra.map_or(0, |e| e.len());
        let mut map = serializer.serialize_map(Some(len))?;
        map.serialize_entry("name", &self.name)?;
        if self.replicas != 0 {
            map.serialize_entry("replicas", &self.replicas)?;
        }
        for (k, v) in extra.into_iter().flatten() {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for TargetCluster {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = TargetCluster;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("struct TargetCluster")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<TargetCluster, A::Error> {
                let mut name: Option<ClusterName> = None;
                let mut replicas = 0;
                let mut extra: Option<Box<Extra>> = None;
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match key.as_ref() {
                        "name" => {
                            if name.is_some() {
                                return Err(serde::de::Error::duplicate_field("name"));
                            }
                            name = Some(map.next_value()?);
                        }
                        "replicas" => replicas = map.next_value()?,
                        COMPONENTS => {
                            // Typed first, so that a malformed entry is refused with its path.
                            let components = map.next_value::<Option<Vec<TargetComponent>>>()?;
                            if let Some(c) = components.filter(|c| !c.is_empty()) {
                                let value =
                                    serde_json::to_value(c).map_err(serde::de::Error::custom)?;
                                extra
                                    .get_or_insert_with(Default::default)
                                    .insert(COMPONENTS.to_string(), value);
                            }
                        }
                        _ => {
                            let value: serde_json::Value = map.next_value()?;
                            extra
                                .get_or_insert_with(Default::default)
                                .insert(key.into_owned(), value);
                        }
                    }
                }
                Ok(TargetCluster {
                    name: name.ok_or_else(|| serde::de::Error::missing_field("name"))?,
                    replicas,
                    extra,
                })
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

/// A cluster the workload is being moved away from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GracefulEvictionTask {
    pub from_cluster: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub purge_mode: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    #[serde(default)]
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default)]
    pub producer: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_period_seconds: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suppress_deletion: Option<bool>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub preserved_label_state: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<Time>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters_before_failover: Vec<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A binding that depends on this one (dependency propagation).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BindingSnapshot {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<TargetCluster>,
}

/// Suspension of scheduling or dispatching.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Suspension {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatching: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatching_on_clusters: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling: Option<bool>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Queue priority of a binding.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SchedulePriority {
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub priority: i32,
}

/// Group keys of workload (anti-)affinity.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadAffinityGroups {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub affinity_group: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub anti_affinity_group: String,
}

/// Status shared by both binding kinds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceBindingStatus {
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub scheduler_observed_generation: i64,
    /// The Go field is `SchedulerObservedAffinityName`; the JSON key says "Observing".
    #[serde(
        default,
        rename = "schedulerObservingAffinityName",
        skip_serializing_if = "String::is_empty"
    )]
    pub scheduler_observed_affinity_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_scheduled_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aggregated_status: Vec<AggregatedStatusItem>,
    #[serde(flatten)]
    pub extra: Extra,
}

fn is_zero_i64(v: &i64) -> bool {
    *v == 0
}

/// A JSON value kept as its text, as client-go keeps a `runtime.RawExtension`: the status of a
/// workload in a member cluster, of which the daemons read one field now and then. Decoded
/// (`serde_json::Value`) each was about fifteen times its text, and a binding over 100 clusters
/// carries 100 of them.
///
/// It is also the one place of a binding where the API server keeps whatever a member's
/// workload reports (`x-kubernetes-preserve-unknown-fields`), nested to any depth: taken as
/// raw text (serde_json's `RawValue`, scanned without recursion), a status deeper than a
/// `Value` can hold costs nothing more than its bytes.
#[derive(Clone, Debug)]
pub struct RawJson(Box<serde_json::value::RawValue>);

impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for RawJson {}

impl RawJson {
    /// The text of `value`.
    pub fn from_value(value: &serde_json::Value) -> RawJson {
        RawJson(serde_json::value::to_raw_value(value).expect("a JSON value always encodes"))
    }

    /// The value, decoded again; `Null` when it is nested deeper than a `Value` holds.
    pub fn value(&self) -> serde_json::Value {
        serde_json::from_str(self.as_str()).unwrap_or(serde_json::Value::Null)
    }

    /// One top-level field of the object, decoded alone (the rest is scanned, not built):
    /// `Ok(None)` when the text is not an object or has no such field.
    pub fn field(&self, name: &str) -> Result<Option<serde_json::Value>, serde_json::Error> {
        use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
        struct Field<'n>(&'n str);
        impl<'de> Visitor<'de> for Field<'_> {
            type Value = Option<serde_json::Value>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut found = None;
                while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    if k == self.0 && found.is_none() {
                        found = Some(map.next_value::<serde_json::Value>()?);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(found)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut s: A,
            ) -> Result<Self::Value, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(None)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
        }
        impl<'de> DeserializeSeed<'de> for Field<'_> {
            type Value = Option<serde_json::Value>;
            fn deserialize<D: serde::Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<Self::Value, D::Error> {
                d.deserialize_any(self)
            }
        }
        let mut de = serde_json::Deserializer::from_str(self.as_str());
        Field(name).deserialize(&mut de)
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }
}

/// Written as the value it holds; a status too deep for a `Value` is written as `null`. No
/// daemon sends an aggregated status back (the scheduler patches its own status fields, the
/// descheduler's update carries none), so only the copies `simulate` and `explain` print
/// lose it.
impl Serialize for RawJson {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(s)
    }
}

/// Read from JSON text (the API server's, as raw text) or from a `serde_json::Value`; other
/// formats go through a `Value` first ([`crate::from_yaml_str`]).
impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Box::<serde_json::value::RawValue>::deserialize(d).map(RawJson)
    }
}

/// Status of the workload in one member cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AggregatedStatusItem {
    pub cluster_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<RawJson>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied: Option<bool>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub applied_message: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub health: String,
    #[serde(flatten)]
    pub extra: Extra,
}

macro_rules! binding_kind {
    ($name:ident, $kind:literal, $kind_fn:literal, $plural:literal, $scope:ty) => {
        #[doc = concat!("`work.karmada.io/v1alpha2` `", $kind, "`.")]
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            #[serde(default = "api_version")]
            pub api_version: String,
            #[serde(default = $kind_fn)]
            pub kind: String,
            #[serde(default)]
            pub metadata: ObjectMeta,
            pub spec: ResourceBindingSpec,
            #[serde(default)]
            pub status: ResourceBindingStatus,
        }

        impl kube::Resource for $name {
            type DynamicType = ();
            type Scope = $scope;

            fn kind(_: &()) -> Cow<'_, str> {
                $kind.into()
            }
            fn group(_: &()) -> Cow<'_, str> {
                GROUP.into()
            }
            fn version(_: &()) -> Cow<'_, str> {
                VERSION.into()
            }
            fn api_version(_: &()) -> Cow<'_, str> {
                API_VERSION.into()
            }
            fn plural(_: &()) -> Cow<'_, str> {
                $plural.into()
            }
            fn meta(&self) -> &ObjectMeta {
                &self.metadata
            }
            fn meta_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }

        impl $name {
            /// The kind name.
            pub const KIND: &'static str = $kind;

            /// A binding with this name and spec, `apiVersion`/`kind` filled in.
            pub fn new(name: &str, spec: ResourceBindingSpec) -> Self {
                Self {
                    api_version: API_VERSION.to_string(),
                    kind: $kind.to_string(),
                    metadata: ObjectMeta {
                        name: Some(name.to_string()),
                        ..Default::default()
                    },
                    spec,
                    status: ResourceBindingStatus::default(),
                }
            }
        }
    };
}

fn api_version() -> String {
    API_VERSION.to_string()
}

fn rb_kind() -> String {
    "ResourceBinding".to_string()
}

fn crb_kind() -> String {
    "ClusterResourceBinding".to_string()
}

binding_kind!(
    ResourceBinding,
    "ResourceBinding",
    "rb_kind",
    "resourcebindings",
    kube::core::NamespaceResourceScope
);
binding_kind!(
    ClusterResourceBinding,
    "ClusterResourceBinding",
    "crb_kind",
    "clusterresourcebindings",
    kube::core::ClusterResourceScope
);

impl ResourceBindingSpec {
    /// Whether some entry of `spec.clusters` has this name.
    pub fn target_contains(&self, name: &str) -> bool {
        self.clusters.iter().any(|c| c.name == name)
    }

    /// Replicas of the first `spec.clusters` entry with this name, else 0.
    pub fn assigned_replicas_for_cluster(&self, name: &str) -> i32 {
        self.clusters
            .iter()
            .find(|c| c.name == name)
            .map_or(0, |c| c.replicas)
    }

    /// Whether a graceful eviction task moves the workload away from this cluster.
    pub fn cluster_in_graceful_eviction_tasks(&self, name: &str) -> bool {
        self.graceful_eviction_tasks
            .iter()
            .any(|t| t.from_cluster == name)
    }

    /// A workload has replicas, replica requirements or components; anything else
    /// (ConfigMaps, Services, ...) is propagated whole.
    pub fn is_workload(&self) -> bool {
        self.replicas > 0 || self.replica_requirements.is_some() || !self.components.is_empty()
    }

    /// `spec.suspension.scheduling == true`.
    pub fn scheduling_suspended(&self) -> bool {
        self.suspension
            .as_ref()
            .and_then(|s| s.scheduling)
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod raw_json_tests {
    use super::*;

    /// A member's status round-trips through its text, null stays absent, and a binding's
    /// JSON reads and writes as before.
    #[test]
    fn aggregated_status_keeps_the_status_as_text() {
        let item: AggregatedStatusItem = serde_json::from_value(serde_json::json!({
            "clusterName": "m1", "applied": true,
            "status": {"replicas": 3, "readyReplicas": 1, "conditions": [{"type": "Available"}]}
        }))
        .unwrap();
        let status = item.status.as_ref().unwrap();
        assert_eq!(
            status.as_str(),
            r#"{"replicas":3,"readyReplicas":1,"conditions":[{"type":"Available"}]}"#
        );
        assert_eq!(status.value()["readyReplicas"], 1);
        assert_eq!(
            serde_json::to_value(&item).unwrap(),
            serde_json::json!({"clusterName": "m1", "applied": true,
                "status": {"replicas": 3, "readyReplicas": 1, "conditions": [{"type": "Available"}]}})
        );
        let none: AggregatedStatusItem =
            serde_json::from_value(serde_json::json!({"clusterName": "m2", "status": null}))
                .unwrap();
        assert!(none.status.is_none());
    }
}
