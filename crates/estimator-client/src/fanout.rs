//! Asking every candidate cluster's estimator at once: scheduler-core's `Estimator`.
//!
//! All calls of one fan-out run concurrently, each within `--scheduler-estimator-timeout`
//! (how the wait for a call slot counts is below), so a failed, slow or missing
//! estimator costs at most that one timeout and the fan-out costs about one round trip,
//! however many clusters are asked. The result keeps the order of the clusters asked.
//!
//! The process has at most [`MAX_CALLS_IN_FLIGHT`] calls in flight over all its fan-outs: a
//! call's state (a few KiB) is only created once it may start, so 16 bindings fanning out to
//! thousands of clusters queue behind a bounded set instead of holding every call at once.
//! Fan-outs take the slots in turn, in the order they asked: the one whose turn it is starts a
//! call on each slot as it frees up and passes the turn on once all its calls have started, so
//! no slot stays idle while the previous fan-out's last calls finish, and one hung estimator
//! holds one slot, not every fan-out behind it. Waiting for other bindings' calls is queueing,
//! as the reference's bindings wait in its queue, and never costs a call its timeout: each call
//! gets the whole timeout from its start until the fan-out has started as many calls as there
//! are slots. Only a fan-out to more clusters than there are slots then waits for its own
//! calls, and its later calls share one deadline; those that cannot start before it fail as
//! timed out, as a call that started and did not finish would.
//!
//! Merging follows [`FailurePolicy`]: by default (the reference) any failure makes the whole
//! estimator fail for this binding and scheduler-core discards all its answers; the opt-in
//! per-cluster policy answers `-1` ("no opinion") for failed clusters instead.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::stream::FuturesUnordered;
use futures::{FutureExt as _, StreamExt as _};
use karmada_api::Cluster;
use karmada_api::work::ObjectReference;
use scheduler_core::estimator::{
    Ask, AssumedByCluster, AssumedWorkload, BoxFuture, EstimateRequest, Estimates, Estimator,
    EstimatorError, UNAUTHENTIC_REPLICA,
};
use tokio::sync::Semaphore;
use tonic::metadata::MetadataValue;
use tonic::{Code, Status};

use crate::cache::ConnectionCache;
use crate::codec::{Encoded, EncodedCodec, MAX_RESPONSE_SIZE};
use crate::dial::aggregate;
use crate::metrics::CallResult;
use crate::options::FailurePolicy;
use crate::pb::messages as pb;
use crate::request::{self, OBJECT_METADATA_KEY};
use crate::transport::Channel;
use crate::unary;

/// Registry name of the accurate estimator.
pub const NAME: &str = "scheduler-estimator";

/// Estimator calls one process has in flight at most, over all its fan-outs. Far above what
/// keeps the estimators and two cores busy (a few dozen calls of 1 ms saturate a core), far
/// below the tens of thousands 16 concurrent fan-outs to thousands of clusters would start.
pub const MAX_CALLS_IN_FLIGHT: usize = 2048;

/// One estimator RPC: its request type, method name and how to call it.
pub trait Rpc: prost::Message + Default + Clone + Send + Sync + 'static {
    /// gRPC method name, as used in metrics.
    const METHOD: &'static str;
    /// The name the reference's error texts use for the method.
    const CALLING: &'static str = Self::METHOD;
    /// The method's HTTP/2 path.
    const PATH: &'static str;
    /// The response message.
    type Response: prost::Message + Default + Send + 'static;
    /// Stamps the cluster name into the request.
    fn set_cluster(&mut self, cluster: &str);
    /// Puts the workloads assumed on this request's cluster into it (methods without the
    /// field ignore them).
    fn set_assumed(&mut self, _assumed: &[AssumedWorkload]) {}
    /// The number answered.
    fn answer(response: Self::Response) -> i32;

    /// The encoding of a message holding only one cluster's own fields (its name, the
    /// workloads assumed on it): what [`Encoded`] appends to the shared template.
    fn own_fields(cluster: &str, assumed: Option<&[AssumedWorkload]>) -> Vec<u8> {
        let mut own = Self::default();
        own.set_cluster(cluster);
        if let Some(a) = assumed {
            own.set_assumed(a);
        }
        own.encode_to_vec()
    }
}

