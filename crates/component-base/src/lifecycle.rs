//! The running process: HTTP servers, client, leader election, and the component's work.
//!
//! The health and metrics servers start first and run on every replica. Without
//! `--leader-elect` the work runs at once. With it, the replica campaigns for the Lease and
//! lets the work act only while leading. Losing the Lease pauses the work (what is in flight
//! finishes; the caches stay) and campaigns again, so an API server outage longer than the
//! renew deadline does not end the process (our addition); with `--exit-on-lost-lease` the
//! process ends with exit code 255 instead, as the reference's fatal log does. SIGTERM or
//! SIGINT stops the work (in-flight items finish), then releases the Lease (our improvement: a
//! standby takes over after one retry period instead of a whole lease duration) and exits 0.
//! A second signal exits at once with code 1.

use std::sync::Arc;

use anyhow::Context as _;

use crate::BoxFuture;
use crate::cancel::CancellationToken;
use crate::fence::Fence;
use crate::leader::{ElectionConfig, Elector, KubeLease, LeadingEnded};
use crate::metrics::ComponentMetrics as Metrics;
use crate::options::{CommonOptions, KubeClientOptions, LeaderElection, ServingOptions};
use crate::serve::{Readiness, Servers};

/// The process settings the lifecycle needs.
#[derive(Clone)]
pub struct Settings {
    /// For the first log line.
    pub version_text: String,
    /// What the work is called in the leadership log lines (`scheduling`: "scheduling
    /// paused", "scheduling resumes").
    pub work_name: &'static str,
    pub serving: ServingOptions,
    pub kube: KubeClientOptions,
    pub leader_election: LeaderElection,
    /// The component's own endpoints on the probe server, if any.
    pub health_routes: Option<axum::Router>,
}

/// What the component runs: given the client, its readiness, the write fence (it acts only
/// while the fence is open, and checks a [`Permit`](crate::fence::Permit) of the term it took
/// its work in right before each write) and its stop token, the work until stopped. The
/// client itself refuses writes while the fence is not valid ([`crate::fence::FenceLayer`]).
pub type Work = Box<
    dyn Fn(
            kube::Client,
            Readiness,
            Fence,
            CancellationToken,
        ) -> BoxFuture<'static, anyhow::Result<()>>
        + Send
        + Sync,
>;

impl Settings {
    /// The settings of a component from its shared option groups, with no endpoints of its
    /// own on the probe server ([`Settings::health_routes`]).
    pub fn new(version_text: String, work_name: &'static str, common: &CommonOptions) -> Self {
        Self {
            version_text,
            work_name,
            serving: common.serving.clone(),
            kube: common.kube.clone(),
            leader_election: common.leader_election.clone(),
            health_routes: None,
        }
    }
}

/// A daemon as the lifecycle runs it: the one run shape of every binary (its settings, its
/// metrics registry, its work), so that a binary only says what its work is.
pub struct Daemon {
    pub settings: Settings,
    pub metrics: Arc<Metrics>,
    pub work: Work,
}

impl Daemon {
    /// A daemon whose work is `work(opts, client, ready, fence, stop)`, `opts` shared by every
    /// start of the work (each leadership term).
    pub fn new<O, F, Fut>(settings: Settings, metrics: Arc<Metrics>, opts: O, work: F) -> Self
    where
        O: Send + Sync + 'static,
        F: Fn(Arc<O>, kube::Client, Readiness, Fence, CancellationToken) -> Fut
            + Send
            + Sync
            + 'static,
        Fut: std::future::Future<Output = anyhow::Result<()>> + Send + 'static,
    {
        let opts = Arc::new(opts);
        Self {
            settings,
            metrics,
            work: Box::new(move |client, ready, fence, stop| {
                Box::pin(work(opts.clone(), client, ready, fence, stop))
            }),
        }
    }

    /// [`run`]: until a signal or a fatal error.
    pub async fn run(self) -> anyhow::Result<()> {
        run(self.settings, self.metrics, self.work).await
    }

