//! The overcommit burst, shared by the end-to-end test (`crates/scheduler/tests/e2e_overcommit.rs`)
//! and the bench row: `K` Divided bindings created at once, whose total demand exceeds what
//! the member clusters' fake nodes can hold, scheduled by one scheduler (ours or the Go one)
//! with the accurate estimators on. Counted afterwards: the replicas placed on each cluster
//! beyond what its nodes hold. The member clusters run no kubelet, so nothing placed ever
//! shows up there: only the schedulers' assumptions (`SchedulingOvercommitProtection`) keep
//! them from handing out the same room twice.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use serde::{Deserialize, Serialize};
use serde_json::json;

use scheduler_core::quantity::Quantity;

use crate::{TestEnv, apply_value, free_port};

/// CPU of one replica, in millicores.
pub const REPLICA_MILLI_CPU: i64 = 500;

/// One run of the burst.
#[derive(Clone, Debug)]
pub struct Burst {
    /// Names the run's bindings, scheduler name and logs.
    pub tag: String,
    /// The scheduler binary.
    pub program: PathBuf,
    /// Flags beyond `--kubeconfig`, `--scheduler-name`, `--leader-elect=false`,
    /// `--enable-scheduler-estimator=true` and the server addresses.
    pub extra_args: Vec<String>,
    pub bindings: usize,
    pub replicas_each: i32,
}

/// `--feature-gates` that turns the protection on.
pub const GATE: &str = "--feature-gates=SchedulingOvercommitProtection=true";

/// The six runs both the test and the bench make: ours at 1 and 16 workers and the Go
/// scheduler, the gate off then on; tags `rs-1-off`, `rs-16-off`, `go-off`, `rs-1-on`,
/// `rs-16-on`, `go-on`.
pub fn standard_runs(ours: &std::path::Path, go: &std::path::Path, bindings: usize) -> Vec<Burst> {
    let runs: [(&str, &std::path::Path, &[&str]); 6] = [
        ("rs-1-off", ours, &["--concurrent-binding-syncs=1"]),
        ("rs-16-off", ours, &["--concurrent-binding-syncs=16"]),
        ("go-off", go, &[]),
        ("rs-1-on", ours, &["--concurrent-binding-syncs=1", GATE]),
        ("rs-16-on", ours, &["--concurrent-binding-syncs=16", GATE]),
        ("go-on", go, &[GATE]),
    ];
    runs.iter()
        .map(|(tag, program, args)| Burst {
            tag: tag.to_string(),
            program: program.to_path_buf(),
            // Ours compared with the Go v1.18.2 scheduler: as v1.18.2 decides.
            extra_args: args
                .iter()
                .chain(if tag.starts_with("rs-") {
                    crate::AS_V1_18_2
                } else {
                    &[]
                })
                .map(|a| a.to_string())
                .collect(),
            bindings,
            replicas_each: 2,
        })
        .collect()
}

/// What a run placed.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct BurstResult {
    pub tag: String,
    /// Replicas of [`REPLICA_MILLI_CPU`] each cluster's nodes hold.
    pub room: BTreeMap<String, i64>,
    /// Replicas placed per cluster.
    pub placed: BTreeMap<String, i64>,
    /// Σ over clusters of what was placed beyond the room.
    pub overcommitted: i64,
    /// Bindings with `Scheduled=True` / `Scheduled=False`.
    pub scheduled: usize,
    pub unschedulable: usize,
    /// Seconds until every binding had a `Scheduled` condition.
    pub seconds: f64,
}

fn milli(q: Option<&k8s_openapi::apimachinery::pkg::api::resource::Quantity>) -> i64 {
    q.and_then(|q| Quantity::from_k8s(q).ok())
        .map_or(0, |q| q.milli_value())
}

/// Replicas of [`REPLICA_MILLI_CPU`] each member's nodes can hold: per node, what its pods
/// (bound, not finished) leave of its allocatable CPU, divided per replica.
pub async fn room(env: &TestEnv) -> anyhow::Result<BTreeMap<String, i64>> {
    let mut out = BTreeMap::new();
    for m in env.members() {
        let client = env.member_client(&m.name).await?;
        let nodes = Api::<Node>::all(client.clone())
            .list(&ListParams::default())
            .await?;
        let pods = Api::<Pod>::all(client).list(&ListParams::default()).await?;
        let mut total = 0;
        for node in &nodes.items {
            let name = node.metadata.name.as_deref().unwrap_or_default();
            let alloc = milli(
                node.status
                    .as_ref()
                    .and_then(|s| s.allocatable.as_ref())
                    .and_then(|a| a.get("cpu")),
            );
            let used: i64 = pods
                .items
                .iter()
                .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(name))
                .filter(|p| {
                    !matches!(
                        p.status.as_ref().and_then(|s| s.phase.as_deref()),
                        Some("Succeeded" | "Failed")
                    )
                })
                .flat_map(|p| p.spec.iter().flat_map(|s| s.containers.iter()))
                .map(|c| {
                    milli(
                        c.resources
                            .as_ref()
                            .and_then(|r| r.requests.as_ref())
                            .and_then(|r| r.get("cpu")),
                    )
                })
                .sum();
            total += ((alloc - used).max(0)) / REPLICA_MILLI_CPU;
        }
        out.insert(m.name.clone(), total);
    }
    Ok(out)
}

