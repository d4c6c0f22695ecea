//! Asking every candidate cluster's estimator at once: scheduler-core's `Estimator`.
//!
//! All calls of one fan-out run concurrently and share one deadline,
//! `--scheduler-estimator-timeout` from the start, so a failed, slow or missing
//! estimator costs at most that one timeout and the fan-out costs about one round trip,
//! however many clusters are asked. The result keeps the order of the clusters asked.
//!
//! Merging follows [`FailurePolicy`]: by default (the reference) any failure makes the whole
//! estimator fail for this binding and scheduler-core discards all its answers; the opt-in
//! per-cluster policy answers `-1` ("no opinion") for failed clusters instead.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use karmada_api::Cluster;
use karmada_api::work::ObjectReference;
use scheduler_core::estimator::{
    AssumedByCluster, AssumedWorkload, BoxFuture, EstimateRequest, Estimates, Estimator,
    EstimatorError, UNAUTHENTIC_REPLICA,
};
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;
use tonic::{Code, Status};

use crate::cache::ConnectionCache;
use crate::codec::MAX_RESPONSE_SIZE;
use crate::dial::aggregate;
use crate::metrics::CallResult;
use crate::options::FailurePolicy;
use crate::pb::EstimatorClient;
use crate::pb::messages as pb;
use crate::request::{self, OBJECT_METADATA_KEY};

/// Registry name of the accurate estimator.
pub const NAME: &str = "scheduler-estimator";

/// One estimator RPC: its request type, method name and how to call it.
pub trait Rpc: Clone + Send + Sync + 'static {
    /// gRPC method name, as used in metrics.
    const METHOD: &'static str;
    /// The name the reference's error texts use for the method.
    const CALLING: &'static str = Self::METHOD;
    /// Stamps the cluster name into the request.
    fn set_cluster(&mut self, cluster: &str);
    /// Puts the workloads assumed on this request's cluster into it (methods without the
    /// field ignore them).
    fn set_assumed(&mut self, _assumed: &[AssumedWorkload]) {}
    /// Calls the method and extracts the number answered.
    fn call(
        client: EstimatorClient<Channel>,
        request: tonic::Request<Self>,
    ) -> impl Future<Output = Result<i32, Status>> + Send;
}

impl Rpc for pb::MaxAvailableReplicasRequest {
    const METHOD: &'static str = "MaxAvailableReplicas";
    fn set_cluster(&mut self, cluster: &str) {
        self.cluster = cluster.to_string();
    }
    fn set_assumed(&mut self, assumed: &[AssumedWorkload]) {
        self.assumed_workloads = assumed.iter().map(request::assumed_workload).collect();
    }
    async fn call(
        mut client: EstimatorClient<Channel>,
        request: tonic::Request<Self>,
    ) -> Result<i32, Status> {
        Ok(client
            .max_available_replicas(request)
            .await?
            .into_inner()
            .max_replicas)
    }
}

impl Rpc for pb::MaxAvailableComponentSetsRequest {
    const METHOD: &'static str = "MaxAvailableComponentSets";
    fn set_cluster(&mut self, cluster: &str) {
        self.cluster = cluster.to_string();
    }
    fn set_assumed(&mut self, assumed: &[AssumedWorkload]) {
        self.assumed_workloads = assumed.iter().map(request::assumed_workload).collect();
    }
    async fn call(
        mut client: EstimatorClient<Channel>,
        request: tonic::Request<Self>,
    ) -> Result<i32, Status> {
        Ok(client
            .max_available_component_sets(request)
            .await?
            .into_inner()
            .max_sets)
    }
}

impl Rpc for pb::UnschedulableReplicasRequest {
    const METHOD: &'static str = "GetUnschedulableReplicas";
    const CALLING: &'static str = "UnschedulableReplicas";
    fn set_cluster(&mut self, cluster: &str) {
        self.cluster = cluster.to_string();
    }
    async fn call(
        mut client: EstimatorClient<Channel>,
        request: tonic::Request<Self>,
    ) -> Result<i32, Status> {
        Ok(client
            .get_unschedulable_replicas(request)
            .await?
            .into_inner()
            .unschedulable_replicas)
    }
}

/// Formats a status as grpc-go prints it: `rpc error: code = <Code> desc = <message>`.
pub fn format_status(status: &Status) -> String {
    let code = match status.code() {
        Code::Ok => "OK",
        Code::Cancelled => "Canceled",
        Code::Unknown => "Unknown",
        Code::InvalidArgument => "InvalidArgument",
        Code::DeadlineExceeded => "DeadlineExceeded",
        Code::NotFound => "NotFound",
        Code::AlreadyExists => "AlreadyExists",
        Code::PermissionDenied => "PermissionDenied",
        Code::ResourceExhausted => "ResourceExhausted",
        Code::FailedPrecondition => "FailedPrecondition",
        Code::Aborted => "Aborted",
        Code::OutOfRange => "OutOfRange",
        Code::Unimplemented => "Unimplemented",
        Code::Internal => "Internal",
        Code::Unavailable => "Unavailable",
        Code::DataLoss => "DataLoss",
        Code::Unauthenticated => "Unauthenticated",
    };
    format!("rpc error: code = {code} desc = {}", status.message())
}