/// Sends one pre-encoded request of `R` on `channel` (as the generated client would, without
/// encoding the message again) and reads the answer held to its unary shape
/// ([`unary::read_answer`]; tonic's `unary` would read on past the first message).
async fn call<R: Rpc>(channel: Channel, request: tonic::Request<Encoded>) -> Result<i32, Status> {
    let origin = channel.origin().clone();
    let mut grpc = tonic::client::Grpc::with_origin(channel, origin)
        .max_decoding_message_size(MAX_RESPONSE_SIZE);
    grpc.ready()
        .await
        .map_err(|e| Status::unknown(format!("Service was not ready: {e}")))?;
    let path = http::uri::PathAndQuery::from_static(R::PATH);
    let response = grpc
        .server_streaming(request, path, EncodedCodec::<R::Response>::default())
        .await?;
    Ok(R::answer(unary::read_answer(response.into_inner()).await?))
}

/// The gRPC service of the estimator protocol, for [`Rpc::PATH`].
macro_rules! path {
    ($method:literal) => {
        concat!(
            "/github.com.karmada_io.karmada.pkg.estimator.service.Estimator/",
            $method
        )
    };
}

impl Rpc for pb::MaxAvailableReplicasRequest {
    const METHOD: &'static str = "MaxAvailableReplicas";
    const PATH: &'static str = path!("MaxAvailableReplicas");
    type Response = pb::MaxAvailableReplicasResponse;
    fn set_cluster(&mut self, cluster: &str) {
        self.cluster = cluster.to_string();
    }
    fn set_assumed(&mut self, assumed: &[AssumedWorkload]) {
        self.assumed_workloads = assumed.iter().map(request::assumed_workload).collect();
    }
    fn answer(response: Self::Response) -> i32 {
        response.max_replicas
    }
}

impl Rpc for pb::MaxAvailableComponentSetsRequest {
    const METHOD: &'static str = "MaxAvailableComponentSets";
    const PATH: &'static str = path!("MaxAvailableComponentSets");
    type Response = pb::MaxAvailableComponentSetsResponse;
    fn set_cluster(&mut self, cluster: &str) {
        self.cluster = cluster.to_string();
    }
    fn set_assumed(&mut self, assumed: &[AssumedWorkload]) {
        self.assumed_workloads = assumed.iter().map(request::assumed_workload).collect();
    }
    fn answer(response: Self::Response) -> i32 {
        response.max_sets
    }
}

impl Rpc for pb::UnschedulableReplicasRequest {
    const METHOD: &'static str = "GetUnschedulableReplicas";
    const CALLING: &'static str = "UnschedulableReplicas";
    const PATH: &'static str = path!("GetUnschedulableReplicas");
    type Response = pb::UnschedulableReplicasResponse;
    fn set_cluster(&mut self, cluster: &str) {
        self.cluster = cluster.to_string();
    }
    fn answer(response: Self::Response) -> i32 {
        response.unschedulable_replicas
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
    /// Slots for calls in flight (see [`MAX_CALLS_IN_FLIGHT`]); only the fan-out holding
    /// `turn` takes them.
    slots: Arc<Semaphore>,
    /// How many slots there are: the most one fan-out takes.
    slot_count: usize,
    /// Held by the fan-out taking slots; FIFO, so fan-outs start in the order they asked.
    turn: Arc<tokio::sync::Mutex<()>>,
}

/// One cluster to ask: its name and, when known, whether it is a Pull cluster.
struct Target<'a> {
    name: &'a str,
    pull: Option<bool>,
}

impl SchedulerEstimator {
    /// The estimator over `cache` (timeout and failure policy come from its options).
    pub fn new(cache: Arc<ConnectionCache>) -> Self {
        Self::with_call_slots(cache, MAX_CALLS_IN_FLIGHT)
    }

