//! The descheduler's servers against hostile HTTP clients, with the real binary: while 50
//! connections to each of its metrics and probe ports hold half a request header, the probes
//! still answer, and SIGTERM ends the process within a few seconds.
//!
//! Skipped when the Go binaries are absent and KARMADA_E2E is unset (see crates/testenv).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use testenv::{TestEnv, free_port, http_get, tools_or_skip};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_the_descheduler_whatever_clients_hold() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("sigterm_ends_the_descheduler_whatever_clients_hold") else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).members(1).start().await?;
    let metrics = format!("127.0.0.1:{}", free_port());
    let health = format!("127.0.0.1:{}", free_port());
    let args = vec![
        format!("--kubeconfig={}", env.kubeconfig().display()),
        "--leader-elect=true".to_string(),
        "--leader-elect-lease-duration=4s".to_string(),
        "--leader-elect-renew-deadline=3s".to_string(),
        "--leader-elect-retry-period=1s".to_string(),
        format!("--metrics-bind-address={metrics}"),
        format!("--health-probe-bind-address={health}"),
    ];
    let bin = Path::new(env!("CARGO_BIN_EXE_karmada-descheduler"));
    let mut p = env.spawn_process("rs-descheduler-held", bin, &args)?;
    testenv::wait_for("the leader", Duration::from_secs(60), || async {
        Ok(http_get(&metrics, "/metrics")
            .await
            .is_ok_and(|(_, m)| m.contains("leader_election_master_status{name=\"\"} 1"))
            .then_some(()))
    })
    .await?;
    let mut held = Vec::new();
    for addr in [&metrics, &health] {
        for _ in 0..50 {
            let mut s = TcpStream::connect(addr.as_str()).await?;
            s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n").await?;
            held.push(s);
        }
    }
    assert_eq!(http_get(&health, "/healthz").await?.0, 200);
    assert_eq!(http_get(&metrics, "/metrics").await?.0, 200);
    let pid = p.pid().to_string();
    anyhow::ensure!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()?
            .success()
    );
    let start = Instant::now();
    let status = loop {
        if let Some(status) = p.try_wait()? {
            break status;
        }
        anyhow::ensure!(
            start.elapsed() < Duration::from_secs(30),
            "still running 30 s after SIGTERM:\n{}",
            p.log_tail(20)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    eprintln!(
        "SIGTERM with {} half-open connections: exited {status} after {:?}",
        held.len(),
        start.elapsed()
    );
    assert_eq!(status.code(), Some(0), "{}", p.log_tail(20));
    drop(held);
    env.stop();
    Ok(())
}