/// A response over [`MAX_RESPONSE_SIZE`] as grpc-go reports it. tonic refuses it with its own
/// words (`OutOfRange`, `Error, decoded message length too large: found N bytes, the limit
/// is: M bytes`); the reference's logs and events say `ResourceExhausted`, `grpc: received
/// message larger than max (N vs. M)`. Every other status is returned as it is.
pub fn as_grpc_go(status: Status) -> Status {
    if status.code() == Code::OutOfRange
        && let Some(rest) = status
            .message()
            .strip_prefix("Error, decoded message length too large: found ")
        && let Some((found, rest)) = rest.split_once(" bytes, the limit is: ")
        && let Some(limit) = rest.strip_suffix(" bytes")
    {
        return Status::resource_exhausted(format!(
            "grpc: received message larger than max ({found} vs. {limit})"
        ));
    }
    status
}

/// The gRPC estimator client (`scheduler-estimator`).
#[derive(Clone)]
pub struct SchedulerEstimator {
    cache: Arc<ConnectionCache>,
}

/// One cluster to ask: its name and, when known, whether it is a Pull cluster.
struct Target<'a> {
    name: &'a str,
    pull: Option<bool>,
}

impl SchedulerEstimator {
    /// The estimator over `cache` (timeout and failure policy come from its options).
    pub fn new(cache: Arc<ConnectionCache>) -> Self {
        Self { cache }
    }

    /// The connection cache, for the daemon's Cluster and Service event handlers.
    pub fn cache(&self) -> &Arc<ConnectionCache> {
        &self.cache
    }

    /// `GetUnschedulableReplicas` for every cluster (the descheduler's call; the scheduler
    /// never makes it). `threshold` is sent in nanoseconds.
    pub async fn get_unschedulable_replicas(
        &self,
        clusters: &[String],
        resource: &ObjectReference,
        threshold: Duration,
    ) -> Result<Estimates, EstimatorError> {
        let template = pb::UnschedulableReplicasRequest {
            cluster: String::new(),
            resource: Some(pb::ObjectReference {
                api_version: resource.api_version.clone(),
                kind: resource.kind.clone(),
                namespace: resource.namespace.clone(),
                name: resource.name.clone(),
            }),
            unschedulable_threshold: i64::try_from(threshold.as_nanos()).unwrap_or(i64::MAX),
        };
        let targets: Vec<Target<'_>> = clusters
            .iter()
            .map(|c| Target {
                name: c,
                pull: None,
            })
            .collect();
        let object = request::object_metadata(resource);
        self.fan_out(&targets, &object, template, None).await
    }

