//! Hostile HTTP clients against the real binary, with Go v1.18.2's figures beside ours:
//! connections to the metrics and probe ports that send half a request header and wait. They
//! are closed within the reference's header timeout (32 s), and the probes keep answering
//! while they are held;
//! SIGTERM ends the process within a few seconds, and with `--exit-on-lost-lease` a lost Lease
//! still ends it with code 255 (the servers close what clients hold after a short grace).
//!
//! Skipped when the Go binaries are absent and KARMADA_E2E is unset (see crates/testenv).

use std::path::Path;
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use testenv::{GoProcess, TestEnv, free_port, http_get, tools_or_skip};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const ELECTION: [&str; 4] = [
    "--leader-elect=true",
    "--leader-elect-lease-duration=4s",
    "--leader-elect-renew-deadline=3s",
    "--leader-elect-retry-period=1s",
];

/// Half-open connections held per port.
const HELD: usize = 50;

struct Daemon {
    process: GoProcess,
    metrics: String,
    health: String,
}

/// The daemon, started with a soft limit of 1,024 open files (a container runtime's default).
fn spawn(env: &TestEnv, name: &str, extra: &[&str]) -> anyhow::Result<Daemon> {
    let metrics = format!("127.0.0.1:{}", free_port());
    let health = format!("127.0.0.1:{}", free_port());
    let mut args = vec![
        format!("--kubeconfig={}", env.kubeconfig().display()),
        format!("--metrics-bind-address={metrics}"),
        format!("--health-probe-bind-address={health}"),
    ];
    args.extend(ELECTION.iter().chain(extra).map(|s| s.to_string()));
    let bin = env!("CARGO_BIN_EXE_karmada-scheduler");
    let mut shell = vec![
        "-c".to_string(),
        "ulimit -Sn 1024 && exec \"$0\" \"$@\"".to_string(),
        bin.to_string(),
    ];
    shell.extend(args);
    Ok(Daemon {
        process: env.spawn_process(name, Path::new("/bin/sh"), &shell)?,
        metrics,
        health,
    })
}

async fn leading(d: &Daemon) -> anyhow::Result<()> {
    testenv::wait_for("the leader", Duration::from_secs(60), || async {
        Ok(http_get(&d.metrics, "/metrics")
            .await
            .is_ok_and(|(_, m)| m.contains("leader_election_master_status{name=\"\"} 1"))
            .then_some(()))
    })
    .await
}

/// `HELD` connections to each of the daemon's ports, each with half a request header.
async fn hold(d: &Daemon) -> anyhow::Result<Vec<TcpStream>> {
    let mut held = Vec::new();
    for addr in [&d.metrics, &d.health] {
        for _ in 0..HELD {
            let mut s = TcpStream::connect(addr.as_str()).await?;
            s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n").await?;
            held.push(s);
        }
    }
    Ok(held)
}

/// The exit status, or an error after `patience` (an outer bound, not a measure).
async fn exited(p: &mut GoProcess, patience: Duration) -> anyhow::Result<(ExitStatus, Duration)> {
    let start = Instant::now();
    loop {
        if let Some(status) = p.try_wait()? {
            return Ok((status, start.elapsed()));
        }
        anyhow::ensure!(
            start.elapsed() < patience,
            "still running after {patience:?}:\n{}",
            p.log_tail(20)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `n` connections to `addr` with half a request header: how many the server closed within
/// `patience` and when the last of them was closed, and whether `/metrics` answered a new
/// client while they were held.
async fn half_headers(
    addr: &str,
    n: usize,
    patience: Duration,
) -> anyhow::Result<(usize, Duration, bool)> {
    let start = Instant::now();
    let mut waits = tokio::task::JoinSet::new();
    for _ in 0..n {
        let mut s = TcpStream::connect(addr).await?;
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n").await?;
        waits.spawn(async move {
            let mut buf = [0u8; 256];
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => return start.elapsed(),
                    Ok(_) => {}
                }
            }
        });
    }
    let answered = http_get(addr, "/metrics")
        .await
        .is_ok_and(|(c, _)| c == 200);
    let (mut closed, mut last) = (0, Duration::ZERO);
    let _ = tokio::time::timeout(patience, async {
        while let Some(took) = waits.join_next().await {
            last = last.max(took.unwrap_or_default());
            closed += 1;
        }
    })
    .await;
    Ok((closed, last, answered))
}

/// SIGTERM while `HELD` connections to each port hold half a header: the exit status and how
/// long it took.
async fn sigterm_while_held(d: &mut Daemon) -> anyhow::Result<(ExitStatus, Duration, usize)> {
    let held = hold(d).await?;
    assert_eq!(http_get(&d.health, "/healthz").await?.0, 200);
    let pid = d.process.pid().to_string();
    anyhow::ensure!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()?
            .success()
    );
    let (status, took) = exited(&mut d.process, Duration::from_secs(60)).await?;
    Ok((status, took, held.len()))
}

