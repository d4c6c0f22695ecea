//! Per-cluster facts gathered between scoring and replica assignment.

use karmada_api::cluster::Cluster;

/// A feasible cluster with everything selection and assignment need to know about it.
#[derive(Clone, Debug)]
pub struct ClusterDetail<'a> {
    /// `metadata.name`.
    pub name: &'a str,
    /// The cluster object from the snapshot.
    pub cluster: &'a Cluster,
    /// Sum of the score plugins (100 for a cluster in `spec.clusters` with the defaults).
    pub score: i64,
    /// 0 for the inline affinity of the observed term, k+1 for its k-th overflow affinity,
    /// 1000 when none matches.
    pub overflow_order: i32,
    /// Merged estimator answer (`i32::MAX` for non-workloads).
    pub allocatable_replicas: i32,
    /// `allocatable_replicas` plus the replicas already in `spec.clusters`, in i64.
    pub available_replicas: i64,
    /// Position of `cluster` in the snapshot the pipeline runs on (the snapshot is sorted by
    /// name, so positions order details as names do), letting ties be broken and static
    /// weights answered without reading names or clusters; `None` outside the pipeline.
    /// Details handled together must all come from one snapshot, or all have `None`.
    pub position: Option<usize>,
}
