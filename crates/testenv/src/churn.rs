//! A Cluster whose estimator cannot be reached and whose status keeps changing, as a Pull-mode
//! member that writes its own status can make it: the scenario both daemons' tests run side by
//! side with the Go components, and what they read off each process (resident memory, metric
//! samples, log lines).

use std::time::Duration;

use anyhow::Context as _;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::{Value, json};

use crate::{GoProcess, TestEnv};

/// The name of the churning Cluster.
pub const CLUSTER: &str = "churning";
/// API groups in its status: about 0.9 MB.
pub const ENABLEMENTS: usize = 2_000;
/// Status updates, sent back to back.
pub const EVENTS: usize = 120;
/// How much ours may grow over the churn.
pub const GROWTH_LIMIT_MIB: f64 = 16.0;

const MIB: f64 = 1024.0 * 1024.0;

/// A Pull-mode Cluster [`CLUSTER`] with `enablements` API groups in its status (2,000 make about 0.9 MB),
/// and its estimator Service: an `ExternalName` on 127.0.0.1 whose target port is `port`, on
/// which nothing should listen. Returns the Cluster's size as served, in bytes.
pub async fn unreachable_cluster(
    env: &TestEnv,
    enablements: usize,
    port: u16,
) -> anyhow::Result<usize> {
    let name = CLUSTER;
    let groups: Vec<Value> = (0..enablements)
        .map(|i| {
            let resources: Vec<Value> = (0..9)
                .map(|r| json!({"name": format!("widgets{r}x{i}"), "kind": format!("Widget{r}x{i}")}))
                .collect();
            json!({"groupVersion": format!("churn{i}.example.io/v1"), "resources": resources})
        })
        .collect();
    let mut cluster = crate::fixtures::extra_cluster(name, "8", json!({}), json!([]));
    cluster["spec"]["syncMode"] = json!("Pull");
    cluster["status"]["apiEnablements"] = Value::Array(groups);
    env.apply_json(&cluster).await?;
    let service = crate::estimator::external_name_service(name, "127.0.0.1", port);
    env.apply_json(&serde_json::to_value(service)?).await?;
    cluster_size(env, name).await
}

/// The size of the Cluster `name` as the API server serves it, in bytes.
async fn cluster_size(env: &TestEnv, name: &str) -> anyhow::Result<usize> {
    let cluster = clusters(env).await?.get(name).await?;
    Ok(serde_json::to_vec(&cluster)?.len())
}

fn resource() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(
        "cluster.karmada.io",
        "v1alpha1",
        "Cluster",
    ))
}

async fn clusters(env: &TestEnv) -> anyhow::Result<Api<DynamicObject>> {
    Ok(Api::all_with(env.client().await?, &resource()))
}

/// Changes the status of the Cluster `name` `times` times, back to back: each update is an
/// event for every watcher of Clusters.
pub async fn churn_status(env: &TestEnv, name: &str, times: usize) -> anyhow::Result<()> {
    let api = clusters(env).await?;
    for i in 0..times {
        let body = json!({"status": {"resourceSummary": {"allocated": {"pods": i.to_string()}}}});
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(&body))
            .await
            .with_context(|| format!("status update {i} of Cluster {name}"))?;
    }
    Ok(())
}

/// The resident memory of process `pid`, in bytes (`VmRSS`).
pub fn rss_bytes(pid: u32) -> anyhow::Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    component_base::metrics::parse_status_rss(&status)
        .with_context(|| format!("no VmRSS for process {pid}"))
}

/// The sum of the samples of `metric` whose labels include every pair of `labels`, scraped
/// from `/metrics` at `addr` (0 when there is none).
pub async fn metric_sum(addr: &str, metric: &str, labels: &[(&str, &str)]) -> anyhow::Result<f64> {
    let (status, text) = crate::http_get(addr, "/metrics").await?;
    anyhow::ensure!(status == 200, "GET {addr}/metrics: {status}");
    Ok(text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| {
            let name_end = l.find(['{', ' ']).unwrap_or(l.len());
            &l[..name_end] == metric
        })
        .filter(|l| {
            labels
                .iter()
                .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum())
}

/// A daemon under watch: its process and its metrics address.
pub struct Watched<'a> {
    /// For the printout.
    pub name: &'a str,
    pub process: &'a GoProcess,
    pub metrics: String,
    /// Whether it is Go's: its failed dials are counted from its log (`Failed to dial
    /// cluster(...)`, one line per dial), ours from its dial metric.
    pub go: bool,
}

