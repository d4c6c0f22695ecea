//! The phases of one run: control plane, objects, PATCH ceiling, both schedulers, load,
//! mirrors and agreement, churn, agreement again, memory.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, anyhow};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::{Event as KubeEvent, Namespace};
use kube::Client;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};
use testenv::{TestEnv, TestEnvBuilder};
use tokio::time::Instant;

use crate::ceiling::BindingWrites;
use crate::jobs::in_flight;
use crate::observe::{Obs, Observer, Placement, binding_api};
use crate::procs::{RssSampler, Sched, cpu_seconds, memory_kib};
use crate::promtext::{self, Histogram};
use crate::replay::{CHURN_TAINT_KEY, ChurnOp, Member, OpKind, PairReplay, Tools};
use crate::results::{
    Agreement, ChurnPlan, Disagreement, Hist, MAX_LISTED, Phase, Quiet, Run, Side,
};
use crate::stats;
use crate::workload::{self, BindingTemplate, NAMESPACES, Workload};
use testenv::rng::Rng;

const ALGO: &str = "karmada_scheduler_scheduling_algorithm_duration_seconds";
const E2E: &str = "karmada_scheduler_e2e_scheduling_duration_seconds";
const ATTEMPTS: &str = "karmada_scheduler_schedule_attempts_total";
const STEPS: &[&str] = &["Filter", "Score", "Select", "AssignReplicas"];
const MIRROR: &str = "-m";
const STREAM: &str = "-s";
const SOLO: [&str; 2] = ["-rs", "-gs"];
/// Copies of the Rust solo batch written by the replay ceiling.
const REPLAY: &str = "-rc";
const HOLD: &str = "bench.karmada.io/hold";

pub use crate::scenario::Scenario as Config;

/// No write for this long means settled.
pub const QUIET: Duration = Duration::from_millis(2000);
/// Bindings each scheduler schedules alone in the solo phase (capped at the workload's).
const SOLO_COUNT: usize = 1000;
/// Fractions of workload pairs scaled, and of clusters tainted and deleted, in the churn phase.
const SCALE_FRACTION: f64 = 0.2;
const TAINT_FRACTION: f64 = 0.1;
const DELETE_FRACTION: f64 = 0.05;

pub fn log(start: Instant, msg: impl AsRef<str>) {
    eprintln!(
        "[bench +{:>6.1}s] {}",
        start.elapsed().as_secs_f64(),
        msg.as_ref()
    );
}

fn cluster_api(client: &Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("cluster.karmada.io", "v1alpha1", "Cluster");
    Api::all_with(client.clone(), &ApiResource::from_gvk(&gvk))
}

fn cluster_name(c: &Value) -> &str {
    c["metadata"]["name"].as_str().unwrap_or_default()
}

/// Sets a cluster's finalizers to `finalizers` (the bench's hold, or none).
async fn hold(capi: &Api<DynamicObject>, name: &str, finalizers: Value) -> anyhow::Result<()> {
    let patch = json!({"metadata": {"finalizers": finalizers}});
    capi.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("holding cluster {name}"))?;
    Ok(())
}