    /// The estimator with at most `slots` calls in flight (tests use a small number).
    pub fn with_call_slots(cache: Arc<ConnectionCache>, slots: usize) -> Self {
        // Within what one `acquire_many` can ask for.
        let slot_count = slots.clamp(1, u32::MAX as usize);
        Self {
            cache,
            slots: Arc::new(Semaphore::new(slot_count)),
            slot_count,
            turn: Arc::default(),
        }
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
        let object = MetadataValue::try_from(object).ok();
        // Encoded once; each call appends its cluster's own fields.
        let shared = Bytes::from(template.encode_to_vec());
        // The most calls this fan-out runs at once.
        let width = targets.len().clamp(1, self.slot_count);
        // Fan-outs take slots in turn, in the order they asked, and keep the turn until every
        // one of their calls has started; each call gives its slot back when it ends, so the
        // next fan-out starts on the slots the previous one's last calls no longer use.
        let turn = self.turn.lock().await;
        // Until `width` calls have started, the fan-out waits for other fan-outs' calls, and
        // each call it starts gets the whole timeout from its start; from then on it only
        // waits for its own calls, and every later call shares the `width`-th call's deadline.
        let mut shared_deadline: Option<tokio::time::Instant> = None;
        let mut running = FuturesUnordered::new();
        let mut done: Vec<(usize, Result<i32, String>)> = Vec::with_capacity(targets.len());
        for (i, t) in targets.iter().enumerate() {
            // Answers that come in while this call waits for its slot are taken meanwhile.
            let slot = loop {
                tokio::select! {
                    biased;
                    Some(answer) = running.next(), if !running.is_empty() => done.push(answer),
                    slot = self.slot(shared_deadline) => break slot,
                }
            };
            let deadline =
                shared_deadline.unwrap_or_else(|| tokio::time::Instant::now() + options.timeout);
            if i + 1 == width {
                shared_deadline = Some(deadline);
            }
            let own = R::own_fields(
                t.name,
                assumed.and_then(|m| m.get(t.name)).map(Vec::as_slice),
            );
            let message = Encoded::new(shared.clone(), own);
            running.push(
                self.ask::<R>(t, object.clone(), message, deadline)
                    .map(move |answer| {
                        drop(slot);
                        (i, answer)
                    }),
            );
        }
        drop(turn);
        while let Some(answer) = running.next().await {
            done.push(answer);
        }
        done.sort_unstable_by_key(|(i, _)| *i);
        let answers = done.into_iter().map(|(_, answer)| answer);

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

    /// A slot for the next call. Once the fan-out's later calls share a deadline, the wait is
    /// bounded by it: `None` then means the deadline passed first, and the call fails unsent.
    async fn slot(
        &self,
        deadline: Option<tokio::time::Instant>,
    ) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let acquire = self.slots.clone().acquire_owned();
        match deadline {
            // `Err` only once closed, which these slots never are.
            None => acquire.await.ok(),
            Some(d) => tokio::time::timeout_at(d, acquire).await.ok()?.ok(),
        }
    }

    /// Asks one cluster, within `deadline`.
    async fn ask<R: Rpc>(
        &self,
        target: &Target<'_>,
        object: Option<MetadataValue<tonic::metadata::Ascii>>,
        message: Encoded,
        deadline: tokio::time::Instant,
    ) -> Result<i32, String> {
        let cluster = target.name;
        let started = Instant::now();
        if tokio::time::Instant::now() >= deadline {
            // More clusters than slots, and the calls ahead of it used up the deadline: timed
            // out before it started.
            return self.failed::<R>(
                cluster,
                started,
                CallResult::Timeout,
                &Status::deadline_exceeded("context deadline exceeded"),
            );
        }
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
        let mut request = tonic::Request::new(message);
        if let Some(object) = object {
            request.metadata_mut().insert(OBJECT_METADATA_KEY, object);
        }
        request.set_timeout(deadline.saturating_duration_since(tokio::time::Instant::now()));
        let outcome =
            tokio::time::timeout_at(deadline, call::<R>(connection.channel(), request)).await;
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
        self.failed::<R>(cluster, started, result, &status)
    }

