//! The side-by-side run: PATCH ceiling, both schedulers, load, mirrors and agreement, solo
//! batches with the replay ceiling, a paced stream, churn, agreement again with the history
//! replay of pairs that disagree, memory.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use anyhow::Context as _;
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Event as KubeEvent;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::ceiling::replay_ceiling;
use crate::observe::{Obs, Observer, Placement, binding_api};
use crate::plane::{
    Plane, QUIET, cluster_api, cluster_name, cpu_since, cpu_snapshot, create_and_settle,
    create_one, delete_bindings, items, log, originals, phase, rate_after, scale_one, secs,
    settle_keys, settle_sides, start_perf, start_plane, start_schedulers, stop_perf, two,
    wait_queues_idle,
};
use crate::procs::{RssSampler, Sched, cpu_seconds, memory_kib};
use crate::promtext::{self, ALGO, ATTEMPTS, E2E, Histogram};
use crate::replay::{CHURN_TAINT_KEY, ChurnOp, Member, OpKind, PairReplay, Tools};
use crate::results::{
    Agreement, ChurnPlan, Disagreement, Hist, MAX_LISTED, Phase, Quiet, Run, Side,
};
use crate::scenario::Scenario;
use crate::stats;
use crate::workload::{NAMESPACES, Workload};
use testenv::rng::Rng;

pub mod report;

const STEPS: &[&str] = &["Filter", "Score", "Select", "AssignReplicas"];
const MIRROR: &str = "-m";
const STREAM: &str = "-s";
const SOLO: [&str; 2] = ["-rs", "-gs"];
const HOLD: &str = "bench.karmada.io/hold";

/// Bindings each scheduler schedules alone in the solo phase (capped at the workload's).
const SOLO_COUNT: usize = 1000;
/// Fractions of workload pairs scaled, and of clusters tainted and deleted, in the churn phase.
const SCALE_FRACTION: f64 = 0.2;
const TAINT_FRACTION: f64 = 0.1;
const DELETE_FRACTION: f64 = 0.05;

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
    cfg: &Scenario,
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

/// `rust <a>, go <b>` for the console.
fn per_side(side: &[Side; 2], f: impl Fn(&Side) -> String) -> String {
    format!("rust {}, go {}", f(&side[0]), f(&side[1]))
}

/// What the phases share, and each side's figures as the phases fill them in.
struct Bench<'a> {
    cfg: &'a Scenario,
    plane: &'a Plane,
    rust: Sched,
    go: Sched,
    /// The schedulers' names.
    sides: [String; 2],
    /// The schedulers, kube-apiserver, etcd and (for the solo phases) the bench itself, whose
    /// watch decodes every write on the same cores.
    pids: [u32; 5],
    t0: Instant,
    side: [Side; 2],
}

/// What the load phase measured besides each side's figures.
struct Load {
    create_rate: f64,
    wall_s: f64,
    /// CPU seconds of the schedulers, kube-apiserver and etcd.
    cpu: Vec<f64>,
    profiles: (Option<String>, Option<String>),
}

