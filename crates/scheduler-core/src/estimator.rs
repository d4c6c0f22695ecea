//! Estimators: how many replicas (or component sets) each cluster can still take.
//!
//! The core asks every registered estimator about the feasible clusters and keeps, per
//! cluster, the minimum of the answers (`merge` semantics live in the pipeline). The
//! general estimator reads `status.resourceSummary`; the gRPC client of `estimator-client`
//! asks the member cluster's `karmada-scheduler-estimator`; tests plug in stubs.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use karmada_api::cluster::Cluster;
use karmada_api::work::{Component, ObjectReference, ReplicaRequirements};

/// "No opinion" for one cluster: never lowers the merged value.
pub const UNAUTHENTIC_REPLICA: i32 = -1;

/// A boxed, sendable future, so that the trait stays object safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A workload already placed on a cluster whose pods the cluster may not report yet
/// (`SchedulingOvercommitProtection`): estimators count its resources as taken. A
/// single-template workload is one component named after its template.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AssumedWorkload {
    pub namespace: String,
    pub components: Vec<Component>,
}

/// The workloads assumed on each cluster of one estimate (clusters without any are absent).
pub type AssumedByCluster = HashMap<String, Vec<AssumedWorkload>>;

/// Where the pipeline reads the assumed workloads of a cluster from (the daemon's
/// assumption cache; `simulate`'s prior placements).
pub trait AssumptionSource: Send + Sync {
    /// Every workload assumed on `cluster`, in a stable order.
    fn assumed_on(&self, cluster: &str) -> Vec<AssumedWorkload>;
}

/// What each cluster is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ask {
    /// Replicas of the one template (`MaxAvailableReplicas`).
    Replicas,
    /// Complete sets of the components (`MaxAvailableComponentSets`, gate
    /// `MultiplePodTemplatesScheduling`).
    ComponentSets,
}

/// What an estimator is asked about one binding.
#[derive(Clone, Copy, Debug)]
pub struct EstimateRequest<'a> {
    /// Replicas or component sets.
    pub ask: Ask,
    /// The resource template (`spec.resource`), sent as gRPC metadata for tracing.
    pub resource: &'a ObjectReference,
    /// `spec.replicaRequirements`.
    pub replica_requirements: Option<&'a ReplicaRequirements>,
    /// `spec.components`, for the component-set path.
    pub components: &'a [Component],
    /// `spec.resource.namespace`, sent with component-set requests.
    pub namespace: &'a str,
    /// Workloads assumed on the clusters asked about (`SchedulingOvercommitProtection`);
    /// `None` with the gate off.
    pub assumed: Option<&'a AssumedByCluster>,
}

impl EstimateRequest<'_> {
    /// The workloads assumed on `cluster` (none with the gate off).
    pub fn assumed_on(&self, cluster: &str) -> &[AssumedWorkload] {
        self.assumed
            .and_then(|m| m.get(cluster))
            .map_or(&[], Vec::as_slice)
    }
}

/// An estimator failed as a whole; the pipeline then ignores all its answers for this binding.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EstimatorError(pub String);

/// Answers per cluster, in the order of the clusters asked; `-1` means "no opinion".
pub type Estimates = Vec<(String, i32)>;

/// Answers of [`Estimator::estimate_shared`]: named as [`Estimates`], or exactly one per cluster
/// asked, in that order (no name to copy per cluster).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SharedEstimates {
    /// As from the plain methods.
    Named(Estimates),
    /// `answers[i]` is about `clusters[i]`; `-1` means "no opinion".
    InOrder(Vec<i32>),
}

/// A source of replica estimates.
pub trait Estimator: Send + Sync {
    /// Registry name (`general-estimator`, `scheduler-estimator`), for logs and traces.
    fn name(&self) -> &str;

    /// Per `request.ask`, the most replicas of one template, or complete sets of
    /// `request.components`, each cluster can take.
    fn estimate<'a>(
        &'a self,
        clusters: &'a [&'a Cluster],
        request: EstimateRequest<'a>,
    ) -> BoxFuture<'a, Result<Estimates, EstimatorError>>;

    /// [`Estimator::estimate`] for clusters the caller holds in `Arc`s (the snapshot's):
    /// `shared[i]` is `clusters[i]`. The answers must be the same; an estimator may use the
    /// identity of the `Arc`s to reuse work across calls (a cluster behind an `Arc` someone
    /// else also holds is never mutated) and answer in order. By default, the plain method's
    /// named answers.
    fn estimate_shared<'a>(
        &'a self,
        clusters: &'a [&'a Cluster],
        shared: &'a [&'a Arc<Cluster>],
        request: EstimateRequest<'a>,
    ) -> BoxFuture<'a, Result<SharedEstimates, EstimatorError>> {
        let _ = shared;
        let answer = self.estimate(clusters, request);
        Box::pin(async move { answer.await.map(SharedEstimates::Named) })
    }
}
