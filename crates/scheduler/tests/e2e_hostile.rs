//! Hostile input end to end, on a real control plane, ours beside the Go karmada-scheduler
//! v1.18.2 with the same flags (each with its own `--scheduler-name`, so each schedules its
//! own bindings of every case):
//!
//! * a ResourceBinding whose member status (`status.aggregatedStatus[].status`, kept by the CRD
//!   as unknown fields) nests 200 levels: the API server stores it; it must not blind the
//!   scheduler's list and watch. It is itself scheduled, and so is every other binding;
//! * four `Divided` bindings with static weights asking for 2,147,483,647 replicas: `/healthz`
//!   keeps answering at once, the Lease stays held, and a binding created meanwhile is
//!   scheduled (Go v1.18.2 holds its probes and Lease but schedules nothing else for minutes,
//!   handing the seats out one at a time).
//!
//! Each case prints Go's figures beside ours, and ours must be at least as good.
//!
//! Skipped when the Go binaries are absent and KARMADA_E2E is unset (see crates/testenv).

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use component_base::watch::RawObject;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ApiResource, Patch, PatchParams};
use serde_json::{Value, json};
use testenv::{GoProcess, TestEnv, free_port, tools_or_skip, wait_for};

use common::*;

/// Levels of nesting in the deep member status.
const DEPTH: usize = 200;
/// How long the probes are watched while the huge bindings are scheduled.
const WATCH: Duration = Duration::from_secs(20);
/// The Lease namespaces of ours and Go's (both name their Lease `karmada-scheduler`).
const LEASE_NS: &str = "hostile";
const GO_LEASE_NS: &str = "hostile-go";
const LEASE: &str = "karmada-scheduler";

fn rb_raw_api(client: &kube::Client) -> Api<RawObject> {
    let ar = ApiResource::erase::<karmada_api::ResourceBinding>(&());
    Api::namespaced_with(client.clone(), "default", &ar)
}

/// A binding's fields that matter here, read leniently (the test must read a deep one too).
async fn read(api: &Api<RawObject>, name: &str) -> anyhow::Result<Value> {
    let o = api.get(name).await?;
    Ok(karmada_api::shallow_value(
        o.json(),
        karmada_api::SHALLOW_DEPTH,
    )?)
}

fn scheduled(rb: &Value) -> Option<&Value> {
    rb.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Scheduled")
}

async fn wait_placed(api: &Api<RawObject>, name: &str, within: Duration) -> anyhow::Result<Value> {
    wait_for(&format!("{name} scheduled"), within, || async {
        let rb = read(api, name).await?;
        Ok(scheduled(&rb)
            .is_some_and(|c| c["status"] == "True")
            .then_some(rb))
    })
    .await
}

/// `DEPTH` nested objects, as JSON.
fn deep_status() -> Value {
    let mut v = json!({"leaf": 1});
    for i in 0..DEPTH {
        v = json!({ format!("l{i}"): v });
    }
    json!({"readyReplicas": 1, "nested": v})
}

fn static_weights(replicas: i32, name: &str, scheduler: &str) -> Value {
    binding(
        name,
        replicas,
        json!({"clusterAffinity": {"clusterNames": ["member1", "member2"]},
               "replicaScheduling": {"replicaSchedulingType": "Divided",
                   "replicaDivisionPreference": "Weighted",
                   "weightPreference": {"staticWeightList": [
                       {"targetCluster": {"clusterNames": ["member1"]}, "weight": 1},
                       {"targetCluster": {"clusterNames": ["member2"]}, "weight": 2}]}}}),
        scheduler,
    )
}

fn spawn_ours(env: &TestEnv, name: &str) -> anyhow::Result<(GoProcess, String)> {
    let health = format!("127.0.0.1:{}", free_port());
    let args = vec![
        format!("--kubeconfig={}", env.kubeconfig().display()),
        "--leader-elect=true".to_string(),
        format!("--leader-elect-resource-namespace={LEASE_NS}"),
        format!("--scheduler-name={name}"),
        "--enable-scheduler-estimator=true".to_string(),
        format!("--metrics-bind-address=127.0.0.1:{}", free_port()),
        format!("--health-probe-bind-address={health}"),
    ];
    let bin = Path::new(env!("CARGO_BIN_EXE_karmada-scheduler"));
    Ok((env.spawn_process("rs-scheduler", bin, &args)?, health))
}

/// One `/healthz` (testenv's GET: 2 s to connect, 5 s to read): whether it answered 200, and
/// how long it took.
async fn probe(addr: &str) -> (bool, Duration) {
    let start = Instant::now();
    let ok = matches!(testenv::http_get(addr, "/healthz").await, Ok((200, _)));
    (ok, start.elapsed())
}

/// What one scheduler did with the huge bindings.
#[derive(Debug)]
struct Figures {
    probes: usize,
    failed: usize,
    p99: Duration,
    lease_kept: bool,
    /// How long a binding created while the huge ones were scheduled took to be placed.
    bystander: Option<Duration>,
}

