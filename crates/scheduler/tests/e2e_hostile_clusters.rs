//! A Cluster whose estimator cannot be reached and whose status changes all the time (a
//! Pull-mode member controls both), on a real control plane: our scheduler and descheduler
//! beside the Go karmada-scheduler and karmada-descheduler v1.18.2, all watching the same
//! Cluster (`testenv::churn`): it carries 2,000 API enablements (about 0.9 MB), its estimator
//! Service names a port nothing listens on, and its status is updated 120 times, back to back.
//!
//! Go merges the events in its `scheduler-estimator` work queue (one item per cluster) and
//! dials once per item. Ours used to start a retry chain per event, each holding a deep copy
//! of the Cluster and dialling again forever (+125 MiB over 120 events). Now each of our
//! daemons grows less than 16 MiB and retries at most twice as often as its Go twin.
//!
//! Skipped when the Go binaries are absent and KARMADA_E2E is unset (see crates/testenv).

mod common;

use std::path::Path;

use testenv::churn::{self, ENABLEMENTS, Watched};
use testenv::{GoProcess, TestEnv, free_port, tools_or_skip};

/// A daemon with the admin kubeconfig and `extra` flags, and its metrics address.
fn spawn(
    env: &TestEnv,
    name: &str,
    program: &Path,
    extra: &[&str],
) -> anyhow::Result<(GoProcess, String)> {
    let metrics = format!("127.0.0.1:{}", free_port());
    let mut args = vec![
        format!("--kubeconfig={}", env.kubeconfig().display()),
        "--leader-elect=false".to_string(),
        format!("--metrics-bind-address={metrics}"),
        format!("--health-probe-bind-address=127.0.0.1:{}", free_port()),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    Ok((env.spawn_process(name, program, &args)?, metrics))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_churning_unreachable_cluster_costs_one_retry_queue() -> anyhow::Result<()> {
    let test = "a_churning_unreachable_cluster_costs_one_retry_queue";
    let Some(tools) = tools_or_skip(test) else {
        return Ok(());
    };
    // Our descheduler is a binary of another package, built beside ours by a workspace build.
    let descheduler = common::image::bin_dir().join("karmada-descheduler");
    if !descheduler.is_file() {
        let msg = format!(
            "{test}: no {} (cargo build --bin karmada-descheduler, or cargo test --workspace)",
            descheduler.display()
        );
        assert!(!testenv::e2e_required(), "{msg}");
        eprintln!("SKIPPED {msg}");
        return Ok(());
    }
    let env = TestEnv::builder().tools(tools).members(0).start().await?;
    let size = churn::unreachable_cluster(&env, ENABLEMENTS, free_port()).await?;
    assert!(size > 800_000, "the Cluster is {size} bytes");

    let estimators = ["--enable-scheduler-estimator=true"];
    let ours = Path::new(env!("CARGO_BIN_EXE_karmada-scheduler"));
    let (go_s, go_s_m) = spawn(
        &env,
        "go-scheduler",
        &env.tools().bin("karmada-scheduler"),
        &estimators,
    )?;
    let (rs_s, rs_s_m) = spawn(&env, "rs-scheduler", ours, &estimators)?;
    let (go_d, go_d_m) = spawn(
        &env,
        "go-descheduler",
        &env.tools().bin("karmada-descheduler"),
        &[],
    )?;
    let (rs_d, rs_d_m) = spawn(&env, "rs-descheduler", &descheduler, &[])?;
    let watched = |name, process, metrics, go| Watched {
        name,
        process,
        metrics,
        go,
    };
    let figures = churn::side_by_side(
        &env,
        &[
            watched("go-scheduler", &go_s, go_s_m, true),
            watched("rs-scheduler", &rs_s, rs_s_m, false),
            watched("go-descheduler", &go_d, go_d_m, true),
            watched("rs-descheduler", &rs_d, rs_d_m, false),
        ],
    )
    .await?;
    let tail = |p: &GoProcess| p.log_tail(20);
    churn::check(figures[1], figures[0])
        .map_err(|e| anyhow::anyhow!("scheduler: {e}\n{}", tail(&rs_s)))?;
    churn::check(figures[3], figures[2])
        .map_err(|e| anyhow::anyhow!("descheduler: {e}\n{}", tail(&rs_d)))
}
