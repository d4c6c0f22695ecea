//! The one karmada-scheduler-estimator stand-in of the tests, the benches and the bench: a real
//! tonic gRPC server on loopback, so that the client under test speaks the real protocol, with
//! answers decided per call (a table per cluster over a rule), and what it received counted
//! and, on demand, recorded.
//!
//! One [`FakeEstimator`] can play any number of clusters (the cluster name travels in each
//! request) and listen on any number of ports: one ([`FakeEstimator::serve`]), a chosen one
//! with TLS ([`FakeEstimator::serve_on`]), or one per cluster as the schedulers see real
//! estimators ([`FakeEstimator::serve_per_cluster`]), where a port can refuse connections,
//! come back or move.
//!
//! Answers no well-behaved server gives (several messages to a unary call, an endless
//! stream, bytes that are not HTTP/2) come from raw servers in [`hostile`].

pub mod hostile;

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::Context as _;
use estimator_client::options::{DEFAULT_PORT, DEFAULT_SERVICE_NAMESPACE, DEFAULT_SERVICE_PREFIX};
use estimator_client::pb::messages as pb;
use estimator_client::pb::{EstimatorClient, EstimatorServer, EstimatorService};
use estimator_client::request::OBJECT_METADATA_KEY;
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Certificate, Identity, Server, ServerTlsConfig};
use tonic::{Request, Response, Status};

/// The calls of the estimator service.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    MaxAvailableReplicas,
    MaxAvailableComponentSets,
    GetUnschedulableReplicas,
}

impl Method {
    /// The gRPC method name.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::MaxAvailableReplicas => "MaxAvailableReplicas",
            Method::MaxAvailableComponentSets => "MaxAvailableComponentSets",
            Method::GetUnschedulableReplicas => "GetUnschedulableReplicas",
        }
    }
}

/// So that a test can compare with the method's name.
impl PartialEq<&str> for Method {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// What the fake does with one call; the number answers whichever method was called
/// (replicas, component sets or unschedulable replicas).
#[derive(Clone, Debug)]
pub enum Behaviour {
    /// Answer this number.
    Answer(i32),
    /// Answer this number after this long.
    AnswerAfter(i32, Duration),
    /// Never answer.
    Hang,
    /// Fail with this status.
    Fail(Status),
}

/// One call as the fake received it: what the rule decides on and what is recorded.
#[derive(Clone, Debug)]
pub struct Call {
    pub method: Method,
    pub cluster: String,
    /// The `object` metadata the caller sent.
    pub object: Option<String>,
    /// The message, in the field of its method.
    pub replicas_request: Option<pb::MaxAvailableReplicasRequest>,
    pub sets_request: Option<pb::MaxAvailableComponentSetsRequest>,
    pub unschedulable_request: Option<pb::UnschedulableReplicasRequest>,
}

impl Call {
    fn new<T>(method: Method, cluster: &str, request: &Request<T>) -> Self {
        Call {
            method,
            cluster: cluster.to_string(),
            object: request
                .metadata()
                .get(OBJECT_METADATA_KEY)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
            replicas_request: None,
            sets_request: None,
            unschedulable_request: None,
        }
    }
}

/// Calls received; each counts once, under its method, or under `hung` if it was never
/// answered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub max_available_replicas: u64,
    pub max_available_component_sets: u64,
    pub unschedulable_replicas: u64,
    pub hung: u64,
}

impl Counts {
    /// Calls not hung (answered or failed).
    pub fn answered(&self) -> u64 {
        self.max_available_replicas
            + self.max_available_component_sets
            + self.unschedulable_replicas
    }

    fn add(&mut self, method: Method, hung: bool) {
        let n = match (hung, method) {
            (true, _) => &mut self.hung,
            (false, Method::MaxAvailableReplicas) => &mut self.max_available_replicas,
            (false, Method::MaxAvailableComponentSets) => &mut self.max_available_component_sets,
            (false, Method::GetUnschedulableReplicas) => &mut self.unschedulable_replicas,
        };
        *n += 1;
    }
}

type Rule = dyn Fn(&Call) -> Behaviour + Send + Sync;

#[derive(Default)]
struct State {
    /// Clusters that hang whatever the table or the rule say.
    hanging: HashSet<String>,
    /// Per cluster, ahead of the rule.
    table: HashMap<String, Behaviour>,
    counts: HashMap<String, Counts>,
    /// `None`: not recording.
    recording: Option<Vec<Call>>,
}

