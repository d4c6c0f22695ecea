//! The leader's scheduling loop: the [`Context`] the handlers and workers share, and [`run`],
//! which wires the pieces (the pipeline and estimator connections of [`crate::config::build`],
//! the caches of [`crate::store`], the binding API's write gate and the API server probe of [`crate::kube`],
//! the queue, the watches and the workers) and starts them.
//!
//! - `watches.rs`: the watches, each event handed to its hook;
//! - `handler.rs`: the hooks, one per event: the cache's writer applies it, and what changed
//!   decides what is queued (`filter.rs`; our own writes' echoes are not, `own_writes.rs`);
//! - `worker.rs`: the workers, one cycle per key, its result as the queue's outcome.
//!
//! Bindings are watched as raw JSON and decoded one by one, so one malformed binding cannot
//! break the watch: it is cached as [`Cached::Malformed`](crate::store::Cached::Malformed)
//! and, when it passes the event filter, gets a `Scheduled=False` condition (reason
//! `SchedulerError`) and a Warning event naming the offending field. Watch errors, `410 Gone`
//! and dropped connections are retried with backoff by kube-runtime's watcher; a relist
//! applies what changed meanwhile as live events would (component-base's `watch::drive`).

pub mod filter;
mod handler;
pub mod own_writes;
mod watches;
mod worker;

use std::sync::Arc;
use std::time::Duration;

use scheduler_core::schedule::Scheduler;

use crate::config::build::{accurate_estimator, build_scheduler, estimator_sync};
use crate::config::options::Options;
use crate::controller::own_writes::AfterWrite;
use crate::cycle::Parts;
use crate::cycle::sink::{BindingApi, EventSink};
use crate::kube::bindings::KubeBindings;
use crate::kube::probe::release_when_reachable;
use crate::metrics::{Metrics, StepTimer};
use crate::queue::SchedulingQueue;
use crate::store::assume::Assumptions;
use crate::store::workload::WorkloadIndex;
use crate::store::{BindingCache, ClusterCache, Store, caches};
use component_base::cancel::CancellationToken;
use component_base::fence::Fence;
use component_base::serve::Readiness;
use component_base::watch::until_ready;
use component_base::write::WriteGate;
use estimator_client::sync::EstimatorSync;

/// Everything a worker needs.
pub struct Context {
    pub scheduler: Scheduler,
    pub scheduler_name: String,
    /// The caches, read-only.
    pub stores: Store,
    pub queue: Arc<SchedulingQueue>,
    /// The binding API, lent to each attempt under its permit.
    pub gate: WriteGate<dyn BindingApi>,
    pub events: Arc<dyn EventSink>,
    pub metrics: Arc<Metrics>,
    /// Present with the `WorkloadAffinity` gate.
    pub workload: Option<Arc<WorkloadIndex>>,
    /// Present with the `SchedulingOvercommitProtection` gate.
    pub assumptions: Option<Arc<Assumptions>>,
    /// The writers of `stores` (the bindings' also of the gates' caches above); see
    /// [`Context::binding_cache`] and [`Context::cluster_cache`].
    binding_cache: std::sync::Mutex<BindingCache>,
    cluster_cache: std::sync::Mutex<ClusterCache>,
    /// The cycles' after-write hook.
    pub after_write: AfterWrite,
}

impl Context {
    /// What the daemon's cycles read besides the binding and the snapshot: its group index and
    /// assumption cache (each present with its gate), and the caches' after-write hook.
    pub fn parts(&self) -> Parts<'_> {
        Parts {
            workload_index: self
                .workload
                .as_deref()
                .map(|w| w as &dyn scheduler_core::framework::WorkloadGroupIndex),
            after_write: Some(&self.after_write),
            assumptions: self.assumptions.as_deref(),
            want_trace: false,
            rereads: 0,
        }
    }
}