/// The reference's case, side by side with Go v1.18.2: 300 connections to the metrics port
/// with half a header are all closed after the header timeout (32 s) and the metrics still
/// answer meanwhile; then SIGTERM with 100 half-open connections ends the process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_the_process_whatever_clients_hold() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("sigterm_ends_the_process_whatever_clients_hold") else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).members(1).start().await?;
    let mut ours = spawn(&env, "rs-held", &[])?;
    let mut go = env.spawn_go_scheduler(&[])?;
    go.wait_healthy(Duration::from_secs(60)).await?;
    let mut go = Daemon {
        metrics: go.metrics_address().unwrap_or_default().to_string(),
        health: go.health_address().unwrap_or_default().to_string(),
        process: go,
    };
    leading(&ours).await?;
    // As a Go program, ours raised its soft limit of open files to the hard one.
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", ours.process.pid()))?;
    let files: Vec<&str> = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .map(|l| l.split_whitespace().skip(3).take(2).collect())
        .unwrap_or_default();
    assert!(files.len() == 2 && files[0] == files[1], "{limits}");

    let patience = Duration::from_secs(90);
    let (rs, golang) = tokio::join!(
        half_headers(&ours.metrics, 300, patience),
        half_headers(&go.metrics, 300, patience)
    );
    let ((closed, last, answered), go_half) = (rs?, golang?);
    eprintln!(
        "300 half-sent headers: ours closed {closed} (the last after {last:?}, /metrics answered \
         meanwhile: {answered}); Go closed {} (the last after {:?}, answered: {})",
        go_half.0, go_half.1, go_half.2
    );
    assert_eq!(
        closed, 300,
        "ours closed {closed} of 300 within {patience:?}"
    );
    assert!(
        answered,
        "/metrics did not answer while the connections were held"
    );

    let (status, took, n) = sigterm_while_held(&mut ours).await?;
    let (go_status, go_took, _) = sigterm_while_held(&mut go).await?;
    eprintln!(
        "SIGTERM with {n} half-open connections: ours exited {status} after {took:?}; \
         Go exited {go_status} after {go_took:?}"
    );
    assert_eq!(status.code(), Some(0), "{}", ours.process.log_tail(20));
    env.stop();
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lease_exits_255_whatever_clients_hold() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("a_lost_lease_exits_255_whatever_clients_hold") else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).members(1).start().await?;
    let mut d = spawn(&env, "rs-exits", &["--exit-on-lost-lease=true"])?;
    leading(&d).await?;
    let held = hold(&d).await?;
    let mut apiserver = testenv::faults::ApiServer::new(&env, "leader")?;
    // Renew deadline 3 s: 8 s of a stopped API server loses the Lease.
    apiserver.pause(Duration::from_secs(8)).await;
    let (status, took) = exited(&mut d.process, Duration::from_secs(30)).await?;
    eprintln!(
        "lost Lease with {} half-open connections: exited {status} {took:?} after the API server came back",
        held.len()
    );
    assert_eq!(status.code(), Some(255), "{}", d.process.log_tail(20));
    drop((held, apiserver));
    env.stop();
    Ok(())
}