    async fn fan_out<R: Rpc>(
        &self,
        targets: &[Target<'_>],
        object: &str,
        template: R,
        assumed: Option<&AssumedByCluster>,
    ) -> Result<Estimates, EstimatorError> {
        let options = self.cache.options();
        let deadline = tokio::time::Instant::now() + options.timeout;
        let object = MetadataValue::try_from(object).ok();
        let calls = targets.iter().map(|t| {
            let mut message = template.clone();
            if let Some(a) = assumed.and_then(|m| m.get(t.name)) {
                message.set_assumed(a);
            }
            self.ask(t, object.clone(), message, deadline)
        });
        let answers = futures::future::join_all(calls).await;

        let mut estimates = Vec::with_capacity(targets.len());
        let mut errors = Vec::new();
        for (target, answer) in targets.iter().zip(answers) {
            match answer {
                Ok(replicas) => estimates.push((target.name.to_string(), replicas)),
                Err(error) => {
                    estimates.push((target.name.to_string(), UNAUTHENTIC_REPLICA));
                    errors.push(error);
                }
            }
        }
        if errors.is_empty() || options.failure_policy == FailurePolicy::PerCluster {
            Ok(estimates)
        } else {
            Err(EstimatorError(aggregate(&errors)))
        }
    }

    /// Asks one cluster, within `deadline`.
    async fn ask<R: Rpc>(
        &self,
        target: &Target<'_>,
        object: Option<MetadataValue<tonic::metadata::Ascii>>,
        mut message: R,
        deadline: tokio::time::Instant,
    ) -> Result<i32, String> {
        let cluster = target.name;
        let started = Instant::now();
        let connection = tokio::time::timeout_at(
            deadline,
            self.cache.connection_for_call(cluster, target.pull),
        )
        .await
        .ok()
        .flatten();
        let Some(connection) = connection else {
            self.cache.observe_call(
                cluster,
                R::METHOD,
                CallResult::NoConnection,
                started.elapsed(),
            );
            return Err(format!(
                "cluster {cluster} does not exist in estimator cache"
            ));
        };
        message.set_cluster(cluster);
        let mut request = tonic::Request::new(message);
        if let Some(object) = object {
            request.metadata_mut().insert(OBJECT_METADATA_KEY, object);
        }
        request.set_timeout(deadline.saturating_duration_since(tokio::time::Instant::now()));
        let client =
            EstimatorClient::new(connection.channel()).max_decoding_message_size(MAX_RESPONSE_SIZE);
        let outcome = tokio::time::timeout_at(deadline, R::call(client, request)).await;
        let (result, status) = match outcome {
            Ok(Ok(replicas)) => {
                self.cache
                    .observe_call(cluster, R::METHOD, CallResult::Success, started.elapsed());
                self.cache.record_call(cluster, Ok(()));
                return Ok(replicas);
            }
            // Past the deadline, whoever noticed first (our timer, or tonic's own
            // `grpc-timeout` enforcement, which says "Cancelled: Timeout expired"), it is the
            // deadline that failed the call, and grpc-go reports it so.
            Ok(Err(_)) if tokio::time::Instant::now() >= deadline => (
                CallResult::Timeout,
                Status::deadline_exceeded("context deadline exceeded"),
            ),
            Ok(Err(status)) if status.code() == Code::DeadlineExceeded => {
                (CallResult::Timeout, status)
            }
            Ok(Err(status)) => (CallResult::Error, as_grpc_go(status)),
            Err(_) => (
                CallResult::Timeout,
                Status::deadline_exceeded("context deadline exceeded"),
            ),
        };
        self.cache
            .observe_call(cluster, R::METHOD, result, started.elapsed());
        let error = format!(
            "gRPC request cluster({cluster}) estimator error when calling {}: {}",
            R::CALLING,
            format_status(&status)
        );
        self.cache.record_call(cluster, Err(&error));
        Err(error)
    }
}

fn targets<'a>(clusters: &'a [&'a Cluster]) -> Vec<Target<'a>> {
    clusters
        .iter()
        .map(|c| Target {
            name: c.metadata.name.as_deref().unwrap_or_default(),
            pull: Some(c.spec.sync_mode == crate::cache::PULL),
        })
        .collect()
}

impl Estimator for SchedulerEstimator {
    fn name(&self) -> &str {
        NAME
    }

    fn max_available_replicas<'a>(
        &'a self,
        clusters: &'a [&'a Cluster],
        request: EstimateRequest<'a>,
    ) -> BoxFuture<'a, Result<Estimates, EstimatorError>> {
        Box::pin(async move {
            let object = request::object_metadata(request.resource);
            let template = request::max_available_replicas(&request);
            self.fan_out(&targets(clusters), &object, template, request.assumed)
                .await
        })
    }

    fn max_available_component_sets<'a>(
        &'a self,
        clusters: &'a [&'a Cluster],
        request: EstimateRequest<'a>,
    ) -> BoxFuture<'a, Result<Estimates, EstimatorError>> {
        Box::pin(async move {
            let object = request::object_metadata(request.resource);
            let template = request::max_available_component_sets(&request);
            self.fan_out(&targets(clusters), &object, template, request.assumed)
                .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_print_like_grpc_go() {
        assert_eq!(
            format_status(&Status::deadline_exceeded("context deadline exceeded")),
            "rpc error: code = DeadlineExceeded desc = context deadline exceeded"
        );
        assert_eq!(
            format_status(&Status::unavailable("connection refused")),
            "rpc error: code = Unavailable desc = connection refused"
        );
    }

    #[test]
    fn an_oversized_response_is_reported_in_grpc_go_words() {
        let tonic = Status::out_of_range(
            "Error, decoded message length too large: found 536870912 bytes, the limit is: 4194304 bytes",
        );
        assert_eq!(
            format_status(&as_grpc_go(tonic)),
            "rpc error: code = ResourceExhausted desc = grpc: received message larger than max (536870912 vs. 4194304)"
        );
        // Other statuses, including other OutOfRange ones, are left alone.
        let other = Status::out_of_range("replicas out of range");
        assert_eq!(as_grpc_go(other.clone()).message(), other.message());
        assert_eq!(as_grpc_go(other).code(), Code::OutOfRange);
        assert_eq!(as_grpc_go(Status::internal("boom")).code(), Code::Internal);
    }
}
