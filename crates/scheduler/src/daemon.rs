//! The running process: HTTP servers, client, leader election, and the scheduler loop.
//!
//! Lifecycle (spec §1, §8): the health and metrics servers start first and run on every
//! replica. Without `--leader-elect` the scheduler runs at once. With it, the replica campaigns
//! for the Lease and runs the scheduler only while leading. Losing the Lease pauses scheduling
//! (cycles in flight finish; the caches stay) and campaigns again, so an API server outage
//! longer than the renew deadline does not end the process (our addition); with
//! `--exit-on-lost-lease` the process ends with exit code 255 instead, as the reference's fatal
//! log does. SIGTERM or
//! SIGINT stops scheduling (in-flight cycles finish), then releases the Lease (our improvement:
//! a standby takes over after one retry period instead of a whole lease duration) and exits 0.
//! A second signal exits at once with code 1.

use std::sync::Arc;

use anyhow::Context as _;

use crate::http::tokio_util_shim::CancellationToken;
use crate::http::{Readiness, Servers};
use crate::leader::{ElectionConfig, Elector, KubeLease, LeadingEnded};
use crate::metrics::Metrics;
use crate::options::Options;

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
pub async fn run(opts: Options) -> anyhow::Result<()> {
    tracing::info!("{}", crate::options::version_text());
    let stop = CancellationToken::new();
    spawn_signal_handler(stop.clone());
    run_until(opts, stop).await
}

/// [`run`] with an explicit stop token (tests).
pub async fn run_until(opts: Options, stop: CancellationToken) -> anyhow::Result<()> {
    let metrics = Arc::new(Metrics::new());
    let ready = Readiness::default();
    let mut servers = Servers::bind(
        &opts.health_probe_bind_address,
        &opts.metrics_bind_address,
        metrics.clone(),
        ready.clone(),
    )
    .await?;
    if opts.enable_pprof {
        servers = servers.with_pprof(&opts.profiling_bind_address).await?;
    }
    let server_stop = CancellationToken::new();
    let server_task = tokio::spawn(servers.serve(server_stop.clone()));

    let result = run_scheduler(&opts, metrics, ready, stop).await;
    server_stop.cancel();
    let _ = server_task.await;
    result
}

async fn run_scheduler(
    opts: &Options,
    metrics: Arc<Metrics>,
    ready: Readiness,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let config = crate::client::rest_config(opts).await?;
    let client = crate::client::build(config, opts.kube_api_qps, opts.kube_api_burst)?;

    if !opts.leader_election.leader_elect {
        let (_always, leading) = tokio::sync::watch::channel(true);
        return crate::controller::run(opts, client, metrics, ready, leading, stop).await;
    }

    let le = &opts.leader_election;
    let cfg = ElectionConfig {
        namespace: le.resource_namespace.clone(),
        name: le.resource_name.clone(),
        identity: crate::leader::identity(),
        lease_duration: le.lease_duration.to_std(),
        renew_deadline: le.renew_deadline.to_std(),
        retry_period: le.retry_period.to_std(),
    };
    let mut elector = Elector::new(
        cfg,
        Arc::new(KubeLease::new(
            client.clone(),
            &le.resource_namespace,
            &le.resource_name,
        )),
    );
    tracing::info!(identity = elector.identity(), "campaigning for leadership");
    metrics.set_leader(false);
    // A standby is healthy and ready: it serves probes and waits.
    ready.set(true);
    if !elector.acquire(&stop).await {
        return Ok(());
    }
    metrics.set_leader(true);
    ready.set(false);
    // Workers take bindings only while this is true; the watches and caches run throughout.
    let (leading_tx, leading) = tokio::sync::watch::channel(true);
    let sched_stop = CancellationToken::new();
    let mut sched = {
        let opts = opts.clone();
        let (client, metrics, ready, sched_stop) = (
            client.clone(),
            metrics.clone(),
            ready.clone(),
            sched_stop.clone(),
        );
        tokio::spawn(async move {
            crate::controller::run(&opts, client, metrics, ready, leading, sched_stop).await
        })
    };
    // Renew until lost; a stop request is watched alongside, so that scheduling ends before the
    // Lease is released.
    let never = CancellationToken::new();
    let (outcome, finished) = loop {
        let (outcome, finished) = tokio::select! {
            ended = elector.renew(&never) => (ended, None),
            _ = stop.cancelled() => (LeadingEnded::Stopped, None),
            // The scheduler ended on its own (a start-up error): give the Lease up and report it.
            r = &mut sched => (LeadingEnded::Stopped, Some(r)),
        };
        if outcome != LeadingEnded::Lost || le.exit_on_lost_lease {
            break (outcome, finished);
        }
        // Our addition: stop taking bindings (cycles in flight end; their writes carry
        // resourceVersion preconditions), keep the caches, and campaign again.
        let _ = leading_tx.send(false);
        metrics.set_leader(false);
        tracing::error!("leaderelection lost; scheduling paused, campaigning again");
        let acquired = tokio::select! {
            a = elector.acquire(&stop) => a,
            r = &mut sched => break (LeadingEnded::Stopped, Some(r)),
        };
        if !acquired {
            break (LeadingEnded::Stopped, None);
        }
        metrics.set_leader(true);
        let _ = leading_tx.send(true);
        tracing::info!("leading again; scheduling resumes");
    };
    sched_stop.cancel();
    let sched_result = match finished {
        Some(r) => r.context("scheduler task")?,
        None => sched.await.context("scheduler task")?,
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