/// The fake: cheap to clone, the clones share the table, the counts and the recording.
/// Clusters neither in the table nor answered by a rule fail, as a real estimator whose
/// `--cluster-name` differs.
#[derive(Clone)]
pub struct FakeEstimator {
    rule: Option<Arc<Rule>>,
    state: Arc<Mutex<State>>,
}

impl Default for FakeEstimator {
    /// Fails every cluster until given behaviours; records every call.
    fn default() -> Self {
        FakeEstimator {
            rule: None,
            state: Arc::new(Mutex::new(State {
                recording: Some(Vec::new()),
                ..State::default()
            })),
        }
    }
}

impl FakeEstimator {
    /// Answers `answer` for every cluster.
    pub fn answering(answer: i32) -> Self {
        Self::from_fn(move |_| Behaviour::Answer(answer))
    }

    /// Decides every call with `rule` (the table still wins for its clusters). The rule runs
    /// on the server's tasks, outside the fake's lock.
    pub fn from_fn(rule: impl Fn(&Call) -> Behaviour + Send + Sync + 'static) -> Self {
        FakeEstimator {
            rule: Some(Arc::new(rule)),
            ..Self::default()
        }
    }

    /// Answers each listed cluster its number and fails the others.
    pub fn table(answers: &[(&str, i32)]) -> Self {
        answers.iter().fold(Self::default(), |fake, (cluster, n)| {
            fake.with(cluster, Behaviour::Answer(*n))
        })
    }

    /// Sets the behaviour of one cluster.
    pub fn with(self, cluster: &str, behaviour: Behaviour) -> Self {
        self.set(cluster, Some(behaviour));
        self
    }

    /// Records nothing until [`FakeEstimator::start_recording`] (a long run would keep every
    /// call otherwise).
    pub fn unrecorded(self) -> Self {
        self.state().recording = None;
        self
    }

    /// From now on `cluster` behaves so (`None`: as the rule says).
    pub fn set(&self, cluster: &str, behaviour: Option<Behaviour>) {
        let mut state = self.state();
        match behaviour {
            Some(b) => state.table.insert(cluster.to_string(), b),
            None => state.table.remove(cluster),
        };
    }

    /// From now on `cluster` hangs every call, or behaves again as before.
    pub fn hang(&self, cluster: &str, hang: bool) {
        let mut state = self.state();
        if hang {
            state.hanging.insert(cluster.to_string());
        } else {
            state.hanging.remove(cluster);
        }
    }

    /// The calls recorded so far, in arrival order.
    pub fn seen(&self) -> Vec<Call> {
        self.state().recording.clone().unwrap_or_default()
    }

    /// Records every call from now on, dropping what was recorded before.
    pub fn start_recording(&self) {
        self.state().recording = Some(Vec::new());
    }

    /// The calls recorded, in arrival order; recording stops.
    pub fn take_recording(&self) -> Vec<Call> {
        self.state().recording.take().unwrap_or_default()
    }

    /// Calls received for `cluster` so far.
    pub fn counts(&self, cluster: &str) -> Counts {
        self.state()
            .counts
            .get(cluster)
            .copied()
            .unwrap_or_default()
    }

    /// Calls received so far, all clusters together.
    pub fn total(&self) -> Counts {
        self.state()
            .counts
            .values()
            .fold(Counts::default(), |mut t, c| {
                t.max_available_replicas += c.max_available_replicas;
                t.max_available_component_sets += c.max_available_component_sets;
                t.unschedulable_replicas += c.unschedulable_replicas;
                t.hung += c.hung;
                t
            })
    }

    /// Serves on a free port of 127.0.0.1, without TLS.
    pub async fn serve(&self) -> anyhow::Result<Running> {
        self.serve_on("127.0.0.1", 0, None).await
    }