/// What one daemon did over the churn.
#[derive(Debug, Clone, Copy)]
pub struct Figures {
    /// Resident memory growth, MiB.
    pub grew_mib: f64,
    /// `workqueue_retries_total` of the `scheduler-estimator` queue.
    pub retries: f64,
    /// Failed dials of the churning cluster's estimator.
    pub dial_errors: f64,
}

struct Reading {
    rss: f64,
    retries: f64,
    dial_errors: f64,
}

impl Watched<'_> {
    async fn read(&self) -> anyhow::Result<Reading> {
        let retries = metric_sum(
            &self.metrics,
            "workqueue_retries_total",
            &[("name", "scheduler-estimator")],
        )
        .await?;
        let dial_errors = if self.go {
            let log = std::fs::read_to_string(self.process.log_path()).unwrap_or_default();
            let needle = format!("Failed to dial cluster({CLUSTER})");
            log.lines().filter(|l| l.contains(&needle)).count() as f64
        } else {
            metric_sum(
                &self.metrics,
                "karmada_scheduler_estimator_client_dials_total",
                &[("cluster", CLUSTER), ("result", "error")],
            )
            .await?
        };
        Ok(Reading {
            rss: rss_bytes(self.process.pid())?,
            retries,
            dial_errors,
        })
    }
}

/// With the daemons running and the unreachable Cluster made ([`unreachable_cluster`]): lets
/// each fail its first dials, churns the Cluster's status once and reads what each did
/// meanwhile, in the order given. Prints them.
pub async fn side_by_side(env: &TestEnv, daemons: &[Watched<'_>]) -> anyhow::Result<Vec<Figures>> {
    crate::wait_for("the daemons' metrics", Duration::from_secs(60), || async {
        for d in daemons {
            if d.read().await.is_err() {
                return Ok(None);
            }
        }
        Ok(Some(()))
    })
    .await?;
    tokio::time::sleep(Duration::from_secs(10)).await;
    let mut before = Vec::new();
    for d in daemons {
        before.push(d.read().await?);
    }
    let started = std::time::Instant::now();
    churn_status(env, CLUSTER, EVENTS).await?;
    let took = started.elapsed();
    tokio::time::sleep(Duration::from_secs(5)).await;
    println!(
        "{EVENTS} status updates of the Cluster {CLUSTER} in {took:?}, estimator unreachable:"
    );
    let mut figures = Vec::new();
    for (d, b) in daemons.iter().zip(before) {
        let a = d.read().await?;
        let f = Figures {
            grew_mib: (a.rss - b.rss) / MIB,
            retries: a.retries - b.retries,
            dial_errors: a.dial_errors - b.dial_errors,
        };
        println!("  {:<16} {f:?}", d.name);
        figures.push(f);
    }
    Ok(figures)
}

/// Ours grew less than [`GROWTH_LIMIT_MIB`], retried at most twice as often as Go, and kept
/// trying.
pub fn check(mine: Figures, theirs: Figures) -> anyhow::Result<()> {
    anyhow::ensure!(
        mine.grew_mib < GROWTH_LIMIT_MIB,
        "ours grew {:.1} MiB",
        mine.grew_mib
    );
    // Go dials once per work item; each dial waits for its 5 s timeout.
    let go_attempts = theirs.retries.max(theirs.dial_errors);
    anyhow::ensure!(go_attempts >= 1.0, "Go made no attempt: {theirs:?}");
    anyhow::ensure!(
        mine.retries <= 2.0 * go_attempts && mine.dial_errors <= 2.0 * go_attempts,
        "ours {mine:?} against Go {theirs:?}"
    );
    anyhow::ensure!(mine.dial_errors >= 1.0, "ours gave up: {mine:?}");
    Ok(())
}
