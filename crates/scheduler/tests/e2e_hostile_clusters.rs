//! A Cluster whose estimator cannot be reached and whose status changes all the time (a
//! Pull-mode member controls both), on a real control plane, ours beside the Go
//! karmada-scheduler v1.18.2 with the same flags: the Cluster carries 2,000 API enablements
//! (about 0.9 MB), its estimator Service names a port nothing listens on, and its status is
//! updated 120 times, back to back.
//!
//! Go merges the events in its `scheduler-estimator` work queue (one item per cluster) and
//! dials once per item. Ours used to start a retry chain per event, each holding a deep copy
//! of the Cluster and dialling again forever (+125 MiB over 120 events). Now: memory grows
//! less than 16 MiB, and ours retries at most twice as often as Go.
//!
//! Skipped when the Go binaries are absent and KARMADA_E2E is unset (see crates/testenv).

use std::path::Path;
use std::time::Duration;

use testenv::churn::{self, ENABLEMENTS, Watched};
use testenv::{GoProcess, TestEnv, free_port, tools_or_skip};

/// Ours, and its metrics address.
fn spawn_ours(env: &TestEnv) -> anyhow::Result<(GoProcess, String)> {
    let metrics = format!("127.0.0.1:{}", free_port());
    let args = vec![
        format!("--kubeconfig={}", env.kubeconfig().display()),
        "--leader-elect=false".to_string(),
        "--enable-scheduler-estimator=true".to_string(),
        "--scheduler-name=rs-scheduler".to_string(),
        format!("--metrics-bind-address={metrics}"),
        format!("--health-probe-bind-address=127.0.0.1:{}", free_port()),
    ];
    let bin = Path::new(env!("CARGO_BIN_EXE_karmada-scheduler"));
    Ok((env.spawn_process("rs-scheduler", bin, &args)?, metrics))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_churning_unreachable_cluster_costs_one_retry_queue() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("a_churning_unreachable_cluster_costs_one_retry_queue") else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).members(0).start().await?;
    let size = churn::unreachable_cluster(&env, ENABLEMENTS, free_port()).await?;
    assert!(size > 800_000, "the Cluster is {size} bytes");

    let mut go = env.spawn_go_scheduler(&[
        "--enable-scheduler-estimator=true",
        "--scheduler-name=go-scheduler",
    ])?;
    go.wait_healthy(Duration::from_secs(60)).await?;
    let (ours, metrics) = spawn_ours(&env)?;
    let (mine, theirs) = churn::side_by_side(
        &env,
        &Watched {
            process: &ours,
            metrics,
            go: false,
        },
        &Watched {
            process: &go,
            metrics: go.metrics_address().unwrap_or_default().to_string(),
            go: true,
        },
    )
    .await?;
    churn::check(mine, theirs).map_err(|e| anyhow::anyhow!("{e}\n{}", ours.log_tail(20)))
}
