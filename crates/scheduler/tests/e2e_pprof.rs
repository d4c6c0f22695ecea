//! `--enable-pprof` on the running daemon: a CPU profile taken while it schedules is read by
//! `go tool pprof` (Go is on the machine for the control plane's build).
//!
//! Skipped when the Go binaries are absent and KARMADA_E2E is unset (see crates/testenv).

mod common;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;
use testenv::{TestEnv, free_port, tools_or_skip};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use common::*;

/// `go` on PATH or where the Go toolchain is usually installed.
fn go() -> Option<PathBuf> {
    let candidates: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).map(|d| d.join("go")).collect())
        .unwrap_or_default();
    candidates
        .into_iter()
        .chain([
            PathBuf::from("/usr/local/go/bin/go"),
            PathBuf::from("/usr/lib/go/bin/go"),
        ])
        .find(|p| p.is_file())
}

/// The body of `GET path` (HTTP/1.0, so the server closes when done).
async fn fetch(addr: &str, path: &str) -> anyhow::Result<(String, Vec<u8>)> {
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| anyhow::anyhow!("no HTTP header in the answer"))?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    Ok((head, raw[split + 4..].to_vec()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_tool_pprof_reads_a_cpu_profile_of_the_running_daemon() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("go_tool_pprof_reads_a_cpu_profile_of_the_running_daemon")
    else {
        return Ok(());
    };
    let Some(go) = go() else {
        anyhow::ensure!(
            !testenv::e2e_required(),
            "KARMADA_E2E is set but no go binary was found"
        );
        eprintln!("skipping: no go binary");
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).members(2).start().await?;
    let pprof_addr = format!("127.0.0.1:{}", free_port());
    let mut daemon = env.spawn_process(
        "ours-pprof",
        std::path::Path::new(env!("CARGO_BIN_EXE_karmada-scheduler")),
        &[
            format!("--kubeconfig={}", env.kubeconfig().display()),
            "--leader-elect=false".into(),
            "--metrics-bind-address=0".into(),
            format!("--health-probe-bind-address=127.0.0.1:{}", free_port()),
            "--enable-pprof=true".into(),
            format!("--profiling-bind-address={pprof_addr}"),
        ],
    )?;
    // Wait for the profiling server.
    let mut up = false;
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(&pprof_addr).await.is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::ensure!(up, "no profiling server:\n{}", daemon.log_tail(20));

    // Give it work for as long as the profile is taken (a fixed batch could be done before
    // the profile starts on a loaded machine, leaving no samples).
    let profiling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let work = {
        let env_kc = env.kubeconfig().to_path_buf();
        let profiling = profiling.clone();
        tokio::spawn(async move {
            let client = testenv::client_from_kubeconfig(&env_kc).await?;
            for i in 0..2000 {
                if i >= 40 && !profiling.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                let p = json!({"clusterAffinity": {"clusterNames": ["member1", "member2"]},
                               "replicaScheduling": {"replicaSchedulingType": "Divided",
                                                     "replicaDivisionPreference": "Weighted"}});
                testenv::apply_value(
                    &client,
                    &binding(&format!("prof-{i}"), 4, p, "default-scheduler"),
                )
                .await?;
            }
            anyhow::Ok(())
        })
    };
    let (head, body) = fetch(&pprof_addr, "/debug/pprof/profile?seconds=3").await?;
    profiling.store(false, std::sync::atomic::Ordering::SeqCst);
    work.await??;
    anyhow::ensure!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "{head}"
    );
    let file = env.state_dir().join("cpu.pb");
    std::fs::write(&file, &body)?;
    let out = std::process::Command::new(&go)
        .args(["tool", "pprof", "-top"])
        .arg(&file)
        .env("PPROF_TMPDIR", env.state_dir())
        .output()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "go tool pprof failed:\n{text}");
    assert!(text.contains("Type: cpu"), "{text}");
    assert!(text.contains("Duration: 3"), "{text}");
    // The daemon's own code shows in the samples (symbolised in process).
    assert!(
        text.contains("karmada_scheduler") || text.contains("tokio"),
        "{text}"
    );

    // A second profile while one runs is refused, as Go refuses it.
    let first = tokio::spawn({
        let a = pprof_addr.clone();
        async move { fetch(&a, "/debug/pprof/profile?seconds=2").await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (head2, body2) = fetch(&pprof_addr, "/debug/pprof/profile?seconds=1").await?;
    assert!(head2.contains(" 500 "), "{head2}");
    assert!(String::from_utf8_lossy(&body2).contains("already in use"));
    let (head1, _) = first.await??;
    assert!(head1.contains(" 200 "), "{head1}");

    daemon.kill();
    env.stop();
    Ok(())
}
