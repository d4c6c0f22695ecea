//! The descheduler's side of a Cluster whose estimator cannot be reached and whose status
//! changes all the time (see `testenv::churn`): ours beside the Go karmada-descheduler v1.18.2,
//! both following the same Cluster watch path as the schedulers. Memory grows less than
//! 16 MiB over 120 status updates of a 0.9 MB Cluster, and ours retries at most twice as often
//! as Go.
//!
//! Skipped when the Go binaries are absent and KARMADA_E2E is unset (see crates/testenv).

use std::path::Path;

use testenv::churn::{self, ENABLEMENTS, Watched};
use testenv::{GoProcess, TestEnv, free_port, tools_or_skip};

/// A descheduler with the admin kubeconfig, and its metrics address.
fn spawn(env: &TestEnv, name: &str, program: &Path) -> anyhow::Result<(GoProcess, String)> {
    let metrics = format!("127.0.0.1:{}", free_port());
    let args = vec![
        format!("--kubeconfig={}", env.kubeconfig().display()),
        "--leader-elect=false".to_string(),
        format!("--metrics-bind-address={metrics}"),
        format!("--health-probe-bind-address=127.0.0.1:{}", free_port()),
    ];
    Ok((env.spawn_process(name, program, &args)?, metrics))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_churning_unreachable_cluster_costs_one_retry_queue() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("a_churning_unreachable_cluster_costs_one_retry_queue") else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).members(0).start().await?;
    let size = churn::unreachable_cluster(&env, ENABLEMENTS, free_port()).await?;
    assert!(size > 800_000, "the Cluster is {size} bytes");

    let go_bin = env.tools().bin("karmada-descheduler");
    let (go, go_metrics) = spawn(&env, "go-descheduler", &go_bin)?;
    let ours_bin = Path::new(env!("CARGO_BIN_EXE_karmada-descheduler"));
    let (ours, metrics) = spawn(&env, "rs-descheduler", ours_bin)?;
    let (mine, theirs) = churn::side_by_side(
        &env,
        &Watched {
            process: &ours,
            metrics,
            go: false,
        },
        &Watched {
            process: &go,
            metrics: go_metrics,
            go: true,
        },
    )
    .await?;
    churn::check(mine, theirs).map_err(|e| anyhow::anyhow!("{e}\n{}", ours.log_tail(20)))
}
