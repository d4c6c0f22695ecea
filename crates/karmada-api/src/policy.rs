//! `policy.karmada.io/v1alpha1` placement types, as embedded in bindings.
//!
//! Field order follows the reference Go structs, so that serialising a [`Placement`] gives the
//! same key order as the reference's `policy.karmada.io/applied-placement` annotation.

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde::{Deserialize, Serialize};

use crate::Extra;

/// Annotation on a binding holding the placement (JSON) of its last successful scheduling
/// decision; written by the scheduler, read back to tell whether the placement changed.
pub const APPLIED_PLACEMENT_ANNOTATION: &str = "policy.karmada.io/applied-placement";

/// Where a workload may go and how its replicas are split.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_affinity: Option<ClusterAffinity>,
    /// Ordered affinity terms with failover. `None` and `Some(vec![])` differ: the reference
    /// enters the term loop whenever the list is present, even when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_affinities: Option<Vec<ClusterAffinityTerm>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_tolerations: Vec<Toleration>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spread_constraints: Vec<SpreadConstraint>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_scheduling: Option<ReplicaSchedulingStrategy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_affinity: Option<WorkloadAffinity>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A set of clusters described by label selector, field selector, names and exclusions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterAffinity {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_selector: Option<FieldSelector>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_names: Vec<String>,
    #[serde(default, rename = "exclude", skip_serializing_if = "Vec::is_empty")]
    pub exclude_clusters: Vec<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Selector on the cluster fields `provider`, `region` and `zone`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldSelector {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<NodeSelectorRequirement>,
}

/// One named term of `clusterAffinities`: an inline affinity plus overflow tiers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterAffinityTerm {
    pub affinity_name: String,
    #[serde(flatten)]
    pub affinity: ClusterAffinity,
    /// `None` and empty differ: overflow scheduling is on only when the list is present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overflow_affinities: Option<Vec<OverflowClusterAffinity>>,
}

/// An overflow tier of a [`ClusterAffinityTerm`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OverflowClusterAffinity {
    pub affinity_name: String,
    #[serde(flatten)]
    pub affinity: ClusterAffinity,
}

/// The field a spread constraint groups clusters by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum SpreadFieldValue {
    #[serde(rename = "cluster")]
    Cluster,
    #[serde(rename = "region")]
    Region,
    #[serde(rename = "zone")]
    Zone,
    #[serde(rename = "provider")]
    Provider,
}

impl SpreadFieldValue {
    /// The JSON spelling, as used in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cluster => "cluster",
            Self::Region => "region",
            Self::Zone => "zone",
            Self::Provider => "provider",
        }
    }
}

/// How clusters are grouped and how many groups are chosen.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpreadConstraint {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread_by_field: Option<SpreadFieldValue>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub spread_by_label: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_groups: i64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub min_groups: i64,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

/// `Duplicated` or `Divided`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReplicaSchedulingType {
    Duplicated,
    Divided,
}

impl ReplicaSchedulingType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Duplicated => "Duplicated",
            Self::Divided => "Divided",
        }
    }
}

/// `Aggregated` or `Weighted`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReplicaDivisionPreference {
    Aggregated,
    Weighted,
}

impl ReplicaDivisionPreference {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Aggregated => "Aggregated",
            Self::Weighted => "Weighted",
        }
    }
}

/// The factor of dynamic weighting; only `AvailableReplicas` exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DynamicWeightFactor {
    AvailableReplicas,
}

/// How replicas are scheduled. Both enums are optional because the reference leaves them
/// empty when defaulting was bypassed, and reports that case in its error message.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaSchedulingStrategy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_scheduling_type: Option<ReplicaSchedulingType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_division_preference: Option<ReplicaDivisionPreference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight_preference: Option<ClusterPreferences>,
}

/// Static weights or a dynamic weight factor.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterPreferences {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub static_weight_list: Vec<StaticClusterWeight>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic_weight: Option<DynamicWeightFactor>,
}

/// A weight for the clusters an affinity selects.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StaticClusterWeight {
    pub target_cluster: ClusterAffinity,
    pub weight: i64,
}

/// Workload (anti-)affinity grouping keys; turned into `workloadAffinityGroups` upstream.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadAffinity {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<WorkloadAffinityTerm>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anti_affinity: Option<WorkloadAffinityTerm>,
}

/// The label key whose value groups workloads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadAffinityTerm {
    pub group_by_label_key: String,
}

impl Placement {
    /// `Duplicated` when `replicaScheduling` is absent, else its literal type (`None` when
    /// the type itself is unset).
    pub fn replica_scheduling_type(&self) -> Option<ReplicaSchedulingType> {
        match &self.replica_scheduling {
            None => Some(ReplicaSchedulingType::Duplicated),
            Some(s) => s.replica_scheduling_type,
        }
    }
}