    /// [`run_until`]: with an explicit stop token (tests).
    pub async fn run_until(self, stop: CancellationToken) -> anyhow::Result<()> {
        run_until(self.settings, self.metrics, self.work, stop).await
    }
}

/// The threads the work runs on, apart from the process's main runtime where the Lease is
/// renewed, signals are handled and the probe and metrics servers answer: however long the
/// work computes (a binding asking for two billion replicas, thousands of clusters), it cannot
/// hold the threads that keep this replica the leader and tell the kubelet it is alive.
struct WorkRuntime(Option<tokio::runtime::Runtime>);

impl WorkRuntime {
    fn new() -> anyhow::Result<Self> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .thread_name("work")
            .enable_all()
            .build()
            .context("starting the work's runtime")?;
        Ok(Self(Some(rt)))
    }

    fn spawn<F>(&self, f: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.0
            .as_ref()
            .expect("the runtime lives until dropped")
            .spawn(f)
    }
}

/// Dropped from async code when the work has ended: its runtime is shut down without
/// blocking (what is left of it, such as watch tasks, is cancelled).
impl Drop for WorkRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// The Lease could not be renewed and `--exit-on-lost-lease` asks to end (exit code 255).
#[derive(Debug, thiserror::Error)]
#[error("leaderelection lost")]
pub struct LeadershipLost;

fn spawn_signal_handler(stop: CancellationToken) {
    tokio::spawn(async move {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!("cannot listen for SIGTERM: {e}");
                    return;
                }
            };
        let mut count = 0;
        loop {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            count += 1;
            if count == 1 {
                tracing::info!("received a termination signal, shutting down");
                stop.cancel();
            } else {
                std::process::exit(1);
            }
        }
    });
}

/// Run until a signal or a fatal error.
pub async fn run(settings: Settings, metrics: Arc<Metrics>, work: Work) -> anyhow::Result<()> {
    tracing::info!("{}", settings.version_text);
    let stop = CancellationToken::new();
    spawn_signal_handler(stop.clone());
    run_until(settings, metrics, work, stop).await
}

/// [`run`] with an explicit stop token (tests).
pub async fn run_until(
    settings: Settings,
    metrics: Arc<Metrics>,
    work: Work,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let ready = Readiness::default();
    let serving = &settings.serving;
    let mut servers = Servers::bind(
        &serving.health_probe_bind_address,
        &serving.metrics_bind_address,
        metrics.clone(),
        ready.clone(),
    )
    .await?;
    if serving.enable_pprof {
        servers = servers.with_pprof(&serving.profiling_bind_address).await?;
    }
    if let Some(routes) = settings.health_routes.clone() {
        servers = servers.with_health_routes(routes);
    }
    let server_stop = CancellationToken::new();
    let server_task = tokio::spawn(servers.serve(server_stop.clone()));

    let result = run_work(&settings, metrics, work, ready, stop).await;
    server_stop.cancel();
    let _ = server_task.await;
    result
}