    /// Counts and records a failed call of `cluster`; the error text the reference gives.
    fn failed<R: Rpc>(
        &self,
        cluster: &str,
        started: Instant,
        result: CallResult,
        status: &Status,
    ) -> Result<i32, String> {
        self.cache
            .observe_call(cluster, R::METHOD, result, started.elapsed());
        let error = format!(
            "gRPC request cluster({cluster}) estimator error when calling {}: {}",
            R::CALLING,
            format_status(status)
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

    fn estimate<'a>(
        &'a self,
        clusters: &'a [&'a Cluster],
        request: EstimateRequest<'a>,
    ) -> BoxFuture<'a, Result<Estimates, EstimatorError>> {
        Box::pin(async move {
            let object = request::object_metadata(request.resource);
            let targets = targets(clusters);
            match request.ask {
                Ask::Replicas => {
                    let template = request::max_available_replicas(&request);
                    self.fan_out(&targets, &object, template, request.assumed)
                        .await
                }
                Ask::ComponentSets => {
                    let template = request::max_available_component_sets(&request);
                    self.fan_out(&targets, &object, template, request.assumed)
                        .await
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use karmada_api::work::{Component, ComponentReplicaRequirements};

    /// What the estimator decodes from [`Encoded`] bytes (template encoded once, the
    /// cluster's own fields appended).
    fn sent<R: Rpc>(template: &R, cluster: &str, assumed: Option<&[AssumedWorkload]>) -> R {
        let bytes = Encoded::new(
            Bytes::from(template.encode_to_vec()),
            R::own_fields(cluster, assumed),
        )
        .to_vec();
        R::decode(bytes.as_slice()).expect("decodes")
    }

    fn assumed() -> Vec<AssumedWorkload> {
        let cpu = [(
            "cpu".to_string(),
            k8s_openapi::apimachinery::pkg::api::resource::Quantity("250m".into()),
        )]
        .into_iter()
        .collect();
        vec![AssumedWorkload {
            namespace: "ns-a".into(),
            components: vec![Component {
                name: "web".into(),
                replicas: 3,
                replica_requirements: Some(ComponentReplicaRequirements {
                    resource_request: cpu,
                    priority_class_name: "high".into(),
                    ..Default::default()
                }),
            }],
        }]
    }

    #[test]
    fn a_request_encoded_once_decodes_as_the_cluster_s_own_message() {
        let template = pb::MaxAvailableReplicasRequest {
            cluster: String::new(),
            replica_requirements: Some(pb::ReplicaRequirements {
                namespace: "default".into(),
                priority_class_name: "p".into(),
                resource_request_bytes: [("memory".to_string(), vec![1, 2, 3])]
                    .into_iter()
                    .collect(),
                ..Default::default()
            }),
            assumed_workloads: Vec::new(),
        };
        let assumed = assumed();
        for a in [None, Some(assumed.as_slice()), Some(&[][..])] {
            let mut expected = template.clone();
            expected.set_cluster("member-7");
            if let Some(a) = a {
                expected.set_assumed(a);
            }
            assert_eq!(sent(&template, "member-7", a), expected);
        }

        let template = pb::MaxAvailableComponentSetsRequest {
            cluster: String::new(),
            components: vec![pb::Component {
                name: "db".into(),
                replicas: 2,
                replica_requirements: None,
            }],
            namespace: "team".into(),
            assumed_workloads: Vec::new(),
        };
        let mut expected = template.clone();
        expected.set_cluster("m");
        expected.set_assumed(&assumed);
        assert_eq!(sent(&template, "m", Some(&assumed)), expected);

        let template = pb::UnschedulableReplicasRequest {
            cluster: String::new(),
            resource: Some(pb::ObjectReference {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                namespace: "ns".into(),
                name: "web".into(),
            }),
            unschedulable_threshold: 5,
        };
        let mut expected = template.clone();
        expected.set_cluster("c");
        // The method has no assumed workloads: they are ignored.
        assert_eq!(sent(&template, "c", Some(&assumed)), expected);
    }

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
