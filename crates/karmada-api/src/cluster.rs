//! `cluster.karmada.io/v1alpha1` `Cluster`.
//!
//! Upstream serves this kind from Karmada's aggregated API server; control planes without it
//! (tests, the local environment) install the CRD generated from these types
//! (`manifests/crds/cluster.karmada.io_clusters.yaml`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Taint;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Extra, ResourceList};

/// A member cluster: where it is, what it tolerates, what it can hold.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "cluster.karmada.io",
    version = "v1alpha1",
    kind = "Cluster",
    status = "ClusterStatus",
    shortname = "cluster",
    printcolumn = r#"{"name":"Mode","type":"string","jsonPath":".spec.syncMode"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// `Push` or `Pull`. Kept as a string: the scheduler only compares it with `Pull`.
    #[serde(default)]
    pub sync_mode: String,
    #[serde(
        default,
        rename = "apiEndpoint",
        skip_serializing_if = "String::is_empty"
    )]
    pub api_endpoint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalSecretReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impersonator_secret_ref: Option<LocalSecretReference>,
    #[serde(
        default,
        rename = "insecureSkipTLSVerification",
        skip_serializing_if = "Option::is_none"
    )]
    pub insecure_skip_tls_verification: Option<bool>,
    #[serde(default, rename = "proxyURL", skip_serializing_if = "String::is_empty")]
    pub proxy_url: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub proxy_header: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub provider: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub region: String,
    /// Legacy singular zone; the scheduler reads `zones`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub zone: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_models: Vec<ResourceModel>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

/// A secret reference by namespace and name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LocalSecretReference {
    pub namespace: String,
    pub name: String,
}

/// One grade of the cluster's node model: nodes whose resources fall in these ranges.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResourceModel {
    pub grade: u32,
    pub ranges: Vec<ResourceModelRange>,
}

/// A `[min, max)` range of one resource.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResourceModelRange {
    pub name: String,
    pub min: Quantity,
    pub max: Quantity,
}

/// What the cluster status controller reports.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kubernetes_version: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_enablements: Vec<ApiEnablement>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_summary: Option<NodeSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_summary: Option<ResourceSummary>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remedy_actions: Vec<String>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

/// Resources of one group-version served by the member cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiEnablement {
    pub group_version: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ApiResource>,
}

/// A served resource: plural name and kind.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ApiResource {
    pub name: String,
    pub kind: String,
}

/// Node counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeSummary {
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub total_num: i32,
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub ready_num: i32,
}

fn is_zero_i32(v: &i32) -> bool {
    *v == 0
}

/// Aggregate resources of the member cluster, the input of the general estimator.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSummary {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocatable: ResourceList,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocating: ResourceList,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocated: ResourceList,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allocatable_modelings: Vec<AllocatableModeling>,
}

/// How many nodes of a model grade the cluster has.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AllocatableModeling {
    pub grade: u32,
    pub count: i64,
}

impl Cluster {
    /// The cluster name (`metadata.name`, empty when unset).
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or("")
    }

    /// Whether the cluster is being deleted.
    pub fn is_terminating(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }
}

/// The `Cluster` CRD as YAML, for control planes without Karmada's aggregated API server.
///
/// The status subresource is on, so the scheduler's tests can write cluster status the way
/// Karmada's cluster-status controller does.
pub fn crd_yaml() -> String {
    use kube::CustomResourceExt;
    let crd = Cluster::crd();
    let mut out = String::from(
        "# Generated by `cargo run -q -p karmada-api --example gen-crd`; do not edit.\n",
    );
    out.push_str(&serde_yaml::to_string(&crd).expect("a CRD always serialises"));
    out
}
