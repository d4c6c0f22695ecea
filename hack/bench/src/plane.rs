//! What every scenario runs on: a control plane with the workload's clusters, both
//! schedulers started and checked, bindings created, scaled and deleted, phases settled and
//! measured, CPU and `perf` profiles of the processes.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, anyhow};
use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use testenv::{TestEnv, TestEnvBuilder};
use tokio::time::Instant;

use crate::jobs::in_flight;
use crate::observe::{Obs, Observer, binding_api, resource};
use crate::procs::{Sched, cpu_seconds};
use crate::promtext::{self, ATTEMPTS, E2E, Histogram};
use crate::results::Phase;
use crate::scenario::Scenario;
use crate::stats;
use crate::workload::{self, BindingTemplate, NAMESPACES, Workload};

/// No write for this long means settled.
pub const QUIET: Duration = Duration::from_millis(2000);

/// Logs a line to stderr with the seconds since `t0`: `log!(t0, "format", args…)`.
macro_rules! log {
    ($t0:expr, $($msg:tt)+) => {
        eprintln!("[bench +{:>6.1}s] {}", $t0.elapsed().as_secs_f64(), format_args!($($msg)+))
    };
}
pub(crate) use log;

pub fn cluster_api(client: &Client) -> Api<DynamicObject> {
    Api::all_with(
        client.clone(),
        &resource("cluster.karmada.io", "v1alpha1", "Cluster"),
    )
}

pub fn cluster_name(c: &Value) -> &str {
    c["metadata"]["name"].as_str().unwrap_or_default()
}

/// A control plane with the workload's clusters, watched by the bench.
pub struct Plane {
    pub env: TestEnv,
    pub client: Client,
    pub apiserver_pid: u32,
    pub etcd_pid: u32,
    pub wl: Workload,
    pub observer: Observer,
    pub go_bin: PathBuf,
}

impl Plane {
    /// Stops watching, then the control plane (and removes its state unless kept).
    pub fn stop(self) {
        self.observer.stop();
        self.env.stop();
    }
}

/// Starts etcd and kube-apiserver, creates the namespaces and the clusters with their status,
/// and starts watching bindings.
pub async fn start_plane(cfg: &Scenario, t0: Instant) -> anyhow::Result<Plane> {
    ensure_built(&cfg.bins.scheduler, "karmada-scheduler")?;
    let env = start_env(t0, |b| {
        b.members(cfg.estimators.members).nodes_per_member(2)
    })
    .await?;
    let go_bin = go_scheduler(cfg, &env);
    let client = env.client().await?;
    let apiserver_pid = env.pid_of("karmada-apiserver")?;
    let etcd_pid = env.pid_of("etcd")?;

    let nss: Api<Namespace> = Api::all(client.clone());
    for ns in NAMESPACES {
        let obj: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}}))?;
        nss.create(&PostParams::default(), &obj).await?;
    }
    let wl = workload::generate(
        cfg.workload.seed,
        cfg.workload.clusters,
        cfg.workload.bindings,
    );
    create_clusters(&client, &wl.clusters, cfg.create_concurrency).await?;
    log!(t0, "{} clusters created with status", wl.clusters.len());
    let observer = Observer::start(&client).await?;
    Ok(Plane {
        env,
        client,
        apiserver_pid,
        etcd_pid,
        wl,
        observer,
        go_bin,
    })
}

/// A control plane as `build` configures it (its state kept with `BENCH_KEEP`).
pub async fn start_env(
    t0: Instant,
    build: impl FnOnce(TestEnvBuilder) -> TestEnvBuilder,
) -> anyhow::Result<TestEnv> {
    let tools = testenv::Tools::ensure().map_err(|e| anyhow!("{e}"))?;
    log!(t0, "starting the control plane (hack/local-up.sh)");
    let mut env = build(TestEnv::builder().tools(tools)).start().await?;
    if std::env::var_os("BENCH_KEEP").is_some() {
        env.keep_state_on_drop();
    }
    log!(
        t0,
        "control plane up, state in {}",
        env.state_dir().display()
    );
    Ok(env)
}

/// The Go scheduler measured: `--go-bin`, else the tools' build.
pub fn go_scheduler(cfg: &Scenario, env: &TestEnv) -> PathBuf {
    (cfg.bins.go.clone()).unwrap_or_else(|| env.tools().bin("karmada-scheduler"))
}

