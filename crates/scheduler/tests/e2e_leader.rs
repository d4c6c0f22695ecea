//! Leader election end to end, with the real binary: two replicas share the Lease and only the
//! leader schedules; when the leader is killed the standby takes over within the lease
//! duration; SIGTERM releases the Lease; and a Go karmada-scheduler v1.18.2 holding the same
//! Lease keeps ours in standby until it dies, so a fleet can be migrated one replica at a time.
//!
//! Skipped when the Go binaries are absent and KARMADA_E2E is unset (see crates/testenv).

mod common;

use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use serde_json::json;
use testenv::{GoProcess, TestEnv, free_port, tools_or_skip, wait_for};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use common::*;

const ELECTION: [&str; 4] = [
    "--leader-elect=true",
    "--leader-elect-lease-duration=4s",
    "--leader-elect-renew-deadline=3s",
    "--leader-elect-retry-period=1s",
];

struct Replica {
    process: GoProcess,
    metrics: String,
}

fn spawn_ours(env: &TestEnv, name: &str) -> anyhow::Result<Replica> {
    spawn_ours_with(env, name, &[])
}

fn spawn_ours_with(env: &TestEnv, name: &str, extra: &[&str]) -> anyhow::Result<Replica> {
    let port = free_port();
    let metrics = format!("127.0.0.1:{port}");
    let mut args = vec![
        format!("--kubeconfig={}", env.kubeconfig().display()),
        format!("--metrics-bind-address={metrics}"),
        format!("--health-probe-bind-address={metrics}"),
        "--v=4".to_string(),
    ];
    args.extend(
        ELECTION
            .iter()
            .chain(extra)
            .chain(testenv::AS_V1_18_2)
            .map(|s| s.to_string()),
    );
    let bin = Path::new(env!("CARGO_BIN_EXE_karmada-scheduler"));
    Ok(Replica {
        process: env.spawn_process(name, bin, &args)?,
        metrics,
    })
}

async fn http_get(addr: &str, path: &str) -> Option<String> {
    let mut s = tokio::net::TcpStream::connect(addr).await.ok()?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .ok()?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).await.ok()?;
    buf.starts_with("HTTP/1.1 200")
        .then(|| buf.split("\r\n\r\n").nth(1).unwrap_or_default().to_string())
}

async fn is_leader(r: &Replica) -> bool {
    http_get(&r.metrics, "/metrics")
        .await
        .is_some_and(|m| m.contains("leader_election_master_status{name=\"\"} 1"))
}