async fn run_work(
    settings: &Settings,
    metrics: Arc<Metrics>,
    work: Work,
    ready: Readiness,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let kube = &settings.kube;
    let config = crate::client::rest_config(kube).await?;
    let fence = if settings.leader_election.leader_elect {
        Fence::closed()
    } else {
        Fence::unfenced()
    };
    let client = crate::client::build_fenced(
        config.clone(),
        kube.kube_api_qps,
        kube.kube_api_burst,
        Some(fence.clone()),
    )?;
    let work_runtime = WorkRuntime::new()?;

    if !settings.leader_election.leader_elect {
        return work_runtime
            .spawn(work(client, ready, fence, stop))
            .await
            .context("work task")?;
    }

    let mut elector = elector(settings, config, &fence)?;
    tracing::info!(identity = elector.identity(), "campaigning for leadership");
    metrics.set_leader(false);
    // A standby is healthy and ready: it serves probes and waits.
    ready.set(true);
    if !elector.acquire(&stop).await {
        return Ok(());
    }
    metrics.set_leader(true);
    ready.set(false);
    // The work acts only while the fence is open; its watches and caches run throughout.
    let sched_stop = CancellationToken::new();
    let mut sched = work_runtime.spawn(work(
        client.clone(),
        ready.clone(),
        fence.clone(),
        sched_stop.clone(),
    ));
    let (outcome, finished) = lead(settings, &metrics, &mut elector, &mut sched, &stop).await;
    sched_stop.cancel();
    let sched_result = match finished {
        Some(r) => r.context("work task")?,
        None => sched.await.context("work task")?,
    };
    metrics.set_leader(false);
    match outcome {
        LeadingEnded::Lost => {
            tracing::error!("leaderelection lost");
            Err(LeadershipLost.into())
        }
        LeadingEnded::Stopped => {
            elector.release().await;
            sched_result
        }
    }
}

/// The elector of `--leader-elect`, which closes `fence` when its term ends.
fn elector(settings: &Settings, config: kube::Config, fence: &Fence) -> anyhow::Result<Elector> {
    let le = &settings.leader_election;
    let kube = &settings.kube;
    let cfg = ElectionConfig {
        namespace: le.resource_namespace.clone(),
        name: le.resource_name.clone(),
        identity: crate::leader::identity(),
        lease_duration: le.lease_duration.to_std(),
        renew_deadline: le.renew_deadline.to_std(),
        retry_period: le.retry_period.to_std(),
    };
    // The Lease has a client of its own, as the reference's leader election has: its
    // requests neither queue behind the work's in the rate limiter nor ride connections
    // driven on the work's threads.
    let lease_client = crate::client::build(config, kube.kube_api_qps, kube.kube_api_burst)?;
    let elector = Elector::new(
        cfg,
        Arc::new(KubeLease::new(
            lease_client,
            &le.resource_namespace,
            &le.resource_name,
        )),
    )
    .with_fence(fence.clone());
    Ok(elector)
}

/// How the work's task ended, when it ended on its own.
type WorkEnded = Result<anyhow::Result<()>, tokio::task::JoinError>;

/// Renew the Lease until it is lost for good, a stop is asked for, or the work ends on its
/// own; a lost Lease pauses the work and campaigns again unless `--exit-on-lost-lease`.
/// The stop request is watched alongside the renewal so that the work ends before the Lease
/// is released.
async fn lead(
    settings: &Settings,
    metrics: &Metrics,
    elector: &mut Elector,
    sched: &mut tokio::task::JoinHandle<anyhow::Result<()>>,
    stop: &CancellationToken,
) -> (LeadingEnded, Option<WorkEnded>) {
    let never = CancellationToken::new();
    loop {
        let (outcome, finished) = tokio::select! {
            ended = elector.renew(&never) => (ended, None),
            _ = stop.cancelled() => (LeadingEnded::Stopped, None),
            // The work ended on its own (a start-up error): give the Lease up and report it.
            r = &mut *sched => (LeadingEnded::Stopped, Some(r)),
        };
        if outcome != LeadingEnded::Lost || settings.leader_election.exit_on_lost_lease {
            return (outcome, finished);
        }
        // Our addition: stop taking work (the fence, closed by the elector, refuses every
        // write of the ended term: what was taken or computed is dropped and requeued), keep
        // the caches, and campaign again.
        metrics.set_leader(false);
        tracing::error!(
            "leaderelection lost; {} paused, campaigning again",
            settings.work_name
        );
        let acquired = tokio::select! {
            a = elector.acquire(stop) => a,
            r = &mut *sched => return (LeadingEnded::Stopped, Some(r)),
        };
        if !acquired {
            return (LeadingEnded::Stopped, None);
        }
        metrics.set_leader(true);
        tracing::info!("leading again; {} resumes", settings.work_name);
    }
}