/// Creates the four huge bindings of `scheduler` and a bystander, probing `health` and reading
/// the Lease `lease` meanwhile.
async fn huge_case(
    env: &TestEnv,
    scheduler: &str,
    health: &str,
    lease_ns: &str,
) -> anyhow::Result<Figures> {
    let lease = LEASE;
    let client = env.client().await?;
    let leases: Api<Lease> = Api::namespaced(client.clone(), lease_ns);
    let holder = |l: &Lease| l.spec.as_ref().and_then(|s| s.holder_identity.clone());
    let before = holder(&leases.get(lease).await?);
    for i in 0..4 {
        env.apply_json(&static_weights(
            i32::MAX,
            &format!("huge-{i}-{scheduler}"),
            scheduler,
        ))
        .await?;
    }
    env.apply_json(&static_weights(
        3,
        &format!("bystander-{scheduler}"),
        scheduler,
    ))
    .await?;
    let created = Instant::now();
    let api = rb_raw_api(&client);
    let mut times = Vec::new();
    let mut failed = 0;
    let mut lease_kept = true;
    let mut bystander = None;
    while created.elapsed() < WATCH {
        let (ok, took) = probe(health).await;
        failed += usize::from(!ok);
        times.push(took);
        if holder(&leases.get(lease).await?) != before {
            lease_kept = false;
        }
        if bystander.is_none()
            && read(&api, &format!("bystander-{scheduler}"))
                .await
                .ok()
                .as_ref()
                .and_then(scheduled)
                .is_some()
        {
            bystander = Some(created.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    times.sort();
    let p99 = times[(times.len() * 99 / 100).min(times.len() - 1)];
    Ok(Figures {
        probes: times.len(),
        failed,
        p99,
        lease_kept,
        bystander,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_bindings_cost_only_themselves() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("hostile_bindings_cost_only_themselves") else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).members(2).start().await?;
    let client = env.client().await?;
    for ns in [LEASE_NS, GO_LEASE_NS] {
        env.apply_json(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
            .await?;
    }
    let api = rb_raw_api(&client);

    // The deep bindings exist before either scheduler starts: they are in the first list.
    for s in ["rs-scheduler", "go-scheduler"] {
        let name = format!("deep-{s}");
        env.apply_json(&static_weights(2, &name, s)).await?;
        let body = json!({"status": {"aggregatedStatus": [
            {"clusterName": "member1", "status": deep_status()}]}});
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&body))
            .await
            .or_else(|e| anyhow::bail!("the API server refused the deep status: {e}"))?;
        let stored = api.get(&name).await?;
        assert!(
            stored.json().contains(r#""leaf":1"#),
            "the API server stored the deep status"
        );
        env.apply_json(&static_weights(2, &format!("plain-{s}"), s))
            .await?;
    }

    let mut go = env.spawn_go_scheduler(&[
        "--enable-scheduler-estimator=true",
        "--scheduler-name=go-scheduler",
        "--leader-elect=true",
        &format!("--leader-elect-resource-namespace={GO_LEASE_NS}"),
    ])?;
    go.wait_healthy(Duration::from_secs(60)).await?;
    let go_health = go.health_address().unwrap_or_default().to_string();
    let (mut ours, health) = spawn_ours(&env, "rs-scheduler")?;
    let placed = async {
        let mut took = Vec::new();
        for s in ["rs-scheduler", "go-scheduler"] {
            let start = Instant::now();
            for n in [format!("deep-{s}"), format!("plain-{s}")] {
                wait_placed(&api, &n, WAIT).await?;
            }
            took.push(start.elapsed());
        }
        anyhow::Ok(took)
    }
    .await;
    let took = placed.map_err(|e| {
        anyhow::anyhow!(
            "{e:#}\nours exited: {:?}; its log ends with:\n{}",
            ours.try_wait().ok().flatten(),
            ours.log_tail(40)
        )
    })?;
    println!(
        "deep status ({DEPTH} levels): ours placed it and its neighbour; Go too ({:?} / {:?})",
        took[0], took[1]
    );
    // Both placed the deep twins alike.
    let (a, b) = (
        read(&api, "deep-rs-scheduler").await?,
        read(&api, "deep-go-scheduler").await?,
    );
    assert_eq!(a["spec"]["clusters"], b["spec"]["clusters"]);
    // Ours also wrote its status alongside the member status it could not have held as a value.
    assert!(
        api.get("deep-rs-scheduler")
            .await?
            .json()
            .contains(r#""leaf":1"#)
    );

    let theirs = huge_case(&env, "go-scheduler", &go_health, GO_LEASE_NS).await;
    // Still dividing; it would hold a core for minutes.
    drop(go);
    let mine = huge_case(&env, "rs-scheduler", &health, LEASE_NS).await;
    println!("2,147,483,647 replicas x4, Go:   {theirs:?}");
    println!("2,147,483,647 replicas x4, ours: {mine:?}");
    let mine = mine?;
    assert!(mine.probes >= 10, "{mine:?}");
    assert_eq!(mine.failed, 0, "{mine:?}\n{}", ours.log_tail(40));
    assert!(mine.p99 < Duration::from_secs(1), "{mine:?}");
    assert!(mine.lease_kept, "{mine:?}");
    assert!(mine.bystander.is_some(), "{mine:?}\n{}", ours.log_tail(40));
    // Go hands the seats out one at a time and is still at it (minutes per binding), so ours
    // is checked against the division itself: weights 1:2 would give member2 about
    // 1,431,655,765, but a cluster's priority turns negative past 2^30 seats (the i32
    // denominator wraps, in Go as here), so member2 stops at 2^30 and member1 takes the rest.
    for i in 0..4 {
        let rb = wait_placed(&api, &format!("huge-{i}-rs-scheduler"), WAIT).await?;
        assert_eq!(
            rb["spec"]["clusters"],
            json!([{"name": "member1", "replicas": (1 << 30) - 1},
                   {"name": "member2", "replicas": 1 << 30}]),
            "huge-{i}"
        );
    }
    if let Ok(theirs) = theirs {
        assert!(mine.failed <= theirs.failed);
    }
    assert!(ours.try_wait()?.is_none(), "ours is still running");
    Ok(())
}