/// Fails early when one of our release binaries is missing.
pub fn ensure_built(bin: &std::path::Path, package: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        bin.is_file(),
        "{} not found: build it with `cargo build --release -p {package}`",
        bin.display()
    );
    Ok(())
}

/// Starts both schedulers with the same flags and waits until each has scheduled a canary
/// binding (caches synced, writes going through).
pub async fn start_schedulers(
    cfg: &Scenario,
    plane: &Plane,
    t0: Instant,
) -> anyhow::Result<(Sched, Sched)> {
    let mut rust = Sched::spawn(&plane.env, "rust", &cfg.bins.scheduler, &cfg.flags)?;
    let mut go = Sched::spawn(&plane.env, "go", &plane.go_bin, &cfg.flags)?;
    rust.wait_healthy(Duration::from_secs(60)).await?;
    go.wait_healthy(Duration::from_secs(60)).await?;
    // A canary binding each, on the first cluster.
    let first = plane.wl.cluster_names.first().cloned().unwrap_or_default();
    let canaries: Vec<Item> = [&rust.name, &go.name].map(|n| {
        let name = format!("canary-{n}");
        let obj = json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": name, "namespace": NAMESPACES[0],
                         "labels": {"propagationpolicy.karmada.io/permanent-id": name}},
            "spec": {"schedulerName": n,
                     "resource": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": NAMESPACES[0],
                                  "name": name, "uid": "00000000-0000-4000-8000-00000000000c"},
                     "placement": {"clusterAffinity": {"clusterNames": [first]},
                                   "clusterTolerations": [{"operator": "Exists"}]}}
        });
        (format!("{}/{name}", NAMESPACES[0]), n.clone(), obj)
    }).into();
    let (client, observer) = (&plane.client, &plane.observer);
    create_bindings(client, observer, &canaries, 1).await?;
    let keys: Vec<String> = canaries.into_iter().map(|c| c.0).collect();
    let two_minutes = Duration::from_secs(120);
    if !observer
        .settle(&keys, &[], decided, Duration::ZERO, two_minutes)
        .await
    {
        let mut why = String::new();
        for s in [&rust, &go] {
            why += &format!("\n--- {} log:\n{}", s.label, s.proc.log_tail(30));
        }
        anyhow::bail!("the canary bindings were not scheduled within 120s{why}");
    }
    log!(t0, "both schedulers are up and scheduling");
    Ok((rust, go))
}

/// A binding to create: key, scheduler, object.
pub type Item = (String, String, Value);

/// Bindings of `templates` named with `suffix`, the `j`-th owned by `owner(j)`.
pub fn items<'a>(
    templates: &[BindingTemplate],
    suffix: &str,
    owner: impl Fn(usize) -> &'a str,
) -> Vec<Item> {
    templates
        .iter()
        .enumerate()
        .map(|(j, b)| {
            let o = owner(j);
            (b.key(suffix), o.to_string(), b.object(suffix, o))
        })
        .collect()
}

/// The originals of the workload, alternately owned by `sides`.
pub fn originals(wl: &Workload, sides: &[String; 2]) -> Vec<Item> {
    items(&wl.bindings, "", |j| &sides[j % 2])
}

/// The two sides of a side-by-side step, as an array.
pub fn two<T>(v: Vec<T>) -> [T; 2] {
    v.try_into()
        .unwrap_or_else(|_| panic!("a side-by-side step has two sides"))
}

pub fn decided(o: &Obs) -> bool {
    o.decided_at.is_some()
}

/// Each side's keys among `items`, waited for until decided (the quiet spell each side's own),
/// and its creation phase from `start`.
pub async fn settle_sides(
    observer: &Observer,
    items: &[Item],
    sides: &[&str],
    start: Instant,
    timeout: Duration,
) -> Vec<(Vec<String>, Phase)> {
    let keys: Vec<Vec<String>> = sides.iter().map(|s| keys_of(items, s)).collect();
    let oks = futures::future::join_all(
        keys.iter()
            .zip(sides)
            .map(|(k, s)| observer.settle(k, std::slice::from_ref(s), decided, QUIET, timeout)),
    )
    .await;
    keys.into_iter()
        .zip(oks)
        .map(|(k, ok)| {
            let p = creation_phase(observer, &k, start, ok);
            (k, p)
        })
        .collect()
}