impl Bench<'_> {
    fn scheds(&self) -> [&Sched; 2] {
        [&self.rust, &self.go]
    }

    fn both(&self) -> [&str; 2] {
        [self.sides[0].as_str(), self.sides[1].as_str()]
    }

    /// Writes to a side's bindings (but the bench's own) and its Event writes, per binding.
    fn writes(&self, i: usize, keys: &[String], ev0: &[f64], ev1: &[f64]) -> (f64, f64) {
        let n = keys.len().max(1) as f64;
        let own = self.plane.observer.snapshot(keys).into_iter();
        let binding = own
            .map(|o| (o.modifications - o.own_writes) as f64)
            .sum::<f64>();
        (binding / n, (ev1[i] - ev0[i]) / n)
    }

    /// All originals, as fast as the creator goes.
    async fn load(&mut self) -> anyhow::Result<Load> {
        let (cfg, client, observer) = (self.cfg, &self.plane.client, &self.plane.observer);
        let ev0 = event_writes(client, &self.sides).await?;
        let cpu0 = cpu_snapshot(&self.pids[..4]);
        let perf = match cfg.samples.perf {
            true => start_perf(&self.plane.env, &[("rust", self.rust.pid())]),
            false => vec![],
        };
        let originals = originals(&self.plane.wl, &self.sides);
        let load = create_and_settle(cfg, client, observer, &originals, &self.both()).await?;
        let create_rate = originals.len() as f64 / (load.created - load.start).as_secs_f64();
        let profiles = stop_perf(perf).await;
        let wall_s = load.start.elapsed().as_secs_f64();
        let cpu = cpu_since(&self.pids[..4], &cpu0);
        let ev1 = event_writes(client, &self.sides).await?;
        self.rust.check_alive()?;
        self.go.check_alive()?;
        for (i, (keys, phase)) in load.sides.into_iter().enumerate() {
            let writes = self.writes(i, &keys, &ev0, &ev1);
            let s = &mut self.side[i];
            (s.binding_writes_per_binding, s.event_writes_per_binding) = writes;
            (s.cpu_load_s, s.load) = (cpu[i], phase);
        }
        let rate_p99 = |p: &Phase| {
            let (r, p99) = (p.steady_rate_per_s, p.latency_p99_ms);
            format!("{:.0}/s p99 {:.0} ms", r.unwrap_or(0.0), p99.unwrap_or(0.0))
        };
        let (n, load_log) = (originals.len(), per_side(&self.side, |s| rate_p99(&s.load)));
        log!(
            self.t0,
            "{n} bindings created ({create_rate:.0}/s); load: {load_log}"
        );
        Ok(Load {
            create_rate,
            wall_s,
            cpu,
            profiles,
        })
    }

    /// Every binding again, for the other scheduler, same spec; the agreement of the pairs.
    async fn mirrors(&mut self) -> anyhow::Result<Agreement> {
        let (wl, observer) = (&self.plane.wl, &self.plane.observer);
        let mirrors = items(&wl.bindings, MIRROR, |j| &self.sides[(j + 1) % 2]);
        let client = &self.plane.client;
        let mirror = create_and_settle(self.cfg, client, observer, &mirrors, &self.both()).await?;
        for (s, (_, phase)) in self.side.iter_mut().zip(mirror.sides) {
            s.mirror = phase;
        }
        let fresh = agreement(observer, wl, &self.sides[0]);
        log!(
            self.t0,
            "agreement on fresh placements: {}",
            fresh.summary()
        );
        Ok(fresh)
    }

    /// Each scheduler alone with a batch of its own while the other is idle, so that neither
    /// shares the apiserver (the figure the PATCH ceiling is compared with); the replay
    /// ceiling of our batch's writes.
    async fn solo(&mut self) -> anyhow::Result<BTreeMap<String, f64>> {
        let (cfg, client, observer) = (self.cfg, &self.plane.client, &self.plane.observer);
        let wl = &self.plane.wl;
        let solo = &wl.bindings[..SOLO_COUNT.min(wl.bindings.len())];
        let mut replay_by = BTreeMap::new();
        for (i, sched) in self.sides.iter().enumerate() {
            // Both queues idle first: the Go scheduler re-runs a Duplicated binding on the
            // echo of its own write (about half a second of CPU each at 1,000 clusters), work
            // that outlasts the quiet spell which ends a phase and would otherwise take the
            // cores from the apiserver while the other scheduler is measured alone.
            wait_queues_idle(&self.scheds(), QUIET, cfg.settle_timeout).await;
            let items = items(solo, SOLO[i], |_| sched);
            let ev0 = event_writes(client, &self.sides).await?;
            let cpu0 = cpu_snapshot(&self.pids);
            let batch = create_and_settle(cfg, client, observer, &items, &[sched]).await?;
            let wall = batch.start.elapsed().as_secs_f64();
            let cpu = cpu_since(&self.pids, &cpu0);
            let ev1 = event_writes(client, &self.sides).await?;
            let [(keys, mut phase)] = batch.sides.try_into().expect("one side");
            phase.rate_after_creation_per_s = rate_after(observer, &keys, batch.created);
            let (steady, after) = (phase.steady_rate_per_s, phase.rate_after_creation_per_s);
            let (steady, after) = (steady.unwrap_or(0.0), after.unwrap_or(0.0));
            log!(
                self.t0,
                "solo {sched}: {steady:.0}/s steady, {after:.0}/s after creation"
            );
            let writes = self.writes(i, &keys, &ev0, &ev1);
            let s = &mut self.side[i];
            (
                s.solo_binding_writes_per_binding,
                s.solo_event_writes_per_binding,
            ) = writes;
            (s.solo, s.solo_wall_s, s.solo_cpu_s) = (phase, wall, cpu);
            if i == 0 {
                // The ceiling for these very writes: a client that only writes what the Rust
                // scheduler wrote, with no decision to make.
                let concurrency = &cfg.ceiling.concurrency;
                replay_by =
                    replay_ceiling(client, solo, SOLO[0], concurrency, None, &[], self.t0).await?;
            }
            // Gone again, so that the churn phases meet the same bindings as without this
            // phase.
            delete_bindings(client, &items, cfg.create_concurrency).await?;
        }
        Ok(replay_by)
    }

    /// Copies of the first bindings created at a pace both schedulers can follow, so that
    /// latency measures reaction time rather than the backlog of a burst; returns the pace.
    async fn stream(&mut self) -> f64 {
        let (client, observer, wl) = (&self.plane.client, &self.plane.observer, &self.plane.wl);
        let slowest = self.side.iter().filter_map(|s| s.load.steady_rate_per_s);
        let slowest = slowest.fold(f64::INFINITY, f64::min);
        // A quarter of the slower scheduler's sustained rate for each of them.
        let pace = if slowest.is_finite() {
            (slowest / 2.0).max(1.0)
        } else {
            10.0
        };
        let stream_n = self.cfg.workload.stream.min(wl.bindings.len());
        let stream_items = items(&wl.bindings[..stream_n], STREAM, |j| &self.sides[j % 2]);
        // Start from idle queues (retries of unschedulable bindings back off exponentially).
        wait_queues_idle(&self.scheds(), QUIET, Duration::from_secs(120)).await;
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
        let timeout = self.cfg.settle_timeout;
        let both = self.both();
        let stream = settle_sides(observer, &stream_items, &both, stream_start, timeout).await;
        for (s, (_, phase)) in self.side.iter_mut().zip(stream) {
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
        log!(
            self.t0,
            "stream at {pace:.1}/s: {}",
            per_side(&self.side, latency)
        );
        pace
    }

    /// Churn (a): scale changes on pairs of workloads; returns the pairs' targets and when the
    /// first patch went out (where the replay of the churn's history starts).
    async fn scale_churn(&mut self, crng: &mut Rng) -> anyhow::Result<(Vec<ScaleTarget>, Instant)> {
        let (cfg, client, observer, wl) = (
            self.cfg,
            &self.plane.client,
            &self.plane.observer,
            &self.plane.wl,
        );
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
        let start = Instant::now();
        let targets =
            patch_replicas(client, observer, &scale_targets, cfg.create_concurrency).await?;
        let scale_keys = self.sides.clone().map(|sched| {
            let owned = |k: &&String| observer.get(k).is_some_and(|o| o.scheduler == sched);
            (
                targets.keys().filter(owned).cloned().collect::<Vec<_>>(),
                sched,
            )
        });
        let timeout = cfg.settle_timeout;
        let oks = futures::future::join_all(scale_keys.iter().map(|(keys, sched)| {
            let reached =
                |k: &str, o: &Obs| targets.get(k).is_some_and(|(g, _)| o.reached(*g).is_some());
            let own = std::slice::from_ref(sched);
            settle_keys(observer, keys, own, Instant::now(), reached, timeout)
        }))
        .await;
        wait_queues_idle(&self.scheds(), QUIET, timeout).await;
        for (s, ((keys, _), ok)) in self.side.iter_mut().zip(scale_keys.iter().zip(oks)) {
            s.scale = scale_phase(observer, keys, &targets, start, ok);
        }
        let done = per_side(&self.side, |s| {
            format!("{}/{} done", s.scale.done, s.scale.bindings)
        });
        log!(self.t0, "scale churn ({} bindings): {done}", targets.len());
        Ok((scale_targets, start))
    }

    /// Churn (b) and (c): taints on some clusters, then cluster deletions; returns the
    /// clusters tainted and deleted.
    async fn cluster_churn(
        &mut self,
        crng: &mut Rng,
        ops: &mut Vec<ChurnOp>,
    ) -> anyhow::Result<[Vec<usize>; 2]> {
        let mut churned = Vec::new();
        for (kind, fraction) in [
            (OpKind::Taint, TAINT_FRACTION),
            (OpKind::Delete, DELETE_FRACTION),
        ] {
            let n = self.plane.wl.clusters.len();
            let idx = crng.sample(n, ((n as f64 * fraction).round() as usize).max(1));
            let scheds = self.scheds();
            let quiet = churn_clusters(self.cfg, self.plane, scheds, kind, &idx, ops).await?;
            let (what, step): (_, fn(&mut Side) -> &mut Quiet) = match kind {
                OpKind::Taint => ("taint", |s| &mut s.taint),
                OpKind::Delete => ("deletion", |s| &mut s.delete),
            };
            for (s, q) in self.side.iter_mut().zip(quiet) {
                *step(s) = q;
            }
            log!(self.t0, "{what} churn on {} clusters settled", idx.len());
            churned.push(idx);
        }
        Ok(two(churned))
    }

    /// The agreement after churn, with the history of each disagreeing pair replayed.
    async fn after_churn(&self, ops: Vec<ChurnOp>, churn_start: Instant) -> Agreement {
        let (plane, t0) = (self.plane, self.t0);
        let mut after = agreement(&plane.observer, &plane.wl, &self.sides[0]);
        log!(t0, "agreement after churn: {}", after.summary());
        if after.disagreements.is_empty() {
            return after;
        }
        let n = after.disagreements.len();
        log!(
            t0,
            "replaying the history of {n} disagreeing pair(s) through the oracle"
        );
        let replays =
            replay_disagreements(self.cfg, plane, &after, ops, churn_start, &self.sides[0]);
        after.replays = replays.await.unwrap_or_else(|e| {
            vec![PairReplay {
                error: Some(format!("{e:#}")),
                ..Default::default()
            }]
        });
        let explained = after.replays.iter().filter(|r| r.explained).count();
        let n = after.replays.len();
        log!(
            t0,
            "replay: {explained}/{n} pair(s) explained by their histories"
        );
        after
    }

    /// Memory at rest and the whole run's totals, from each scheduler's `/metrics`.
    async fn at_rest(&mut self, sampler: &RssSampler) -> anyhow::Result<()> {
        let rest_from = Instant::now();
        tokio::time::sleep(Duration::from_secs(3)).await;
        let rest_to = Instant::now();
        let m_end = scrape(self.scheds()).await?;
        self.rust.check_alive()?;
        self.go.check_alive()?;
        for (i, (s, sched)) in self.side.iter_mut().zip([&self.rust, &self.go]).enumerate() {
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
        Ok(())
    }
}

/// The apiserver's PATCH ceiling at each concurrency, before any scheduler runs.
async fn patch_ceilings(
    cfg: &Scenario,
    plane: &Plane,
    t0: Instant,
) -> anyhow::Result<BTreeMap<String, f64>> {
    let mut ceiling_by = BTreeMap::new();
    for c in cfg.ceiling.concurrency {
        let secs = Duration::from_secs(cfg.ceiling.seconds);
        let r = crate::ceiling::measure(&plane.client, NAMESPACES[0], c, secs).await?;
        log!(t0, "PATCH ceiling with {c} in flight: {r:.0}/s");
        ceiling_by.insert(c.to_string(), r);
    }
    Ok(ceiling_by)
}

/// Runs every phase and returns the figures.
pub async fn run(cfg: &Scenario) -> anyhow::Result<Run> {
    let t0 = Instant::now();
    let plane = start_plane(cfg, t0).await?;
    let ceiling_by = patch_ceilings(cfg, &plane, t0).await?;
    let (rust, go) = start_schedulers(cfg, &plane, t0).await?;
    let pids = [
        rust.pid(),
        go.pid(),
        plane.apiserver_pid,
        plane.etcd_pid,
        std::process::id(),
    ];
    let (sampler, sampler_task) = RssSampler::start(pids[..4].to_vec(), Duration::from_millis(250));
    let sides = [rust.name.clone(), go.name.clone()];
    let side = Default::default();
    let mut b = Bench {
        cfg,
        plane: &plane,
        rust,
        go,
        sides,
        pids,
        t0,
        side,
    };
    let load = b.load().await?;
    let fresh = b.mirrors().await?;
    let replay_by = b.solo().await?;
    let pace = b.stream().await;
    let mut crng = Rng::new(cfg.workload.seed).fork("churn");
    // From here on the bench keeps every binding's placement history, and the churn
    // operations, for the replay of pairs that end up disagreeing.
    plane.observer.start_history();
    let (scale_targets, churn_start) = b.scale_churn(&mut crng).await?;
    let mut ops: Vec<ChurnOp> = Vec::new();
    let [tainted, deleted] = b.cluster_churn(&mut crng, &mut ops).await?;
    let after = b.after_churn(ops, churn_start).await;
    b.at_rest(&sampler).await?;
    sampler_task.abort();
    let Bench { rust, go, side, .. } = b;
    // Release the held clusters so that the teardown does not leave them terminating.
    let capi = cluster_api(&plane.client);
    for &i in &deleted {
        let _ = hold(&capi, cluster_name(&plane.wl.clusters[i]), Value::Null).await;
    }
    drop((rust, go));
    let (clusters, bindings) = (plane.wl.clusters.clone(), plane.wl.bindings.clone());
    plane.stop();
    log!(
        t0,
        "control plane stopped; timing the Rust algorithm in-process on the same workload"
    );
    let times =
        tokio::task::spawn_blocking(move || crate::algo::time_bindings(&clusters, &bindings))
            .await??;
    let [rust, go] = side;
    let (profile_rust, profile_apiserver) = load.profiles;
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
        create_rate_per_s: load.create_rate,
        stream_rate_per_s: pace,
        rust,
        go,
        agreement_fresh: fresh,
        agreement_after_churn: after,
        apiserver_cpu_load_s: load.cpu[2],
        etcd_cpu_load_s: load.cpu[3],
        load_wall_s: load.wall_s,
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
    Ok([a.await?, b.await?])
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
    cfg: &Scenario,
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
