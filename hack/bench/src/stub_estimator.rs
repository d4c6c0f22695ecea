//! A karmada-scheduler-estimator stand-in for benches: gRPC servers that answer from a
//! formula, after a fixed latency, and count the calls. With it the schedulers, not the
//! estimators, are what is measured.
//!
//! [`StubEstimator`] is one port answering for any cluster (the descheduler bench);
//! [`MultiStub`] is one port per cluster, as the schedulers see real estimators, each of which
//! can be made to hang, to refuse connections or to move to another port.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use estimator_client::pb::messages as pb;
use estimator_client::pb::{EstimatorServer, EstimatorService};
use estimator_client::request::OBJECT_METADATA_KEY;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};

fn fnv(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in parts.iter().flat_map(|s| s.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// `GetUnschedulableReplicas` answer of `cluster` for a workload called `name` (in any
/// namespace): 0, 1 or 2, spread by an FNV hash of the two, so that two runs in different
/// namespaces see the same answers.
pub fn unschedulable_answer(cluster: &str, name: &str) -> i32 {
    (fnv(&[cluster, "/", name]) % 3) as i32
}

/// `MaxAvailableReplicas` (and component sets) answer of a [`MultiStub`] cluster: 4 to 63,
/// from a hash of the name, the same for every workload, so that both schedulers meet the
/// same answers and must agree.
pub fn max_available_answer(cluster: &str) -> i32 {
    4 + (fnv(&[cluster]) % 60) as i32
}

/// Calls answered, per method.
#[derive(Debug, Default)]
pub struct Counts {
    pub unschedulable: AtomicU64,
    pub max_available: AtomicU64,
    /// Calls received while hanging (never answered).
    pub hung: AtomicU64,
}

/// One call a [`MultiStub`] received while recording: which cluster's port, the message and
/// the `object` metadata, so that a bare client can make the very same call again.
#[derive(Clone, Debug)]
pub struct RecordedCall {
    /// Index of the cluster (the port) in the [`MultiStub`].
    pub cluster: usize,
    /// The `object` metadata the caller sent, if any.
    pub object: Option<String>,
    pub message: RecordedMessage,
}

/// The request of a [`RecordedCall`].
#[derive(Clone, Debug)]
pub enum RecordedMessage {
    MaxAvailableReplicas(pb::MaxAvailableReplicasRequest),
    MaxAvailableComponentSets(pb::MaxAvailableComponentSetsRequest),
}

/// Calls recorded by every port of a [`MultiStub`], in arrival order (`None`: not recording).
type Recorder = Arc<Mutex<Option<Vec<RecordedCall>>>>;

#[derive(Clone)]
struct Stub {
    latency: Duration,
    counts: Arc<Counts>,
    /// The cluster this port serves (`None`: any, answering 100).
    cluster: Option<String>,
    hang: Arc<AtomicBool>,
    /// Index of the cluster in its [`MultiStub`], and where its calls are recorded.
    index: usize,
    recorder: Recorder,
}

impl Stub {
    /// Keeps the call while the [`MultiStub`] records.
    fn record<T>(&self, request: &Request<T>, message: impl FnOnce() -> RecordedMessage) {
        let mut r = self.recorder.lock().expect("recorder lock");
        if let Some(calls) = r.as_mut() {
            calls.push(RecordedCall {
                cluster: self.index,
                object: request
                    .metadata()
                    .get(OBJECT_METADATA_KEY)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string),
                message: message(),
            });
        }
    }

    /// Waits the latency, or for ever while hanging.
    async fn answer(&self) -> i32 {
        if self.hang.load(Ordering::Relaxed) {
            self.counts.hung.fetch_add(1, Ordering::Relaxed);
            std::future::pending::<()>().await;
        }
        self.counts.max_available.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(self.latency).await;
        self.cluster.as_deref().map_or(100, max_available_answer)
    }
}

#[tonic::async_trait]
impl EstimatorService for Stub {
    async fn max_available_replicas(
        &self,
        request: Request<pb::MaxAvailableReplicasRequest>,
    ) -> Result<Response<pb::MaxAvailableReplicasResponse>, Status> {
        self.record(&request, || {
            RecordedMessage::MaxAvailableReplicas(request.get_ref().clone())
        });
        Ok(Response::new(pb::MaxAvailableReplicasResponse {
            max_replicas: self.answer().await,
        }))
    }

    async fn max_available_component_sets(
        &self,
        request: Request<pb::MaxAvailableComponentSetsRequest>,
    ) -> Result<Response<pb::MaxAvailableComponentSetsResponse>, Status> {
        self.record(&request, || {
            RecordedMessage::MaxAvailableComponentSets(request.get_ref().clone())
        });
        Ok(Response::new(pb::MaxAvailableComponentSetsResponse {
            max_sets: self.answer().await,
        }))
    }

    async fn get_unschedulable_replicas(
        &self,
        request: Request<pb::UnschedulableReplicasRequest>,
    ) -> Result<Response<pb::UnschedulableReplicasResponse>, Status> {
        self.counts.unschedulable.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(self.latency).await;
        let r = request.into_inner();
        let resource = r.resource.unwrap_or_default();
        Ok(Response::new(pb::UnschedulableReplicasResponse {
            unschedulable_replicas: unschedulable_answer(&r.cluster, &resource.name),
        }))
    }
}

/// One listening server; closing it closes the listener (new connections are refused) and
/// sends GOAWAY on open connections.
struct Serving {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Serving {
    async fn start(addr: SocketAddr, stub: Stub) -> anyhow::Result<Serving> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _ = Server::builder()
                .serve_with_incoming_shutdown(
                    EstimatorServer::new(stub),
                    // As a Go estimator's sockets (Go sets TCP_NODELAY on every TCP
                    // connection): without it, Nagle holds an answer behind the unacknowledged
                    // previous one on the same connection, and concurrent callers wait for the
                    // peer's delayed ACK (tens of milliseconds) instead of the latency asked.
                    TcpIncoming::from(listener).with_nodelay(Some(true)),
                    async {
                        let _ = stopped.await;
                    },
                )
                .await;
        });
        Ok(Serving {
            addr,
            stop: Some(stop),
            task,
        })
    }

    /// Stops accepting at once; gives open connections a moment to drain, then drops them.
    async fn close(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if tokio::time::timeout(Duration::from_secs(2), &mut self.task)
            .await
            .is_err()
        {
            self.task.abort();
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A running single-port stub; stops when dropped.
pub struct StubEstimator {
    pub addr: SocketAddr,
    pub counts: Arc<Counts>,
    _serving: Serving,
}

impl StubEstimator {
    /// Serve on a free 127.0.0.1 port.
    pub async fn start(latency: Duration) -> anyhow::Result<Self> {
        let counts = Arc::new(Counts::default());
        let stub = Stub {
            latency,
            counts: counts.clone(),
            cluster: None,
            hang: Arc::default(),
            index: 0,
            recorder: Recorder::default(),
        };
        let serving = Serving::start(([127, 0, 0, 1], 0).into(), stub).await?;
        Ok(Self {
            addr: serving.addr,
            counts,
            _serving: serving,
        })
    }

    /// `GetUnschedulableReplicas` calls so far.
    pub fn unschedulable_calls(&self) -> u64 {
        self.counts.unschedulable.load(Ordering::Relaxed)
    }
}

/// One cluster's estimator in a [`MultiStub`].
struct Endpoint {
    stub: Stub,
    /// `None` while refusing connections.
    serving: Option<Serving>,
    /// The server on the port the cluster moved away from, until [`MultiStub::close_previous`].
    previous: Option<Serving>,
    port: u16,
}

/// One estimator port per cluster, all in this process.
pub struct MultiStub {
    clusters: Vec<String>,
    endpoints: Mutex<Vec<Endpoint>>,
    recorder: Recorder,
}

/// Calls a [`MultiStub`] cluster received.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallCount {
    pub answered: u64,
    pub hung: u64,
}

impl MultiStub {
    /// A server on a free 127.0.0.1 port for each of `clusters`.
    pub async fn start(clusters: &[String], latency: Duration) -> anyhow::Result<MultiStub> {
        let mut endpoints = Vec::with_capacity(clusters.len());
        let recorder = Recorder::default();
        for (index, c) in clusters.iter().enumerate() {
            let stub = Stub {
                latency,
                counts: Arc::default(),
                cluster: Some(c.clone()),
                hang: Arc::default(),
                index,
                recorder: recorder.clone(),
            };
            let serving = Serving::start(([127, 0, 0, 1], 0).into(), stub.clone()).await?;
            endpoints.push(Endpoint {
                stub,
                port: serving.addr.port(),
                serving: Some(serving),
                previous: None,
            });
        }
        Ok(MultiStub {
            clusters: clusters.to_vec(),
            endpoints: Mutex::new(endpoints),
            recorder,
        })
    }

    /// From now on every `MaxAvailableReplicas`/`MaxAvailableComponentSets` call is kept
    /// (see [`MultiStub::take_recording`]).
    pub fn start_recording(&self) {
        *self.recorder.lock().expect("recorder lock") = Some(Vec::new());
    }

    /// The calls received since [`MultiStub::start_recording`], in arrival order; recording
    /// stops.
    pub fn take_recording(&self) -> Vec<RecordedCall> {
        self.recorder
            .lock()
            .expect("recorder lock")
            .take()
            .unwrap_or_default()
    }

    pub fn clusters(&self) -> &[String] {
        &self.clusters
    }

    /// The port cluster `i` is served on (or refused on).
    pub fn port(&self, i: usize) -> u16 {
        self.endpoints.lock().expect("stub lock")[i].port
    }

    /// Every cluster's current port.
    pub fn ports(&self) -> Vec<u16> {
        let e = self.endpoints.lock().expect("stub lock");
        e.iter().map(|e| e.port).collect()
    }

    /// Calls each cluster received so far.
    pub fn calls(&self) -> Vec<CallCount> {
        let e = self.endpoints.lock().expect("stub lock");
        e.iter()
            .map(|e| CallCount {
                answered: e.stub.counts.max_available.load(Ordering::Relaxed),
                hung: e.stub.counts.hung.load(Ordering::Relaxed),
            })
            .collect()
    }

    /// From now on cluster `i` accepts calls and never answers them (or answers again).
    pub fn set_hang(&self, i: usize, hang: bool) {
        let e = self.endpoints.lock().expect("stub lock");
        e[i].stub.hang.store(hang, Ordering::Relaxed);
    }

    /// Cluster `i` stops listening: connections to its port are refused.
    pub async fn refuse(&self, i: usize) {
        let serving = self.endpoints.lock().expect("stub lock")[i].serving.take();
        if let Some(s) = serving {
            s.close().await;
        }
    }

    /// Cluster `i` listens again on its port.
    pub async fn restore(&self, i: usize) -> anyhow::Result<()> {
        let (port, stub) = {
            let e = self.endpoints.lock().expect("stub lock");
            if e[i].serving.is_some() {
                return Ok(());
            }
            (e[i].port, e[i].stub.clone())
        };
        let serving = Serving::start(([127, 0, 0, 1], port).into(), stub).await?;
        self.endpoints.lock().expect("stub lock")[i].serving = Some(serving);
        Ok(())
    }

    /// Cluster `i` moves: a server on a new free port, the old one still serving until
    /// [`MultiStub::close_previous`]. Returns the new port (to be written into the
    /// cluster's Service).
    pub async fn start_moved(&self, i: usize) -> anyhow::Result<u16> {
        let stub = self.endpoints.lock().expect("stub lock")[i].stub.clone();
        let serving = Serving::start(([127, 0, 0, 1], 0).into(), stub).await?;
        let port = serving.addr.port();
        let mut e = self.endpoints.lock().expect("stub lock");
        e[i].port = port;
        e[i].previous = e[i].serving.replace(serving);
        Ok(port)
    }

    /// The old address of a moved cluster goes away: connections to it are refused.
    pub async fn close_previous(&self, i: usize) {
        let previous = self.endpoints.lock().expect("stub lock")[i].previous.take();
        if let Some(p) = previous {
            p.close().await;
        }
    }
}

/// A bare client of the stub on `addr`, over the same HTTP/2 transport the schedulers' estimator
/// calls use (`estimator_client::transport`), so that a ceiling made with it measures the
/// calls, not a heavier client.
pub async fn bare_client(
    addr: std::net::SocketAddr,
) -> anyhow::Result<estimator_client::pb::EstimatorClient<estimator_client::transport::Channel>> {
    use anyhow::Context as _;
    let address = estimator_client::Address::new(addr.ip().to_string(), addr.port());
    let channel = estimator_client::transport::Channel::connect(
        address,
        None,
        std::time::Duration::from_secs(5),
    )
    .await
    .map_err(|e| anyhow::anyhow!(e))
    .with_context(|| format!("connecting to the stub estimator on {addr}"))?;
    let origin = channel.origin().clone();
    Ok(estimator_client::pb::EstimatorClient::with_origin(
        channel, origin,
    ))
}