/// A batch created at once and settled: when it started and when the last POST returned, and
/// each side's keys and phase.
pub struct Batch {
    pub start: Instant,
    pub created: Instant,
    pub sides: Vec<(Vec<String>, Phase)>,
}

/// Creates `items` with the scenario's concurrency and waits for them ([`settle_sides`]).
pub async fn create_and_settle(
    cfg: &Scenario,
    client: &Client,
    observer: &Observer,
    items: &[Item],
    sides: &[&str],
) -> anyhow::Result<Batch> {
    let start = Instant::now();
    create_bindings(client, observer, items, cfg.create_concurrency).await?;
    let created = Instant::now();
    let sides = settle_sides(observer, items, sides, start, cfg.settle_timeout).await;
    Ok(Batch {
        start,
        created,
        sides,
    })
}

pub fn keys_of(items: &[Item], sched: &str) -> Vec<String> {
    items
        .iter()
        .filter(|(_, s, _)| s == sched)
        .map(|(k, _, _)| k.clone())
        .collect()
}

async fn create_clusters(
    client: &Client,
    clusters: &[Value],
    concurrency: usize,
) -> anyhow::Result<()> {
    let api = cluster_api(client);
    in_flight(
        clusters.iter().map(|c| create_cluster(&api, c)),
        concurrency,
    )
    .await
}

/// Creates a cluster of the workload, then its status.
async fn create_cluster(api: &Api<DynamicObject>, c: &Value) -> anyhow::Result<()> {
    let name = cluster_name(c);
    let mut body = c.clone();
    let status = body.as_object_mut().and_then(|m| m.remove("status"));
    let obj: DynamicObject = serde_json::from_value(body.clone())?;
    match api.create(&PostParams::default(), &obj).await {
        Ok(_) => {}
        // A member of the control plane (real estimator): it takes the workload's labels, spec
        // and status.
        Err(kube::Error::Api(e)) if e.code == 409 => {
            let patch = json!({"metadata": {"labels": body["metadata"]["labels"]},
                               "spec": body["spec"]});
            api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .with_context(|| format!("updating member cluster {name}"))?;
        }
        Err(e) => return Err(anyhow!(e).context(format!("creating cluster {name}"))),
    }
    let status = Patch::Merge(json!({ "status": status }));
    api.patch_status(name, &PatchParams::default(), &status)
        .await
        .with_context(|| format!("setting the status of cluster {name}"))?;
    Ok(())
}

/// Creates one binding, recording its creation instant just before the POST.
pub async fn create_one(
    client: &Client,
    observer: &Observer,
    key: &str,
    sched: &str,
    obj: &Value,
) -> anyhow::Result<()> {
    let ns = obj.pointer("/metadata/namespace").and_then(Value::as_str);
    let api = binding_api(client, ns);
    let dobj: DynamicObject = serde_json::from_value(obj.clone())?;
    observer.created(key, sched);
    api.create(&PostParams::default(), &dobj)
        .await
        .with_context(|| format!("creating binding {key}"))?;
    Ok(())
}

/// Creates `(key, scheduler, object)` bindings with `concurrency` POSTs in flight, recording
/// each creation instant just before its POST.
pub async fn create_bindings(
    client: &Client,
    observer: &Observer,
    items: &[Item],
    concurrency: usize,
) -> anyhow::Result<()> {
    in_flight(
        items.iter().map(|(key, sched, obj)| {
            let client = client.clone();
            let observer = observer.clone();
            async move { create_one(&client, &observer, key, sched, obj).await }
        }),
        concurrency,
    )
    .await
}

/// Deletes `(key, scheduler, object)` bindings, `concurrency` at a time.
pub async fn delete_bindings(
    client: &Client,
    items: &[Item],
    concurrency: usize,
) -> anyhow::Result<()> {
    in_flight(
        items
            .iter()
            .map(|(key, _, obj)| delete_one(client, key, obj)),
        concurrency,
    )
    .await
}

/// Deletes the binding `obj` (named `key` in errors); one already gone counts as deleted.
pub async fn delete_one(client: &Client, key: &str, obj: &Value) -> anyhow::Result<()> {
    let ns = obj.pointer("/metadata/namespace").and_then(Value::as_str);
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    delete_binding(client, ns, name)
        .await
        .with_context(|| format!("deleting binding {key}"))
}