/// A churn step on the clusters `idx`: taint them (`NoSchedule`), or delete them while a
/// finalizer holds them so that the schedulers see them terminating; then waits until both
/// schedulers' bindings and queues are quiet. Each side's attempts and settle time.
async fn churn_clusters(
    cfg: &Config,
    plane: &Plane,
    scheds: [&Sched; 2],
    kind: OpKind,
    idx: &[usize],
    ops: &mut Vec<ChurnOp>,
) -> anyhow::Result<[Quiet; 2]> {
    let capi = cluster_api(&plane.client);
    let clusters = idx.iter().map(|&i| &plane.wl.clusters[i]);
    if kind == OpKind::Delete {
        for c in clusters.clone() {
            hold(&capi, cluster_name(c), json!([HOLD])).await?;
        }
    }
    let before = scrape(scheds).await?;
    let start = Instant::now();
    for c in clusters {
        let name = cluster_name(c);
        let (started, cluster) = (Instant::now(), name.to_string());
        ops.push(ChurnOp {
            started,
            cluster,
            kind,
        });
        match kind {
            OpKind::Taint => {
                let mut taints = c["spec"]["taints"].as_array().cloned().unwrap_or_default();
                taints.push(
                    json!({"key": CHURN_TAINT_KEY, "value": "taint", "effect": "NoSchedule"}),
                );
                let patch = Patch::Merge(json!({"spec": {"taints": taints}}));
                capi.patch(name, &PatchParams::default(), &patch)
                    .await
                    .with_context(|| format!("tainting cluster {name}"))?;
            }
            OpKind::Delete => {
                capi.delete(name, &DeleteParams::default())
                    .await
                    .with_context(|| format!("deleting cluster {name}"))?;
            }
        }
    }
    let names = scheds.map(|s| s.name.as_str());
    let timeout = cfg.settle_timeout;
    let observer = &plane.observer;
    settle_keys(observer, &[], &names, start, |_, _| true, timeout).await;
    wait_queues_idle(&scheds, QUIET, timeout).await;
    let after = scrape(scheds).await?;
    Ok(std::array::from_fn(|i| {
        quiet_phase(observer, names[i], start, &before[i], &after[i])
    }))
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
pub async fn start_plane(cfg: &Config, t0: Instant) -> anyhow::Result<Plane> {
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
    log(
        t0,
        format!("{} clusters created with status", wl.clusters.len()),
    );
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
    log(t0, "starting the control plane (hack/local-up.sh)");
    let mut env = build(TestEnv::builder().tools(tools)).start().await?;
    if std::env::var_os("BENCH_KEEP").is_some() {
        env.keep_state_on_drop();
    }
    log(
        t0,
        format!("control plane up, state in {}", env.state_dir().display()),
    );
    Ok(env)
}

/// The Go scheduler measured: `--go-bin`, else the tools' build.
pub fn go_scheduler(cfg: &Config, env: &TestEnv) -> PathBuf {
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
    cfg: &Config,
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
    log(t0, "both schedulers are up and scheduling");
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

/// `rust <a>, go <b>` for the console.
fn per_side(side: &[Side; 2], f: impl Fn(&Side) -> String) -> String {
    format!("rust {}, go {}", f(&side[0]), f(&side[1]))
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
    cfg: &Config,
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

/// Runs every phase and returns the figures.
pub async fn run(cfg: &Config) -> anyhow::Result<Run> {
    let t0 = Instant::now();
    let plane = start_plane(cfg, t0).await?;
    let (client, wl, observer) = (&plane.client, &plane.wl, &plane.observer);

    // The ceiling, before any scheduler runs.
    let mut ceiling_by = BTreeMap::new();
    for c in cfg.ceiling.concurrency {
        let secs = Duration::from_secs(cfg.ceiling.seconds);
        let r = crate::ceiling::measure(client, NAMESPACES[0], c, secs).await?;
        log(t0, format!("PATCH ceiling with {c} in flight: {r:.0}/s"));
        ceiling_by.insert(c.to_string(), r);
    }

    let (mut rust, mut go) = start_schedulers(cfg, &plane, t0).await?;
    // The schedulers, kube-apiserver, etcd and (for the solo phases) the bench itself, whose
    // watch decodes every write on the same cores.
    let pids = [
        rust.pid(),
        go.pid(),
        plane.apiserver_pid,
        plane.etcd_pid,
        std::process::id(),
    ];
    let (sampler, sampler_task) = RssSampler::start(pids[..4].to_vec(), Duration::from_millis(250));
    let sides = [rust.name.clone(), go.name.clone()];
    let both = [sides[0].as_str(), sides[1].as_str()];
    // Writes to a side's bindings (but the bench's own) and its Event writes, per binding.
    let writes = |i: usize, keys: &[String], ev0: &[f64], ev1: &[f64]| {
        let n = keys.len().max(1) as f64;
        let own = observer.snapshot(keys).into_iter();
        let binding = own
            .map(|o| (o.modifications - o.own_writes) as f64)
            .sum::<f64>();
        (binding / n, (ev1[i] - ev0[i]) / n)
    };
    // Each side's figures, filled in phase by phase.
    let mut side: [Side; 2] = Default::default();

    // ---- Load: all originals, as fast as the creator goes.
    let ev0 = event_writes(client, &sides).await?;
    let cpu0 = cpu_snapshot(&pids[..4]);
    let perf = if cfg.samples.perf {
        start_perf(&plane.env, &[("rust", rust.pid())])
    } else {
        vec![]
    };
    let originals = originals(wl, &sides);
    let load = create_and_settle(cfg, client, observer, &originals, &both).await?;
    let create_rate = originals.len() as f64 / (load.created - load.start).as_secs_f64();
    let (profile_rust, profile_apiserver) = stop_perf(perf).await;
    let load_wall_s = load.start.elapsed().as_secs_f64();
    let cpu = cpu_since(&pids[..4], &cpu0);
    let ev1 = event_writes(client, &sides).await?;
    rust.check_alive()?;
    go.check_alive()?;
    for (i, (keys, phase)) in load.sides.into_iter().enumerate() {
        let s = &mut side[i];
        (s.binding_writes_per_binding, s.event_writes_per_binding) = writes(i, &keys, &ev0, &ev1);
        (s.cpu_load_s, s.load) = (cpu[i], phase);
    }
    let rate_p99 = |p: &Phase| {
        let (r, p99) = (p.steady_rate_per_s, p.latency_p99_ms);
        format!("{:.0}/s p99 {:.0} ms", r.unwrap_or(0.0), p99.unwrap_or(0.0))
    };
    let n = originals.len();
    let load_log = per_side(&side, |s| rate_p99(&s.load));
    log(
        t0,
        format!("{n} bindings created ({create_rate:.0}/s); load: {load_log}"),
    );

    // ---- Mirrors: every binding again, for the other scheduler, same spec.
    let mirrors = items(&wl.bindings, MIRROR, |j| &sides[(j + 1) % 2]);
    let mirror = create_and_settle(cfg, client, observer, &mirrors, &both).await?;
    for (s, (_, phase)) in side.iter_mut().zip(mirror.sides) {
        s.mirror = phase;
    }
    let fresh = agreement(observer, wl, &sides[0]);
    log(
        t0,
        format!("agreement on fresh placements: {}", fresh.summary()),
    );

    // ---- Solo: each scheduler alone with a batch of its own while the other is idle, so that
    // neither shares the apiserver (the figure the PATCH ceiling is compared with).
    let solo = &wl.bindings[..SOLO_COUNT.min(wl.bindings.len())];
    let mut replay_by = BTreeMap::new();
    for (i, sched) in sides.iter().enumerate() {
        // Both queues idle first: the Go scheduler re-runs a Duplicated binding on the echo of
        // its own write (about half a second of CPU each at 1,000 clusters), work that outlasts
        // the quiet spell which ends a phase and would otherwise take the cores from the
        // apiserver while the other scheduler is measured alone.
        wait_queues_idle(&[&rust, &go], QUIET, cfg.settle_timeout).await;
        let items = items(solo, SOLO[i], |_| sched);
        let ev0 = event_writes(client, &sides).await?;
        let cpu0 = cpu_snapshot(&pids);
        let batch = create_and_settle(cfg, client, observer, &items, &[sched]).await?;
        let wall = batch.start.elapsed().as_secs_f64();
        let cpu = cpu_since(&pids, &cpu0);
        let ev1 = event_writes(client, &sides).await?;
        let [(keys, mut phase)] = batch.sides.try_into().expect("one side");
        phase.rate_after_creation_per_s = rate_after(observer, &keys, batch.created);
        let (steady, after) = (phase.steady_rate_per_s, phase.rate_after_creation_per_s);
        let (steady, after) = (steady.unwrap_or(0.0), after.unwrap_or(0.0));
        log(
            t0,
            format!("solo {sched}: {steady:.0}/s steady, {after:.0}/s after creation"),
        );
        let s = &mut side[i];
        (
            s.solo_binding_writes_per_binding,
            s.solo_event_writes_per_binding,
        ) = writes(i, &keys, &ev0, &ev1);
        (s.solo, s.solo_wall_s, s.solo_cpu_s) = (phase, wall, cpu);
        if i == 0 {
            // The ceiling for these very writes: a client that only writes what the Rust
            // scheduler wrote, with no decision to make.
            let concurrency = &cfg.ceiling.concurrency;
            replay_by = replay_ceiling(client, solo, SOLO[0], concurrency, None, &[], t0).await?;
        }
        // Gone again, so that the churn phases meet the same bindings as without this phase.
        delete_bindings(client, &items, cfg.create_concurrency).await?;
    }

    // ---- Stream: copies of the first bindings created at a pace both schedulers can follow,
    // so that latency measures reaction time rather than the backlog of a burst.
    let slowest = side.iter().filter_map(|s| s.load.steady_rate_per_s);
    let slowest = slowest.fold(f64::INFINITY, f64::min);
    // A quarter of the slower scheduler's sustained rate for each of them.
    let pace = if slowest.is_finite() {
        (slowest / 2.0).max(1.0)
    } else {
        10.0
    };
    let stream_n = cfg.workload.stream.min(wl.bindings.len());
    let stream_items = items(&wl.bindings[..stream_n], STREAM, |j| &sides[j % 2]);
    // Start from idle queues (retries of unschedulable bindings back off exponentially).
    wait_queues_idle(&[&rust, &go], QUIET, Duration::from_secs(120)).await;
    let stream_start = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / pace));
    for item in &stream_items {
        tick.tick().await;
        let (client, observer, (key, sched, obj)) =
            (client.clone(), observer.clone(), item.clone());
        tokio::spawn(async move {
            if let Err(e) = create_one(&client, &observer, &key, &sched, &obj).await {
                eprintln!("bench: {e:#}");
            }
        });
    }
    let timeout = cfg.settle_timeout;
    let stream = settle_sides(observer, &stream_items, &both, stream_start, timeout).await;
    for (s, (_, phase)) in side.iter_mut().zip(stream) {
        s.stream = phase;
    }
    let latency = |s: &Side| {
        let (p50, p99) = (s.stream.latency_p50_ms, s.stream.latency_p99_ms);
        format!(
            "p50 {:.0} ms p99 {:.0} ms",
            p50.unwrap_or(0.0),
            p99.unwrap_or(0.0)
        )
    };
    log(
        t0,
        format!("stream at {pace:.1}/s: {}", per_side(&side, latency)),
    );

    // ---- Churn: (a) scale changes on pairs of workloads.
    let mut crng = Rng::new(cfg.workload.seed).fork("churn");
    let replicas = |j: &usize| wl.bindings[*j].spec.get("replicas").and_then(Value::as_i64);
    let workloads: Vec<usize> = (0..wl.bindings.len())
        .filter(|j| replicas(j).unwrap_or(0) > 0)
        .collect();
    let scaled = (workloads.len() as f64 * SCALE_FRACTION).round() as usize;
    let mut scale_targets: Vec<ScaleTarget> = Vec::new();
    for i in crng.sample(workloads.len(), scaled) {
        let b = &wl.bindings[workloads[i]];
        let r = b.spec["replicas"].as_i64().unwrap_or(1);
        let delta = if crng.chance(0.6) {
            crng.range(1, r.max(1))
        } else {
            -crng.range(1, (r / 2).max(1))
        };
        for suffix in ["", MIRROR] {
            let name = format!("{}{suffix}", b.name);
            let ns = b.namespace.clone();
            scale_targets.push((b.key(suffix), name, ns, (r + delta).max(1)));
        }
    }
    // From here on the bench keeps every binding's placement history, and the churn
    // operations, for the replay of pairs that end up disagreeing.
    observer.start_history();
    let mut ops: Vec<ChurnOp> = Vec::new();
    let scale_start = Instant::now();
    let targets = patch_replicas(client, observer, &scale_targets, cfg.create_concurrency).await?;
    let scale_keys = sides.clone().map(|sched| {
        let owned = |k: &&String| observer.get(k).is_some_and(|o| o.scheduler == sched);
        (
            targets.keys().filter(owned).cloned().collect::<Vec<_>>(),
            sched,
        )
    });
    let oks = futures::future::join_all(scale_keys.iter().map(|(keys, sched)| {
        let reached =
            |k: &str, o: &Obs| targets.get(k).is_some_and(|(g, _)| o.reached(*g).is_some());
        let own = std::slice::from_ref(sched);
        settle_keys(observer, keys, own, Instant::now(), reached, timeout)
    }))
    .await;
    wait_queues_idle(&[&rust, &go], QUIET, timeout).await;
    for (s, ((keys, _), ok)) in side.iter_mut().zip(scale_keys.iter().zip(oks)) {
        s.scale = scale_phase(observer, keys, &targets, scale_start, ok);
    }
    let done = per_side(&side, |s| {
        format!("{}/{} done", s.scale.done, s.scale.bindings)
    });
    log(
        t0,
        format!("scale churn ({} bindings): {done}", targets.len()),
    );

    // (b) taints on some clusters, then (c) cluster deletions.
    let mut churned = Vec::new();
    for (kind, fraction) in [
        (OpKind::Taint, TAINT_FRACTION),
        (OpKind::Delete, DELETE_FRACTION),
    ] {
        let n = wl.clusters.len();
        let idx = crng.sample(n, ((n as f64 * fraction).round() as usize).max(1));
        let quiet = churn_clusters(cfg, &plane, [&rust, &go], kind, &idx, &mut ops).await?;
        let (what, step): (_, fn(&mut Side) -> &mut Quiet) = match kind {
            OpKind::Taint => ("taint", |s| &mut s.taint),
            OpKind::Delete => ("deletion", |s| &mut s.delete),
        };
        for (s, q) in side.iter_mut().zip(quiet) {
            *step(s) = q;
        }
        log(
            t0,
            format!("{what} churn on {} clusters settled", idx.len()),
        );
        churned.push(idx);
    }
    let [tainted, deleted] = two(churned);
    let mut after = agreement(observer, wl, &sides[0]);
    log(t0, format!("agreement after churn: {}", after.summary()));
    if !after.disagreements.is_empty() {
        let n = after.disagreements.len();
        log(
            t0,
            format!("replaying the history of {n} disagreeing pair(s) through the oracle"),
        );
        after.replays = replay_disagreements(cfg, &plane, &after, ops, scale_start, &sides[0])
            .await
            .unwrap_or_else(|e| {
                let error = Some(format!("{e:#}"));
                vec![PairReplay {
                    error,
                    ..Default::default()
                }]
            });
        let explained = after.replays.iter().filter(|r| r.explained).count();
        let n = after.replays.len();
        log(
            t0,
            format!("replay: {explained}/{n} pair(s) explained by their histories"),
        );
    }

    // ---- Memory at rest and totals.
    let rest_from = Instant::now();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let rest_to = Instant::now();
    let m_end = scrape([&rust, &go]).await?;
    rust.check_alive()?;
    go.check_alive()?;
    sampler_task.abort();
    for (i, (s, sched)) in side.iter_mut().zip([&rust, &go]).enumerate() {
        let samples = &m_end[i];
        let mut means = Vec::new();
        for step in STEPS {
            let h = hist(&Histogram::read(samples, ALGO, &[("schedule_step", step)]));
            means.extend(h.mean_s);
            s.algorithm.insert(step.to_string(), h);
        }
        s.algorithm_mean_total_s = (!means.is_empty()).then(|| means.iter().sum());
        let (_, hwm) = memory_kib(sched.pid()).unwrap_or((0, 0));
        s.scheduler_name = sched.name.clone();
        s.e2e = hist(&Histogram::read(samples, E2E, &[]));
        s.attempts_total = promtext::sum(samples, ATTEMPTS, &[]);
        s.rss_peak_kib = hwm.max(sampler.max(i));
        s.rss_steady_kib = sampler.mean_between(i, rest_from, rest_to).unwrap_or(0);
        s.cpu_total_s = cpu_seconds(sched.pid()).unwrap_or(0.0);
    }
    // Release the held clusters so that the teardown does not leave them terminating.
    let capi = cluster_api(client);
    for &i in &deleted {
        let _ = hold(&capi, cluster_name(&wl.clusters[i]), Value::Null).await;
    }
    drop((rust, go));
    let (clusters, bindings) = (wl.clusters.clone(), wl.bindings.clone());
    plane.stop();
    log(
        t0,
        "control plane stopped; timing the Rust algorithm in-process on the same workload",
    );
    let times =
        tokio::task::spawn_blocking(move || crate::algo::time_bindings(&clusters, &bindings))
            .await??;
    let [rust, go] = side;
    Ok(Run {
        clusters: cfg.workload.clusters,
        bindings: cfg.workload.bindings,
        seed: cfg.workload.seed,
        kube_api_qps: cfg.flags.qps,
        kube_api_burst: cfg.flags.burst,
        estimator: cfg.flags.estimator,
        extra_flags: cfg.flags.extra.clone(),
        patch_ceiling_per_s: ceiling_by.values().copied().fold(0.0, f64::max),
        patch_ceiling_by_concurrency: ceiling_by,
        replay_ceiling_by_concurrency: replay_by,
        create_rate_per_s: create_rate,
        stream_rate_per_s: pace,
        rust,
        go,
        agreement_fresh: fresh,
        agreement_after_churn: after,
        apiserver_cpu_load_s: cpu[2],
        etcd_cpu_load_s: cpu[3],
        load_wall_s,
        churn: ChurnPlan {
            scaled_pairs: scale_targets.len() / 2,
            tainted_clusters: tainted.len(),
            deleted_clusters: deleted.len(),
        },
        profile_rust,
        profile_apiserver,
        rust_algorithm_in_process: Hist {
            count: times.len() as f64,
            mean_s: (!times.is_empty()).then(|| times.iter().sum::<f64>() / times.len() as f64),
            p50_s: stats::percentile(&times, 0.5),
            p99_s: stats::percentile(&times, 0.99),
        },
        ..Default::default()
    })
}

fn hist(h: &Histogram) -> Hist {
    Hist {
        count: h.count,
        mean_s: h.mean(),
        p50_s: h.quantile(0.5),
        p99_s: h.quantile(0.99),
    }
}

/// The rate (bindings/s, per number of requests in flight) at which a bare client writes what
/// a scheduler wrote for `bindings` (named `name + suffix`): their PATCHes and Events, in
/// order per binding, with no decision to make. With `calls`, each binding first makes its
/// share of the estimator calls the scheduler made (the fair ceiling of the estimator bench).
pub async fn replay_ceiling(
    client: &Client,
    bindings: &[BindingTemplate],
    suffix: &str,
    concurrency: &[usize],
    calls: Option<&crate::ceiling::EstimatorCalls>,
    busy: &[(&str, u32)],
    t0: Instant,
) -> anyhow::Result<BTreeMap<String, f64>> {
    let what = if calls.is_some() {
        "fair ceiling (estimator calls and writes"
    } else {
        "replay ceiling (writes"
    };
    let mut writes = Vec::new();
    for b in bindings {
        let api = binding_api(client, b.namespace.as_deref());
        let done = serde_json::to_value(api.get(&format!("{}{suffix}", b.name)).await?)?;
        writes.push(BindingWrites::from_scheduled(
            &done,
            &format!("{}{REPLAY}", b.name),
        ));
    }
    let mut by = BTreeMap::new();
    let pids: Vec<u32> = busy.iter().map(|(_, pid)| *pid).collect();
    for &c in concurrency {
        let cpu0 = cpu_snapshot(&pids);
        let started = Instant::now();
        match crate::ceiling::replay(client, &writes, calls, c).await {
            Ok(r) => {
                let used = cpu_since(&pids, &cpu0).into_iter().zip(busy);
                let used: Vec<String> = used
                    .map(|(s, (name, _))| format!("{name} {s:.1}"))
                    .collect();
                let cpu = if used.is_empty() {
                    String::new()
                } else {
                    format!("; CPU seconds: {}", used.join(", "))
                };
                log(
                    t0,
                    format!(
                        "{what} of the {suffix} batch, {c} in flight): {r:.1} bindings/s \
                         ({:.1} s{cpu})",
                        started.elapsed().as_secs_f64()
                    ),
                );
                by.insert(c.to_string(), r);
            }
            Err(e) => log(t0, format!("{what}) with {c} in flight failed: {e:#}")),
        }
    }
    Ok(by)
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

/// A binding to scale: key, name, namespace and its new `spec.replicas`.
type ScaleTarget = (String, String, Option<String>, i64);

/// Patches `spec.replicas`; returns key -> (new generation, patch instant).
async fn patch_replicas(
    client: &Client,
    observer: &Observer,
    targets: &[ScaleTarget],
    concurrency: usize,
) -> anyhow::Result<HashMap<String, (i64, Instant)>> {
    let results: Vec<anyhow::Result<(String, (i64, Instant))>> =
        futures::stream::iter(targets.iter())
            .map(|(key, name, ns, replicas)| async move {
                let at = Instant::now();
                let generation =
                    scale_one(client, observer, key, name, ns.as_deref(), *replicas).await?;
                Ok((key.clone(), (generation, at)))
            })
            .buffer_unordered(concurrency.max(1))
            .collect()
            .await;
    results.into_iter().collect()
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
async fn settle_keys(
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
            let Ok(text) = s.scrape().await else { continue };
            let m = promtext::parse(&text);
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

fn secs(t: Instant, origin: Instant) -> f64 {
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
fn phase(
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

/// A scale phase: done when the new generation (patched at `targets[key]`) was observed.
fn scale_phase(
    observer: &Observer,
    keys: &[String],
    targets: &HashMap<String, (i64, Instant)>,
    start: Instant,
    settled: bool,
) -> Phase {
    phase(observer, keys, start, settled, "", |k, o| {
        let (g, at) = targets[k];
        let t = o.reached(g);
        (t, t.map(|t| t.saturating_duration_since(at)))
    })
}

fn quiet_phase(
    observer: &Observer,
    sched: &str,
    start: Instant,
    before: &[promtext::Sample],
    after: &[promtext::Sample],
) -> Quiet {
    let attempts = promtext::sum(after, ATTEMPTS, &[]) - promtext::sum(before, ATTEMPTS, &[]);
    let settle = observer
        .last_write(sched)
        .filter(|t| *t > start)
        .map(|t| secs(t, start));
    Quiet {
        attempts,
        settle_s: settle,
        attempts_per_s: settle.filter(|s| *s > 0.0).map(|s| attempts / s),
    }
}

async fn scrape(scheds: [&Sched; 2]) -> anyhow::Result<[Vec<promtext::Sample>; 2]> {
    let [a, b] = scheds.map(Sched::scrape);
    Ok([promtext::parse(&a.await?), promtext::parse(&b.await?)])
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

/// Event writes so far per scheduler: the sum of `count` over its Events (a create, then one
/// patch per repetition).
async fn event_writes(client: &Client, scheds: &[String]) -> anyhow::Result<Vec<f64>> {
    let api: Api<KubeEvent> = Api::all(client.clone());
    let mut out = Vec::new();
    for s in scheds {
        let mut total = 0.0;
        let mut lp = ListParams::default()
            .fields(&format!("source={s}"))
            .limit(2000);
        loop {
            let page = api.list(&lp).await?;
            total += page
                .items
                .iter()
                .map(|e| f64::from(e.count.unwrap_or(1)))
                .sum::<f64>();
            match page.metadata.continue_ {
                Some(c) if !c.is_empty() => lp = lp.continue_token(&c),
                _ => break,
            }
        }
        out.push(total);
    }
    Ok(out)
}

/// Compares every original with its mirror (same spec, the other scheduler).
fn agreement(observer: &Observer, wl: &Workload, rust_name: &str) -> Agreement {
    let mut a = Agreement::default();
    for b in &wl.bindings {
        let (Some(x), Some(y)) = (observer.get(&b.key("")), observer.get(&b.key(MIRROR))) else {
            continue;
        };
        let (r, g) = if x.scheduler == rust_name {
            (x, y)
        } else {
            (y, x)
        };
        a.pairs += 1;
        let (mut rs, mut gs) = (r.clusters.clone(), g.clusters.clone());
        let same_order = rs == gs;
        rs.sort();
        gs.sort();
        let cond = |o: &Obs| match &o.condition {
            Some((s, reason)) => format!("{s}/{reason}: {}", o.message),
            None => "(no Scheduled condition)".into(),
        };
        // An order-only pair is listed with both placements in full, a disagreement with
        // both cut and the entries only one side has.
        let listed = |order_only: bool| {
            let only = |x: &Placement, y: &Placement| {
                if order_only {
                    return String::new();
                }
                let v: Placement = x.iter().filter(|e| !y.contains(e)).cloned().collect();
                fmt_placement(&v, 12)
            };
            let max = if order_only { usize::MAX } else { 12 };
            Disagreement {
                binding: b.key(""),
                strategy: b.strategy.to_string(),
                rust: fmt_placement(&r.clusters, max),
                go: fmt_placement(&g.clusters, max),
                only_rust: only(&rs, &gs),
                only_go: only(&gs, &rs),
                rust_condition: cond(&r),
                go_condition: cond(&g),
            }
        };
        if rs == gs {
            a.agree += 1;
            if !same_order {
                a.order_only += 1;
                if a.order_differences.len() < MAX_LISTED {
                    a.order_differences.push(listed(true));
                }
            }
            if r.condition.as_ref().map(|c| &c.1) != g.condition.as_ref().map(|c| &c.1) {
                a.condition_differs += 1;
            }
        } else {
            a.disagree += 1;
            if a.disagreements.len() < MAX_LISTED {
                a.disagreements.push(listed(false));
            }
        }
    }
    a
}

/// Replays the placement histories of the listed disagreeing pairs (see `replay.rs`).
async fn replay_disagreements(
    cfg: &Config,
    plane: &Plane,
    after: &Agreement,
    ops: Vec<ChurnOp>,
    origin: Instant,
    rust_name: &str,
) -> anyhow::Result<Vec<PairReplay>> {
    let (client, observer, wl) = (&plane.client, &plane.observer, &plane.wl);
    anyhow::ensure!(
        cfg.bins.oracle.exists(),
        "the oracle {} is missing (hack/build-oracle.sh builds it)",
        cfg.bins.oracle.display()
    );
    let clusters: Vec<Value> = cluster_api(client)
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()?;
    let mut pairs = Vec::new();
    for d in &after.disagreements {
        let Some(b) = wl.bindings.iter().find(|b| b.key("") == d.binding) else {
            continue;
        };
        let api = binding_api(client, b.namespace.as_deref());
        let member = async |suffix: &str| -> anyhow::Result<Member> {
            let object = serde_json::to_value(api.get(&format!("{}{suffix}", b.name)).await?)?;
            let o = observer.get(&b.key(suffix)).unwrap_or_default();
            Ok(Member {
                scheduler: o.scheduler,
                object,
                history: o.history,
            })
        };
        let (x, y) = (member("").await?, member(MIRROR).await?);
        let rust_first = if x.scheduler == rust_name {
            [x, y]
        } else {
            [y, x]
        };
        pairs.push((d.binding.clone(), rust_first));
    }
    let tools = Tools {
        simulate: cfg.bins.scheduler.clone(),
        oracle: cfg.bins.oracle.clone(),
        dir: cfg.bins.scratch_dir.join("replay"),
    };
    Ok(tokio::task::spawn_blocking(move || {
        crate::replay::replay(&tools, &clusters, &ops, origin, pairs)
    })
    .await?)
}

/// `[cluster:replicas, …]`, cut after `max` entries.
fn fmt_placement(p: &[(String, i64)], max: usize) -> String {
    let v: Vec<String> = p
        .iter()
        .take(max)
        .map(|(n, r)| format!("{n}:{r}"))
        .collect();
    let more = if p.len() > max {
        format!(", … {} more", p.len() - max)
    } else {
        String::new()
    };
    format!("[{}{more}]", v.join(", "))
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