    /// Serves on `host:port` (0: a free port), with TLS if given.
    pub async fn serve_on(
        &self,
        host: &str,
        port: u16,
        tls: Option<ServerTls>,
    ) -> anyhow::Result<Running> {
        let listener = TcpListener::bind((host, port))
            .await
            .with_context(|| format!("binding {host}:{port}"))?;
        let addr = listener.local_addr()?;
        let mut builder = Server::builder();
        if let Some(tls) = tls {
            let mut config =
                ServerTlsConfig::new().identity(Identity::from_pem(tls.cert_pem, tls.key_pem));
            if let Some(ca) = tls.client_ca_pem {
                config = config.client_ca_root(Certificate::from_pem(ca));
            }
            builder = builder.tls_config(config).context("server TLS")?;
        }
        // As a Go estimator's sockets (Go sets TCP_NODELAY on every TCP connection): without
        // it, Nagle holds an answer behind the unacknowledged previous one on the same
        // connection, and concurrent callers wait for the peer's delayed ACK (tens of
        // milliseconds) instead of the latency asked.
        let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
        let (stop, stopped) = oneshot::channel::<()>();
        let service = EstimatorServer::new(self.clone());
        let task = tokio::spawn(async move {
            let _ = builder
                .serve_with_incoming_shutdown(service, incoming, async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(Running {
            addr,
            fake: self.clone(),
            stop: Some(stop),
            task,
        })
    }

    /// Serves each of `clusters` on a free port of 127.0.0.1 of its own.
    pub async fn serve_per_cluster(&self, clusters: &[String]) -> anyhow::Result<PerCluster> {
        let mut ports = Vec::with_capacity(clusters.len());
        for _ in clusters {
            let serving = self.serve().await?;
            ports.push(Port {
                port: serving.addr.port(),
                serving: Some(serving),
                previous: None,
            });
        }
        Ok(PerCluster {
            fake: self.clone(),
            clusters: clusters.to_vec(),
            ports: Mutex::new(ports),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().expect("fake estimator lock")
    }

    /// Counts and records `call`, then behaves as decided for it.
    async fn handle(&self, call: Call) -> Result<i32, Status> {
        let ruled = self.rule.as_ref().map(|rule| rule(&call));
        let (behaviour, cluster) = {
            let mut state = self.state();
            let behaviour = if state.hanging.contains(&call.cluster) {
                Some(Behaviour::Hang)
            } else {
                state.table.get(&call.cluster).cloned().or(ruled)
            };
            let hung = matches!(behaviour, Some(Behaviour::Hang));
            let counts = state.counts.entry(call.cluster.clone()).or_default();
            counts.add(call.method, hung);
            let cluster = behaviour.is_none().then(|| call.cluster.clone());
            if let Some(recording) = state.recording.as_mut() {
                recording.push(call);
            }
            (behaviour, cluster)
        };
        match behaviour {
            Some(Behaviour::Answer(n)) => Ok(n),
            Some(Behaviour::AnswerAfter(n, after)) => {
                if !after.is_zero() {
                    tokio::time::sleep(after).await;
                }
                Ok(n)
            }
            Some(Behaviour::Hang) => std::future::pending().await,
            Some(Behaviour::Fail(status)) => Err(status),
            None => Err(Status::internal(format!(
                "cluster name mismatch: this estimator does not serve {}",
                cluster.unwrap_or_default()
            ))),
        }
    }
}

#[tonic::async_trait]
impl EstimatorService for FakeEstimator {
    async fn max_available_replicas(
        &self,
        request: Request<pb::MaxAvailableReplicasRequest>,
    ) -> Result<Response<pb::MaxAvailableReplicasResponse>, Status> {
        let mut call = Call::new(
            Method::MaxAvailableReplicas,
            &request.get_ref().cluster,
            &request,
        );
        call.replicas_request = Some(request.into_inner());
        let max_replicas = self.handle(call).await?;
        Ok(Response::new(pb::MaxAvailableReplicasResponse {
            max_replicas,
        }))
    }

    async fn max_available_component_sets(
        &self,
        request: Request<pb::MaxAvailableComponentSetsRequest>,
    ) -> Result<Response<pb::MaxAvailableComponentSetsResponse>, Status> {
        let mut call = Call::new(
            Method::MaxAvailableComponentSets,
            &request.get_ref().cluster,
            &request,
        );
        call.sets_request = Some(request.into_inner());
        let max_sets = self.handle(call).await?;
        Ok(Response::new(pb::MaxAvailableComponentSetsResponse {
            max_sets,
        }))
    }

    async fn get_unschedulable_replicas(
        &self,
        request: Request<pb::UnschedulableReplicasRequest>,
    ) -> Result<Response<pb::UnschedulableReplicasResponse>, Status> {
        let mut call = Call::new(
            Method::GetUnschedulableReplicas,
            &request.get_ref().cluster,
            &request,
        );
        call.unschedulable_request = Some(request.into_inner());
        let unschedulable_replicas = self.handle(call).await?;
        Ok(Response::new(pb::UnschedulableReplicasResponse {
            unschedulable_replicas,
        }))
    }
}

/// TLS of a listener.
#[derive(Clone, Debug)]
pub struct ServerTls {
    pub cert_pem: String,
    pub key_pem: String,
    /// Require client certificates signed by this CA.
    pub client_ca_pem: Option<String>,
}

/// One listener of a fake. Dropping it drops its connections at once; [`Running::stop`] and
/// [`Running::close`] stop it as a terminating estimator does.
pub struct Running {
    pub addr: SocketAddr,
    fake: FakeEstimator,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl Running {
    /// The fake served.
    pub fn fake(&self) -> &FakeEstimator {
        &self.fake
    }

    /// Stops accepting (connections to the port are refused) and sends GOAWAY on open
    /// connections, whose calls may finish; returns at once.
    pub fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    /// [`Running::stop`], then gives open connections 2 s to drain before dropping them.
    pub async fn close(mut self) {
        self.stop();
        if tokio::time::timeout(Duration::from_secs(2), &mut self.task)
            .await
            .is_err()
        {
            self.task.abort();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One cluster's port of a [`PerCluster`].
struct Port {
    port: u16,
    /// `None` while refusing connections.
    serving: Option<Running>,
    /// The listener on the port the cluster moved away from, until
    /// [`PerCluster::close_previous`].
    previous: Option<Running>,
}

/// A fake served on one port per cluster ([`FakeEstimator::serve_per_cluster`]); cluster `i`
/// is the `i`-th of the list it was started with.
pub struct PerCluster {
    fake: FakeEstimator,
    clusters: Vec<String>,
    ports: Mutex<Vec<Port>>,
}

impl PerCluster {
    /// The fake behind every port.
    pub fn fake(&self) -> &FakeEstimator {
        &self.fake
    }

    pub fn clusters(&self) -> &[String] {
        &self.clusters
    }

    fn ports_lock(&self) -> MutexGuard<'_, Vec<Port>> {
        self.ports.lock().expect("per-cluster ports lock")
    }

    /// The port cluster `i` is served on (or refused on).
    pub fn port(&self, i: usize) -> u16 {
        self.ports_lock()[i].port
    }

    /// Every cluster's current port.
    pub fn ports(&self) -> Vec<u16> {
        self.ports_lock().iter().map(|p| p.port).collect()
    }

    /// Calls received so far, per cluster.
    pub fn counts(&self) -> Vec<Counts> {
        let state = self.fake.state();
        self.clusters
            .iter()
            .map(|c| state.counts.get(c).copied().unwrap_or_default())
            .collect()
    }

    /// [`FakeEstimator::hang`] of cluster `i`.
    pub fn set_hang(&self, i: usize, hang: bool) {
        self.fake.hang(&self.clusters[i], hang);
    }

    /// Cluster `i` stops listening: connections to its port are refused.
    pub async fn refuse(&self, i: usize) {
        let serving = self.ports_lock()[i].serving.take();
        if let Some(s) = serving {
            s.close().await;
        }
    }

    /// Cluster `i` listens again on its port.
    pub async fn restore(&self, i: usize) -> anyhow::Result<()> {
        let port = {
            let ports = self.ports_lock();
            if ports[i].serving.is_some() {
                return Ok(());
            }
            ports[i].port
        };
        let serving = self.fake.serve_on("127.0.0.1", port, None).await?;
        self.ports_lock()[i].serving = Some(serving);
        Ok(())
    }

    /// Cluster `i` moves: a listener on a new free port, the old one still serving until
    /// [`PerCluster::close_previous`]. Returns the new port (for the cluster's Service).
    pub async fn move_port(&self, i: usize) -> anyhow::Result<u16> {
        let serving = self.fake.serve().await?;
        let port = serving.addr.port();
        let mut ports = self.ports_lock();
        ports[i].port = port;
        ports[i].previous = ports[i].serving.replace(serving);
        Ok(port)
    }

    /// The old port of a moved cluster goes away: connections to it are refused.
    pub async fn close_previous(&self, i: usize) {
        let previous = self.ports_lock()[i].previous.take();
        if let Some(p) = previous {
            p.close().await;
        }
    }
}

/// A client of the estimator on `addr` over the HTTP/2 transport the schedulers' estimator
/// calls use (`estimator_client::transport`), with nothing above it, so that what it measures
/// is the calls.
pub async fn bare_client(
    addr: SocketAddr,
) -> anyhow::Result<EstimatorClient<estimator_client::transport::Channel>> {
    let address = estimator_client::Address::new(addr.ip().to_string(), addr.port());
    let channel =
        estimator_client::transport::Channel::connect(address, None, Duration::from_secs(5))
            .await
            .map_err(|e| anyhow::anyhow!(e))
            .with_context(|| format!("connecting to the estimator on {addr}"))?;
    let origin = channel.origin().clone();
    Ok(EstimatorClient::with_origin(channel, origin))
}

/// The ExternalName Service `karmada-system/karmada-scheduler-estimator-<cluster>` the
/// schedulers look up, pointing port 10352 (named `grpc`) at `host:target_port`.
pub fn external_name_service(cluster: &str, host: &str, target_port: u16) -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some(format!("{DEFAULT_SERVICE_PREFIX}-{cluster}")),
            namespace: Some(DEFAULT_SERVICE_NAMESPACE.into()),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            type_: Some("ExternalName".into()),
            external_name: Some(host.into()),
            ports: Some(vec![ServicePort {
                name: Some("grpc".into()),
                protocol: Some("TCP".into()),
                port: i32::from(DEFAULT_PORT),
                target_port: Some(IntOrString::Int(i32::from(target_port))),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        status: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replicas_request(cluster: &str) -> pb::MaxAvailableReplicasRequest {
        pb::MaxAvailableReplicasRequest {
            cluster: cluster.into(),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn answers_by_table_then_rule_counts_and_records() {
        let fake = FakeEstimator::from_fn(|call| Behaviour::Answer(call.cluster.len() as i32))
            .with("m1", Behaviour::Answer(7))
            .with("m2", Behaviour::Fail(Status::unavailable("down")))
            .unrecorded();
        let server = fake.serve().await.unwrap();
        let mut client = bare_client(server.addr).await.unwrap();
        let answer = |r: Result<Response<pb::MaxAvailableReplicasResponse>, Status>| {
            r.map(|r| r.into_inner().max_replicas)
        };
        assert_eq!(
            answer(
                client
                    .max_available_replicas(Request::new(replicas_request("m1")))
                    .await
            )
            .unwrap(),
            7
        );
        fake.start_recording();
        let mut request = Request::new(replicas_request("cluster-b"));
        request.metadata_mut().insert(
            OBJECT_METADATA_KEY,
            "kind=Deployment, name=a/b".parse().unwrap(),
        );
        assert_eq!(
            answer(client.max_available_replicas(request).await).unwrap(),
            9
        );
        let err = answer(
            client
                .max_available_replicas(Request::new(replicas_request("m2")))
                .await,
        )
        .unwrap_err();
        assert_eq!(err.code(), tonic::Code::Unavailable);

        let seen = fake.take_recording();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].method, "MaxAvailableReplicas");
        assert_eq!(seen[0].cluster, "cluster-b");
        assert_eq!(seen[0].object.as_deref(), Some("kind=Deployment, name=a/b"));
        assert!(fake.seen().is_empty(), "recording stopped");
        assert_eq!(fake.counts("m1").max_available_replicas, 1);
        assert_eq!(fake.total().answered(), 3);
    }

    #[tokio::test]
    async fn fails_unknown_clusters_and_hangs_on_demand() {
        let fake = FakeEstimator::table(&[("m1", 1)]);
        let ports = fake
            .serve_per_cluster(&["m1".to_string(), "m2".to_string()])
            .await
            .unwrap();
        let addr = |i: usize| SocketAddr::from(([127, 0, 0, 1], ports.port(i)));
        let mut c2 = bare_client(addr(1)).await.unwrap();
        let err = c2
            .get_unschedulable_replicas(Request::new(pb::UnschedulableReplicasRequest {
                cluster: "m2".into(),
                ..Default::default()
            }))
            .await
            .unwrap_err();
        assert!(err.message().contains("does not serve m2"), "{err}");

        ports.set_hang(0, true);
        let mut c1 = bare_client(addr(0)).await.unwrap();
        let hung = tokio::time::timeout(
            Duration::from_millis(200),
            c1.max_available_replicas(Request::new(replicas_request("m1"))),
        )
        .await;
        assert!(hung.is_err(), "answered while hanging: {hung:?}");
        assert_eq!(ports.counts()[0].hung, 1);
        assert_eq!(ports.counts()[1].unschedulable_replicas, 1);

        // Refused, then back on the same port.
        let port = ports.port(0);
        ports.refuse(0).await;
        assert!(bare_client(addr(0)).await.is_err());
        ports.restore(0).await.unwrap();
        ports.set_hang(0, false);
        assert_eq!(ports.port(0), port);
        let mut c1 = bare_client(addr(0)).await.unwrap();
        let got = c1
            .max_available_replicas(Request::new(replicas_request("m1")))
            .await
            .unwrap();
        assert_eq!(got.into_inner().max_replicas, 1);
    }
}