/// Deletes a ResourceBinding (`ns` given) or ClusterResourceBinding by name; one already gone
/// counts as deleted.
pub async fn delete_binding(client: &Client, ns: Option<&str>, name: &str) -> anyhow::Result<()> {
    match binding_api(client, ns)
        .delete(name, &DeleteParams::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Patches `spec.replicas` of one binding (counted as the bench's own write); returns its new
/// generation.
pub async fn scale_one(
    client: &Client,
    observer: &Observer,
    key: &str,
    name: &str,
    ns: Option<&str>,
    replicas: i64,
) -> anyhow::Result<i64> {
    observer.own_write(key);
    let obj = binding_api(client, ns)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"replicas": replicas}})),
        )
        .await
        .with_context(|| format!("scaling {key}"))?;
    Ok(obj.metadata.generation.unwrap_or(0))
}

/// Like [`Observer::settle`] with a per-key goal, from `start`: waits until `done` holds for
/// every key and the bindings of `scheds` have had no write for [`QUIET`] since `start`; gives
/// up when they have been quiet for 5x as long (goals that a failing attempt never reaches).
pub async fn settle_keys(
    observer: &Observer,
    keys: &[String],
    scheds: &[impl AsRef<str>],
    start: Instant,
    done: impl Fn(&str, &Obs) -> bool,
    timeout: Duration,
) -> bool {
    loop {
        let snap = observer.snapshot(keys);
        let all = keys.iter().zip(&snap).all(|(k, o)| done(k, o));
        let now = Instant::now();
        let last = scheds
            .iter()
            .filter_map(|s| observer.last_write(s.as_ref()))
            .max();
        let idle = now.duration_since(last.unwrap_or(start).max(start));
        if all && idle >= QUIET {
            return true;
        }
        if idle >= QUIET * 5 || now.duration_since(start) > timeout {
            return all;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until neither scheduler has bindings queued and neither finished an attempt during a
/// window of `quiet` (at least ten mean attempts, capped at 30 s): a scheduler that spends
/// seconds per attempt can go without writing for a while and still be busy.
pub async fn wait_queues_idle(scheds: &[&Sched], quiet: Duration, timeout: Duration) {
    let start = Instant::now();
    let mut last: Option<Vec<f64>> = None;
    loop {
        let mut depth = 0.0;
        let mut attempts = Vec::new();
        let mut window = quiet;
        for s in scheds {
            let Ok(m) = s.scrape().await else { continue };
            depth += promtext::sum(&m, "workqueue_depth", &[("name", "scheduler-queue")]);
            attempts.push(promtext::sum(&m, ATTEMPTS, &[]));
            if let Some(mean) = Histogram::read(&m, E2E, &[]).mean() {
                window = window.max(Duration::from_secs_f64((mean * 10.0).min(30.0)));
            }
        }
        if depth == 0.0 && last.as_ref() == Some(&attempts) {
            return;
        }
        if start.elapsed() > timeout {
            return;
        }
        last = (depth == 0.0).then_some(attempts);
        tokio::time::sleep(window).await;
    }
}

pub fn secs(t: Instant, origin: Instant) -> f64 {
    t.saturating_duration_since(origin).as_secs_f64()
}

/// Completions/s of `keys` after `from` (first to last completion after it), when at least
/// ten completed after it.
pub fn rate_after(observer: &Observer, keys: &[String], from: Instant) -> Option<f64> {
    let times: Vec<f64> = observer
        .snapshot(keys)
        .iter()
        .filter_map(|o| o.decided_at)
        .filter(|t| *t > from)
        .map(|t| secs(t, from))
        .collect();
    let last = times.iter().copied().reduce(f64::max)?;
    (times.len() >= 10 && last > 0.0).then(|| times.len() as f64 / last)
}

/// A creation phase: done when decided, latency from just before the POST to `Scheduled=True`.
pub fn creation_phase(
    observer: &Observer,
    keys: &[String],
    start: Instant,
    settled: bool,
) -> Phase {
    phase(observer, keys, start, settled, "(none)", |_, o| {
        let latency = o.true_at.zip(o.created_at);
        let latency = latency.map(|(t, c)| t.saturating_duration_since(c));
        (o.decided_at, latency)
    })
}

/// A phase's figures from its bindings' observations: when each reached the phase's goal
/// and its latency (`goal`), throughput from `start`; `no_reason` counts the bindings without
/// a `Scheduled` condition.
pub fn phase(
    observer: &Observer,
    keys: &[String],
    start: Instant,
    settled: bool,
    no_reason: &str,
    goal: impl Fn(&str, &Obs) -> (Option<Instant>, Option<Duration>),
) -> Phase {
    let snap = observer.snapshot(keys);
    let (mut times, mut lat, mut by_reason) = (Vec::new(), Vec::new(), BTreeMap::new());
    for (k, o) in keys.iter().zip(&snap) {
        let (done, latency) = goal(k, o);
        times.extend(done.map(|t| secs(t, start)));
        lat.extend(latency.map(|l| l.as_secs_f64() * 1000.0));
        let r = o.condition.as_ref().map(|(_, r)| r.clone());
        *by_reason
            .entry(r.unwrap_or_else(|| no_reason.into()))
            .or_insert(0) += 1;
    }
    Phase {
        bindings: snap.len(),
        done: times.len(),
        scheduled_true: snap
            .iter()
            .filter(|o| o.condition.as_ref().is_some_and(|(s, _)| s == "True"))
            .count(),
        by_reason,
        steady_rate_per_s: stats::steady_rate(&times, 0.1, 0.9),
        whole_rate_per_s: stats::whole_rate(&times, 0.0),
        latency_p50_ms: stats::percentile(&lat, 0.5),
        latency_p99_ms: stats::percentile(&lat, 0.99),
        latency_mean_ms: (!lat.is_empty()).then(|| lat.iter().sum::<f64>() / lat.len() as f64),
        makespan_s: times.iter().copied().reduce(f64::max),
        settled,
        rate_after_creation_per_s: None,
    }
}

pub fn cpu_snapshot(pids: &[u32]) -> Vec<f64> {
    pids.iter()
        .map(|p| cpu_seconds(*p).unwrap_or(0.0))
        .collect()
}

/// CPU seconds each of `pids` used since `before` (its [`cpu_snapshot`]).
pub fn cpu_since(pids: &[u32], before: &[f64]) -> Vec<f64> {
    cpu_snapshot(pids)
        .iter()
        .zip(before)
        .map(|(b, a)| b - a)
        .collect()
}

/// Starts `perf record` on each pid (when perf is installed); stopped by [`stop_perf`].
pub fn start_perf(
    env: &TestEnv,
    pids: &[(&str, u32)],
) -> Vec<(String, std::process::Child, PathBuf)> {
    let mut out = Vec::new();
    for (label, pid) in pids {
        let data = env.state_dir().join(format!("perf-{label}.data"));
        let child = std::process::Command::new("perf")
            .args(["record", "-F", "499", "-g", "-o"])
            .arg(&data)
            .args(["-p", &pid.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        match child {
            Ok(c) => out.push((label.to_string(), c, data)),
            Err(e) => eprintln!("bench: perf not available ({e}); no profile"),
        }
    }
    out
}

/// Stops the recorders and returns the top of `perf report` for rust and the apiserver.
pub async fn stop_perf(
    recs: Vec<(String, std::process::Child, PathBuf)>,
) -> (Option<String>, Option<String>) {
    let mut profiles = (None, None);
    for (label, mut child, data) in recs {
        let _ = std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
        let _ = child.wait();
        let report = "report --stdio --no-children --sort dso,symbol --percent-limit 1 -g none -i";
        let out = std::process::Command::new("perf")
            .args(report.split(' '))
            .arg(&data)
            .output();
        let text = out.ok().map(|o| {
            let text = String::from_utf8_lossy(&o.stdout);
            let lines = text
                .lines()
                .filter(|l| !l.starts_with('#') && !l.trim().is_empty());
            let words = |l: &str| {
                let words: Vec<&str> = l.split_whitespace().filter(|w| *w != "-").collect();
                words.join(" ")
            };
            lines.take(30).map(words).collect::<Vec<_>>().join("\n")
        });
        if label == "rust" {
            profiles.0 = text;
        } else {
            profiles.1 = text;
        }
    }
    profiles
}
