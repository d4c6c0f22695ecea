//! A karmada-scheduler-estimator stand-in for benches: one gRPC server that answers for any
//! cluster named in the request, from a formula, after a fixed latency, and counts the calls.
//! With it the schedulers, not the estimators, are what is measured.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use estimator_client::pb::messages as pb;
use estimator_client::pb::{EstimatorServer, EstimatorService};
use tokio::net::TcpListener;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};

/// `GetUnschedulableReplicas` answer of `cluster` for a workload called `name` (in any
/// namespace): 0, 1 or 2, spread by an FNV hash of the two, so that two runs in different
/// namespaces see the same answers.
pub fn unschedulable_answer(cluster: &str, name: &str) -> i32 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in [cluster, "/", name].iter().flat_map(|s| s.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    (h % 3) as i32
}

/// Calls answered, per method.
#[derive(Debug, Default)]
pub struct Counts {
    pub unschedulable: AtomicU64,
    pub max_available: AtomicU64,
}

#[derive(Clone)]
struct Stub {
    latency: Duration,
    counts: Arc<Counts>,
}

#[tonic::async_trait]
impl EstimatorService for Stub {
    async fn max_available_replicas(
        &self,
        _request: Request<pb::MaxAvailableReplicasRequest>,
    ) -> Result<Response<pb::MaxAvailableReplicasResponse>, Status> {
        self.counts.max_available.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(self.latency).await;
        Ok(Response::new(pb::MaxAvailableReplicasResponse {
            max_replicas: 100,
        }))
    }

    async fn max_available_component_sets(
        &self,
        _request: Request<pb::MaxAvailableComponentSetsRequest>,
    ) -> Result<Response<pb::MaxAvailableComponentSetsResponse>, Status> {
        self.counts.max_available.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(self.latency).await;
        Ok(Response::new(pb::MaxAvailableComponentSetsResponse {
            max_sets: 100,
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

/// A running stub; stops when dropped.
pub struct StubEstimator {
    pub addr: SocketAddr,
    pub counts: Arc<Counts>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for StubEstimator {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl StubEstimator {
    /// Serve on a free 127.0.0.1 port.
    pub async fn start(latency: Duration) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let counts = Arc::new(Counts::default());
        let stub = Stub {
            latency,
            counts: counts.clone(),
        };
        let task = tokio::spawn(async move {
            let _ = Server::builder()
                .serve_with_incoming(EstimatorServer::new(stub), TcpIncoming::from(listener))
                .await;
        });
        Ok(Self { addr, counts, task })
    }

    /// `GetUnschedulableReplicas` calls so far.
    pub fn unschedulable_calls(&self) -> u64 {
        self.counts.unschedulable.load(Ordering::Relaxed)
    }
}
