//! `-v` as an operator reads it (docs/daemon.md, logging): the real binary against a real
//! control plane with estimators (gRPC over HTTP/2, so h2, hyper, tower and tonic all have
//! debug lines to give). At `--v=4` the log holds our own V(4) lines and none of those
//! libraries' lines; `--vmodule=h2=8` still turns h2's debug lines on, and only h2's.
//!
//! `--add-dir-header` prints each line's source path, which tells a dependency's line (a path
//! in the cargo registry, `.../h2-0.4.20/src/...`) from ours.
//!
//! Skipped when the Go binaries are absent and KARMADA_E2E is unset (see crates/testenv).

mod common;

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use testenv::{TestEnv, free_port, http_get, tools_or_skip, wait_for};

use common::*;

/// The libraries whose connection-level chatter must stay out of a `-v=4` log.
const QUIET: &[&str] = &[
    "h2",
    "hyper",
    "hyper-util",
    "tower",
    "tower-http",
    "tonic",
    "rustls",
    "tokio-rustls",
    "kube-client",
];

/// The crate a klog line (with `--add-dir-header`) comes from when it is a dependency's: the
/// `<name>-<version>` directory of its source path. `None` for our own lines.
fn dependency_of(line: &str) -> Option<String> {
    let header = line.split("] ").next()?;
    let path = header.split_whitespace().last()?;
    path.split('/').find_map(|seg| {
        let (name, version) = seg.rsplit_once('-')?;
        let semver = version.split('.').count() >= 3
            && version
                .split('.')
                .take(2)
                .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        semver.then(|| name.to_string())
    })
}

/// Runs our scheduler with `extra` flags until a new binding is scheduled; its log.
async fn log_of_a_run(env: &TestEnv, run: &str, extra: &[&str]) -> anyhow::Result<String> {
    let health = format!("127.0.0.1:{}", free_port());
    let mut args = vec![
        format!("--kubeconfig={}", env.kubeconfig().display()),
        "--leader-elect=false".to_string(),
        format!("--metrics-bind-address=127.0.0.1:{}", free_port()),
        format!("--health-probe-bind-address={health}"),
        "--enable-scheduler-estimator=true".to_string(),
        "--add-dir-header".to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let mut p = env.spawn_process(
        &format!("log-{run}"),
        Path::new(env!("CARGO_BIN_EXE_karmada-scheduler")),
        &args,
    )?;
    wait_for(
        &format!("{run}: /healthz"),
        Duration::from_secs(60),
        || async { Ok(matches!(http_get(&health, "/healthz").await, Ok((200, _))).then_some(())) },
    )
    .await?;
    let rbs = rb_api(env).await?;
    let name = format!("log-{run}");
    env.apply_json(&binding(
        &name,
        2,
        json!({
            "clusterAffinity": {"clusterNames": ["member1", "member2"]},
            "replicaScheduling": {"replicaSchedulingType": "Divided",
                                  "replicaDivisionPreference": "Weighted",
                                  "weightPreference": {"dynamicWeight": "AvailableReplicas"}}
        }),
        "default-scheduler",
    ))
    .await?;
    wait_scheduled(&rbs, &name).await?;
    p.kill();
    Ok(std::fs::read_to_string(p.log_path())?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v4_shows_our_lines_and_not_the_http2_stack() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("v4_shows_our_lines_and_not_the_http2_stack") else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).members(2).start().await?;

    let log = log_of_a_run(&env, "v4", &["--v=4"]).await?;
    let noisy: Vec<&str> = log
        .lines()
        .filter(|l| dependency_of(l).is_some_and(|c| QUIET.contains(&c.as_str())))
        .collect();
    assert!(
        noisy.is_empty(),
        "{} lines of the HTTP/2 stack at --v=4, e.g.:\n{}",
        noisy.len(),
        noisy
            .iter()
            .take(10)
            .copied()
            .collect::<Vec<_>>()
            .join("\n")
    );
    // Our own V(4) line (estimator-client, debug) is there, with its source path.
    let dial = log
        .lines()
        .find(|l| l.contains("] Dialling the estimator"))
        .unwrap_or_else(|| panic!("no V(4) line of ours at --v=4:\n{log}"));
    assert!(dial.contains("crates/estimator-client/src/"), "{dial}");
    assert_eq!(dependency_of(dial), None);
    // The same run at the default verbosity has none of it.
    let v0 = log_of_a_run(&env, "v0", &[]).await?;
    assert!(!v0.contains("] Dialling the estimator"), "{v0}");

    // --vmodule names a dependency crate and brings its debug lines back, only its own.
    let log = log_of_a_run(&env, "vmodule", &["--v=4", "--vmodule=h2=8"]).await?;
    let h2 = log
        .lines()
        .filter(|l| dependency_of(l).as_deref() == Some("h2"))
        .count();
    assert!(h2 > 0, "--vmodule=h2=8 brought no h2 line:\n{log}");
    let others: Vec<&str> = log
        .lines()
        .filter(|l| dependency_of(l).is_some_and(|c| c != "h2" && QUIET.contains(&c.as_str())))
        .collect();
    assert!(others.is_empty(), "{others:#?}");
    assert!(log.contains("] Dialling the estimator"));
    Ok(())
}