fn rb_api(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    let ar = ApiResource {
        group: "work.karmada.io".into(),
        version: "v1alpha2".into(),
        api_version: "work.karmada.io/v1alpha2".into(),
        kind: "ResourceBinding".into(),
        plural: "resourcebindings".into(),
    };
    Api::namespaced_with(client.clone(), ns, &ar)
}

/// Create the burst's bindings in namespace `overcommit-<tag>`, start the scheduler, wait
/// until every binding has a `Scheduled` condition, stop it and count.
pub async fn run(env: &TestEnv, burst: &Burst, timeout: Duration) -> anyhow::Result<BurstResult> {
    let client = env.client().await?;
    let ns = format!("overcommit-{}", burst.tag);
    let scheduler = format!("overcommit-{}", burst.tag);
    apply_value(
        &client,
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
    )
    .await?;
    let members: Vec<String> = env.members().iter().map(|m| m.name.clone()).collect();
    for i in 0..burst.bindings {
        let name = format!("burst-{i:03}");
        apply_value(
            &client,
            &json!({
                "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
                // The policy label: schedulers only take bindings a policy manages.
                "metadata": {"name": name, "namespace": ns,
                             "labels": {"propagationpolicy.karmada.io/permanent-id": format!("{name}-id")}},
                "spec": {
                    "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": ns,
                                 "name": name, "uid": format!("{name}-uid")},
                    "replicas": burst.replicas_each,
                    "replicaRequirements": {"resourceRequest": {"cpu": format!("{REPLICA_MILLI_CPU}m")}},
                    "schedulerName": scheduler,
                    "placement": {
                        "clusterAffinity": {"clusterNames": members},
                        "replicaScheduling": {"replicaSchedulingType": "Divided",
                                              "replicaDivisionPreference": "Aggregated"}
                    }
                }
            }),
        )
        .await
        .with_context(|| format!("creating {name}"))?;
    }
    let mut args = vec![
        format!("--kubeconfig={}", env.kubeconfig().display()),
        format!("--scheduler-name={scheduler}"),
        "--leader-elect=false".to_string(),
        "--enable-scheduler-estimator=true".to_string(),
        format!("--metrics-bind-address=127.0.0.1:{}", free_port()),
        format!("--health-probe-bind-address=127.0.0.1:{}", free_port()),
    ];
    args.extend(burst.extra_args.iter().cloned());
    let start = std::time::Instant::now();
    let mut process =
        env.spawn_process(&format!("overcommit-{}", burst.tag), &burst.program, &args)?;
    let api = rb_api(&client, &ns);
    let mut result = BurstResult {
        tag: burst.tag.clone(),
        room: room(env).await?,
        ..Default::default()
    };
    loop {
        if let Ok(Some(status)) = process.try_wait() {
            anyhow::bail!("{} exited ({status}):\n{}", burst.tag, process.log_tail(30));
        }
        let list = api.list(&ListParams::default()).await?;
        let conditions: Vec<Option<String>> = list
            .items
            .iter()
            .map(|rb| {
                rb.data
                    .pointer("/status/conditions")?
                    .as_array()?
                    .iter()
                    .find(|c| c["type"] == "Scheduled")
                    .and_then(|c| c["status"].as_str().map(str::to_string))
            })
            .collect();
        if conditions.len() == burst.bindings && conditions.iter().all(Option::is_some) {
            result.seconds = start.elapsed().as_secs_f64();
            result.scheduled = conditions
                .iter()
                .filter(|c| c.as_deref() == Some("True"))
                .count();
            result.unschedulable = burst.bindings - result.scheduled;
            for rb in &list.items {
                for c in rb.data["spec"]["clusters"].as_array().into_iter().flatten() {
                    let name = c["name"].as_str().unwrap_or_default().to_string();
                    *result.placed.entry(name).or_default() += c["replicas"].as_i64().unwrap_or(0);
                }
            }
            break;
        }
        if start.elapsed() > timeout {
            anyhow::bail!(
                "{}: not every binding scheduled within {timeout:?}:\n{}",
                burst.tag,
                process.log_tail(40)
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    process.kill();
    result.overcommitted = result
        .placed
        .iter()
        .map(|(c, n)| (n - result.room.get(c).copied().unwrap_or(0)).max(0))
        .sum();
    Ok(result)
}