/// Where the daemon's `/debug/explain` endpoint finds the running scheduler, the client it
/// checks its callers with, and the runtime the scheduler runs on (explanations are cycles:
/// they run there, not on the threads of the probe server): set once the caches have synced.
pub type ExplainSlot = std::sync::OnceLock<(Arc<Context>, kube::Client, tokio::runtime::Handle)>;

/// Run the scheduler until `stop`: watches, cache sync, workers. Caches are filled before the
/// first cycle; `ready` turns true once they are.
pub async fn run(
    opts: &Options,
    client: kube::Client,
    metrics: Arc<Metrics>,
    ready: Readiness,
    fence: Fence,
    stop: CancellationToken,
    explain: Option<Arc<ExplainSlot>>,
) -> anyhow::Result<()> {
    let estimators = estimator_sync(opts, &client, &metrics);
    let ctx = Arc::new(context(opts, &client, metrics, estimators.as_ref())?);

    let mut watches = Vec::new();
    watches::start(&ctx, &client, opts, estimators, &mut watches);

    // All caches synced before the first cycle.
    tokio::select! {
        r = until_ready(ctx.stores.wait_until_ready(), &mut watches) => r?,
        _ = stop.cancelled() => {
            watches.iter().for_each(|w| w.abort());
            return Ok(());
        }
    }
    // `--concurrent-binding-syncs` (the reference runs one); keys are exclusive per worker.
    let worker_count = usize::try_from(opts.concurrent_binding_syncs)
        .unwrap_or(1)
        .max(1);
    tracing::info!("caches synced; starting {worker_count} scheduling workers");
    ready.set(true);
    if let Some(slot) = &explain {
        let _ = slot.set((
            ctx.clone(),
            client.clone(),
            tokio::runtime::Handle::current(),
        ));
    }

    // Bindings whose writes found no API server wait for it to answer again.
    watches.push(tokio::spawn(release_when_reachable(
        ctx.queue.clone(),
        client.clone(),
    )));
    let workers = worker::spawn(&ctx, worker_count, &fence, &stop);
    stop.cancelled().await;
    ctx.queue.shutdown();
    for w in workers {
        let _ = tokio::time::timeout(Duration::from_secs(30), w).await;
    }
    watches.iter().for_each(|w| w.abort());
    Ok(())
}

/// The workers' context for these flags: the pipeline (timed by the metrics), the queue, the
/// caches, the binding API's write gate and the event recorder, and what the gates add.
fn context(
    opts: &Options,
    client: &kube::Client,
    metrics: Arc<Metrics>,
    estimators: Option<&Arc<EstimatorSync>>,
) -> anyhow::Result<Context> {
    let scheduler = build_scheduler(opts, accurate_estimator(estimators))?
        .with_step_observer(Arc::new(StepTimer::new(metrics.clone())));
    let queue = crate::queue::for_options(opts, &metrics);
    let gates = &opts.feature_gates;
    let assumptions =
        (gates.scheduling_overcommit_protection()).then(|| Arc::new(Assumptions::default()));
    let workload_affinity = gates.enabled(scheduler_core::features::WORKLOAD_AFFINITY);
    let (stores, binding_cache, cluster_cache) = caches(workload_affinity, assumptions.clone());
    let workload = binding_cache.workload_index().cloned();
    Ok(Context {
        scheduler,
        scheduler_name: opts.scheduler_name.clone(),
        stores,
        queue: Arc::new(queue),
        gate: KubeBindings::gate(client.clone()),
        events: Arc::new(component_base::events::start(
            client.clone(),
            opts.scheduler_name.clone(),
        )) as Arc<dyn EventSink>,
        metrics,
        after_write: AfterWrite {
            own_writes: Arc::default(),
            workload: workload.clone(),
        },
        workload,
        assumptions,
        binding_cache: std::sync::Mutex::new(binding_cache),
        cluster_cache: std::sync::Mutex::new(cluster_cache),
    })
}

#[cfg(test)]
mod tests;
