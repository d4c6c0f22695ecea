//! What one scheduling decision looked at, for `simulate -o explain` and debugging.
//!
//! Recording is opt-in: the pipeline takes an `Option<&mut AttemptTrace>` and does no extra work
//! (no clones, no strings) when it is `None`.

use serde::Serialize;

use karmada_api::work::TargetCluster;

/// Every attempt made for one binding (one per `clusterAffinities` term tried, else one).
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Trace {
    /// In the order they ran.
    pub attempts: Vec<AttemptTrace>,
}

/// One run of the pipeline.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttemptTrace {
    /// Index of the `clusterAffinities` term tried, if the placement has terms.
    pub affinity_index: Option<usize>,
    /// Its `affinityName`.
    pub affinity_name: Option<String>,
    /// Filter plugins, in the order they ran.
    pub filter_plugins: Vec<String>,
    /// One entry per cluster of the snapshot, sorted by name.
    pub clusters: Vec<ClusterTrace>,
    /// Estimators asked, with their failure if they failed as a whole.
    pub estimators: Vec<EstimatorTrace>,
    /// True when replicas are 0 and there are no components: no estimator is asked and every
    /// cluster counts as able to take `i32::MAX`.
    pub estimation_skipped: bool,
    /// The replicas selection had to cover (`-1`: capacity not checked).
    pub need_replicas: i32,
    /// The feasible clusters in canonical order (overflow tier, score, available, name).
    pub canonical_order: Vec<String>,
    /// Region groups with their scores, when a region constraint applies.
    pub regions: Vec<GroupTrace>,
    /// Regions chosen by the region search, best first.
    pub chosen_regions: Vec<String>,
    /// The candidates handed to replica assignment, in selection order.
    pub selected: Vec<String>,
    /// The division, when the attempt succeeded.
    pub result: Option<Vec<TargetCluster>>,
    /// The error, when it failed.
    pub error: Option<String>,
}

/// What happened to one cluster.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterTrace {
    /// `metadata.name`.
    pub name: String,
    /// The filter verdict.
    pub verdict: Verdict,
    /// Score per score plugin (feasible clusters only).
    pub scores: Vec<(String, i64)>,
    /// Their sum.
    pub score: Option<i64>,
    /// Each estimator's answer for this cluster (`None`: no answer, `-1`: no opinion).
    pub estimates: Vec<(String, Option<i32>)>,
    /// The merged estimate (minimum of the answers).
    pub allocatable_replicas: Option<i32>,
    /// Merged estimate plus the replicas already in `spec.clusters`.
    pub available_replicas: Option<i64>,
    /// Overflow tier (0 primary, k+1 the k-th overflow affinity, 1000 none).
    pub overflow_order: Option<i32>,
}

/// The filter verdict of one cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "verdict")]
pub enum Verdict {
    /// Passed every filter plugin.
    #[default]
    Feasible,
    /// Being deleted: skipped before filtering, counted in "0/N clusters".
    Deleting,
    /// Rejected by this plugin for these reasons.
    Rejected {
        plugin: String,
        reasons: Vec<String>,
    },
}

/// One estimator's run.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EstimatorTrace {
    /// Registry name (`general-estimator`, `scheduler-estimator`, ...).
    pub name: String,
    /// Set when the estimator failed and all its answers were ignored.
    pub error: Option<String>,
}

/// A topology group and its score.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupTrace {
    /// Region name.
    pub name: String,
    /// Group score.
    pub score: i64,
    /// Sum of the members' available replicas.
    pub available_replicas: i64,
    /// Members in canonical order.
    pub clusters: Vec<String>,
}