async fn attempts(r: &Replica) -> usize {
    let Some(m) = http_get(&r.metrics, "/metrics").await else {
        return 0;
    };
    m.lines()
        .filter(|l| l.starts_with("karmada_scheduler_schedule_attempts_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as usize
}

async fn lease(env: &TestEnv) -> anyhow::Result<Option<Lease>> {
    let api: Api<Lease> = Api::namespaced(env.client().await?, "karmada-system");
    Ok(api.get_opt("karmada-scheduler").await?)
}

fn holder(l: &Lease) -> String {
    l.spec
        .as_ref()
        .and_then(|s| s.holder_identity.clone())
        .unwrap_or_default()
}

fn placement() -> serde_json::Value {
    json!({"clusterAffinity": {"clusterNames": ["member1"]},
           "replicaScheduling": {"replicaSchedulingType": "Duplicated"}})
}

fn sigterm(pid: u32) {
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_schedules_and_the_standby_takes_over() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("only_the_leader_schedules_and_the_standby_takes_over") else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).members(1).start().await?;
    let rbs = rb_api(&env).await?;
    let mut a = spawn_ours(&env, "rs-a")?;
    let mut b = spawn_ours(&env, "rs-b")?;
    // Both serve probes; exactly one leads.
    let (leader_is_a, _) = wait_for("a leader", Duration::from_secs(60), || async {
        let (la, lb) = (is_leader(&a).await, is_leader(&b).await);
        Ok((la ^ lb).then_some((la, lb)))
    })
    .await?;
    assert!(
        http_get(&a.metrics, "/healthz").await.is_some()
            && http_get(&b.metrics, "/healthz").await.is_some()
    );
    let l = lease(&env).await?.expect("lease exists");
    let spec = l.spec.clone().unwrap();
    assert_eq!(spec.lease_duration_seconds, Some(4));
    assert!(spec.acquire_time.is_some() && spec.renew_time.is_some());
    let first_holder = holder(&l);
    assert!(
        first_holder.contains('_'),
        "identity is <hostname>_<uuid>: {first_holder}"
    );

    env.apply_json(&binding("one", 1, placement(), "default-scheduler"))
        .await?;
    wait_scheduled(&rbs, "one").await?;
    let (leader, standby) = if leader_is_a {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    assert!(attempts(leader).await >= 1);
    assert_eq!(attempts(standby).await, 0, "the standby does not schedule");

    // Kill the leader: the standby takes over within the lease duration (+ retry period).
    leader.process.kill();
    wait_for("standby leads", Duration::from_secs(15), || async {
        Ok(is_leader(standby).await.then_some(()))
    })
    .await?;
    let l = lease(&env).await?.expect("lease");
    assert_ne!(holder(&l), first_holder);
    assert_eq!(l.spec.as_ref().and_then(|s| s.lease_transitions), Some(1));
    env.apply_json(&binding("two", 1, placement(), "default-scheduler"))
        .await?;
    wait_scheduled(&rbs, "two").await?;

    // SIGTERM: scheduling stops, the Lease is released, exit code 0.
    sigterm(standby.process.pid());
    let mut status = None;
    for _ in 0..200 {
        status = standby.process.try_wait()?;
        if status.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let status = status.expect("exited within 20 s of SIGTERM");
    assert!(
        status.success(),
        "{status}\n{}",
        standby.process.log_tail(20)
    );
    let l = lease(&env).await?.expect("lease");
    assert_eq!(holder(&l), "", "released");
    assert_eq!(
        l.spec.as_ref().and_then(|s| s.lease_duration_seconds),
        Some(1)
    );
    env.stop();
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_and_rust_replicas_share_the_lease() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("go_and_rust_replicas_share_the_lease") else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).members(1).start().await?;
    let rbs = rb_api(&env).await?;
    let mut go = env.spawn_go_scheduler(&ELECTION)?;
    go.wait_healthy(Duration::from_secs(60)).await?;
    let go_holder = wait_for(
        "the Go scheduler leads",
        Duration::from_secs(30),
        || async {
            Ok(lease(&env)
                .await?
                .map(|l| holder(&l))
                .filter(|h| !h.is_empty()))
        },
    )
    .await?;
    let ours = spawn_ours(&env, "rs-standby")?;
    wait_for("our replica serves", Duration::from_secs(30), || async {
        Ok(http_get(&ours.metrics, "/healthz").await.map(|_| ()))
    })
    .await?;
    env.apply_json(&binding("by-go", 1, placement(), "default-scheduler"))
        .await?;
    wait_scheduled(&rbs, "by-go").await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        !is_leader(&ours).await,
        "ours stays standby while Go renews"
    );
    assert_eq!(attempts(&ours).await, 0);
    assert_eq!(
        lease(&env).await?.map(|l| holder(&l)),
        Some(go_holder.clone())
    );

    go.kill();
    wait_for(
        "ours takes over from Go",
        Duration::from_secs(15),
        || async { Ok(is_leader(&ours).await.then_some(())) },
    )
    .await?;
    let l = lease(&env).await?.expect("lease");
    assert_ne!(holder(&l), go_holder);
    assert_eq!(l.spec.as_ref().and_then(|s| s.lease_transitions), Some(1));
    env.apply_json(&binding("by-rust", 1, placement(), "default-scheduler"))
        .await?;
    wait_scheduled(&rbs, "by-rust").await?;
    drop(ours);
    env.stop();
    Ok(())
}

/// An API server hung for longer than the renew deadline: the Lease is lost. By default ours
/// pauses, campaigns again and schedules once the server is back, without exiting; with
/// `--exit-on-lost-lease` it exits with code 255, as the Go scheduler does (which also shows
/// that the Lease really was lost in this scenario).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lease_pauses_and_campaigns_again_unless_told_to_exit() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("a_lost_lease_pauses_and_campaigns_again_unless_told_to_exit")
    else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).members(1).start().await?;
    let rbs = rb_api(&env).await?;
    let mut stays = spawn_ours(&env, "rs-stays")?;
    wait_for("the leader", Duration::from_secs(60), || async {
        Ok(is_leader(&stays).await.then_some(()))
    })
    .await?;
    env.apply_json(&binding("before-hang", 1, placement(), "default-scheduler"))
        .await?;
    wait_scheduled(&rbs, "before-hang").await?;

    let mut apiserver = testenv::faults::ApiServer::new(&env, "leader")?;
    // Renew deadline 3 s: 8 s of a stopped API server loses the Lease.
    apiserver.pause(Duration::from_secs(8)).await;
    env.apply_json(&binding("after-hang", 1, placement(), "default-scheduler"))
        .await?;
    wait_scheduled(&rbs, "after-hang").await?;
    assert!(
        stays.process.try_wait()?.is_none(),
        "exited:\n{}",
        stays.process.log_tail(20)
    );
    let log = std::fs::read_to_string(stays.process.log_path())?;
    assert!(
        log.contains("leaderelection lost; scheduling paused, campaigning again"),
        "{log}"
    );
    assert!(log.contains("leading again; scheduling resumes"), "{log}");
    assert!(is_leader(&stays).await);
    stays.process.kill();

    // The reference's behaviour, on request.
    let mut exits = spawn_ours_with(&env, "rs-exits", &["--exit-on-lost-lease=true"])?;
    wait_for("the leader", Duration::from_secs(60), || async {
        Ok(is_leader(&exits).await.then_some(()))
    })
    .await?;
    apiserver.pause(Duration::from_secs(8)).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = exits.process.try_wait()? {
            break status;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "still running after the lost Lease:\n{}",
            exits.process.log_tail(20)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(status.code(), Some(255), "{}", exits.process.log_tail(20));
    drop(apiserver);
    env.stop();
    Ok(())
}
