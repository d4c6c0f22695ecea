//! `estimators`: both schedulers with the accurate estimators on, at several scales, each
//! cluster's estimator behind an `ExternalName` Service (the real Go ones of the members at
//! small scale, one [`PerCluster`] stub of the bench above); what is measured is told in
//! `templates/estimators.md`.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use anyhow::Context as _;
// The estimator Services' name, namespace and port (the schedulers' defaults).
use estimator_client::options::{
    DEFAULT_PORT as SERVICE_PORT, DEFAULT_SERVICE_NAMESPACE as SERVICE_NAMESPACE,
    DEFAULT_SERVICE_PREFIX as SERVICE_PREFIX,
};
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use testenv::estimator::{Behaviour, FakeEstimator, PerCluster, external_name_service};
use tokio::time::Instant;

use crate::jobs::apply_all;
use crate::observe::Placement;
use crate::plane::{self, Plane, create_bindings, keys_of, log, rate_after, wait_queues_idle};
use crate::procs::{RssSampler, Sched, connections_to};
use crate::promtext::{self, ALGO, ATTEMPTS, E2E, ESTIMATOR_CALL, Histogram};
use crate::results::Phase;
use crate::scenario::Scenario;
use crate::workload::BindingTemplate;

mod report;
pub use report::{chart_point, markdown};

/// Batch suffixes of the alone phase, ours then Go's.
const ALONE: [&str; 2] = ["-ar", "-ag"];
/// The schedulers' default `--scheduler-estimator-timeout`.
const ESTIMATOR_TIMEOUT_S: f64 = estimator_client::options::DEFAULT_TIMEOUT.as_secs_f64();
const ESTIMATOR_REQUESTS: &str = "karmada_scheduler_estimator_estimating_request_total";

/// One scheduler in one phase.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SideFigures {
    pub phase: Phase,
    /// Estimator calls answered during the phase, per binding of the phase (alone phases and
    /// fault rows only: the together phase shares the estimators).
    pub rpcs_per_binding: Option<f64>,
    /// Most established estimator connections seen during the phase.
    pub connections: usize,
    pub cpu_s: f64,
    /// Alone phases: wall seconds of the phase and CPU seconds of every process on the cores
    /// meanwhile (the scheduler, the apiserver, etcd, the bench with its stub estimators):
    /// where the time goes.
    #[serde(default)]
    pub wall_s: f64,
    #[serde(default)]
    pub cpu_by_process: BTreeMap<String, f64>,
    /// Alone phases: mean milliseconds per attempt from the scheduler's own histograms over
    /// the batch: `e2e`, each algorithm step, and (ours) one estimator call (`estimator call`,
    /// `estimator call p99`).
    #[serde(default)]
    pub attempt_ms: BTreeMap<String, f64>,
    /// Alone phases: the scheduler's attempts over the batch by `result/schedule_type`
    /// (`karmada_scheduler_schedule_attempts_total`) and the bindings queued by event
    /// (`queue/<event>`, `karmada_scheduler_queue_incoming_bindings_total`): why a binding
    /// cost more than one attempt.
    #[serde(default)]
    pub attempts: BTreeMap<String, f64>,
    /// `perf report` of our scheduler during its alone batch (`--perf`).
    #[serde(default)]
    pub profile: Option<String>,
}

/// The key of [`SideFigures::attempts`] that counts algorithm passes.
const PASSES: &str = "algorithm passes";

impl SideFigures {
    /// Attempts over the batch, whatever their result and type (the `result/type` keys of
    /// [`SideFigures::attempts`]).
    fn attempts_made(&self) -> f64 {
        self.attempts
            .iter()
            .filter(|(k, _)| !k.starts_with("queue/") && k.as_str() != PASSES)
            .map(|(_, v)| v)
            .sum()
    }
}

/// One scale.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Scale {
    pub clusters: usize,
    /// `real Go estimators` or `stub, N ms`.
    pub estimators: String,
    pub bindings: usize,
    pub alone_bindings: usize,
    /// `[ours, Go]`.
    pub together: [SideFigures; 2],
    pub alone: [SideFigures; 2],
    /// Bindings/s of a bare client writing what ours wrote in its alone batch, per requests in
    /// flight.
    pub replay_ceiling: BTreeMap<String, f64>,
    /// Bindings/s of a bare client doing the whole work of ours's alone batch: the same
    /// estimator calls (recorded by the stub, replayed to it) and the same writes, with no
    /// scheduling logic; per requests in flight. Stub scales only.
    #[serde(default)]
    pub fair_ceiling: BTreeMap<String, f64>,
    /// Estimator calls the fair ceiling made (those of ours's alone batch).
    #[serde(default)]
    pub fair_ceiling_calls: usize,
    /// The machine's 1-minute load average just before ours's alone batch and at the end of
    /// the scale (other work on the shared machine makes figures noisy).
    #[serde(default)]
    pub load_1m: [f64; 2],
    pub peak_rss_kib: [u64; 2],
    /// RSS once started and connected to every estimator, before any binding.
    #[serde(default)]
    pub idle_rss_kib: [u64; 2],
    /// Alone batches: templates both placed the same way, of all.
    pub agree: usize,
    pub pairs: usize,
    pub disagreements: Vec<String>,
    pub faults: Vec<FaultRow>,
}

/// One fault, one scheduler.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FaultRow {
    pub fault: String,
    /// `ours` or `Go`.
    pub scheduler: String,
    pub phase: Phase,
    /// Attempt durations (the scheduler's own e2e histogram over the row): p50, p99, seconds.
    pub attempt_p50_s: Option<f64>,
    pub attempt_p99_s: Option<f64>,
    /// Creation to the first `Scheduled` condition, per binding: median and worst, seconds.
    /// With `sequential` (each binding created once the previous one was decided) this is one
    /// attempt and its writes.
    pub decide_p50_s: Option<f64>,
    pub decide_max_s: Option<f64>,
    pub sequential: bool,
    /// Answers per binding from the estimators the fault did not touch.
    pub healthy_answers_per_binding: f64,
    /// Answers per binding from the faulty estimators (a moved one answering at its new
    /// address counts here).
    pub faulty_answers_per_binding: f64,
    /// Calls per binding that reached a hung estimator.
    pub hung_calls_per_binding: f64,
    /// Placements equal to the same templates' in the fault-free alone phase, of all.
    pub same_as_fault_free: usize,
}

/// The whole run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct EstBench {
    #[serde(flatten)]
    pub stamp: crate::results::Stamp,
    pub latency_ms: f64,
    pub scales: Vec<Scale>,
}

/// Where the estimators are and how many calls they answered.
enum Estimators {
    /// The members' Go estimators: `(gRPC port, metrics address)`.
    Real(Vec<(u16, String)>),
    Stub(PerCluster),
}

impl Estimators {
    fn ports(&self) -> HashSet<u16> {
        match self {
            Estimators::Real(m) => m.iter().map(|(p, _)| *p).collect(),
            Estimators::Stub(s) => s.ports().into_iter().collect(),
        }
    }

    /// Estimating calls answered so far and calls that reached a hung estimator, per cluster
    /// (the real ones hang none).
    async fn counts(&self) -> Vec<[u64; 2]> {
        match self {
            Estimators::Stub(s) => s.counts().iter().map(|c| [c.answered(), c.hung]).collect(),
            Estimators::Real(m) => {
                let mut out = Vec::new();
                for (_, metrics) in m {
                    let samples = crate::procs::scrape(metrics).await.unwrap_or_default();
                    let n = promtext::sum(&samples, ESTIMATOR_REQUESTS, &[]);
                    out.push([n as u64, 0]);
                }
                out
            }
        }
    }
}

/// `MaxAvailableReplicas` (and component sets) answer of a stub cluster: 4 to 63, from a hash
/// of the name, the same for every workload, so that both schedulers meet the same answers
/// and must agree.
fn max_available_answer(cluster: &str) -> i32 {
    4 + (testenv::rng::fnv1a(&[cluster]) % 60) as i32
}

/// The stub: a port per cluster, answering [`max_available_answer`] after `latency`.
async fn start_stub(clusters: &[String], latency: Duration) -> anyhow::Result<PerCluster> {
    FakeEstimator::from_fn(move |call| {
        Behaviour::AnswerAfter(max_available_answer(&call.cluster), latency)
    })
    .unrecorded()
    .serve_per_cluster(clusters)
    .await
}

/// Points the Service of `cluster` at `port` (a moved VIP).
async fn retarget(client: &Client, cluster: &str, port: u16) -> anyhow::Result<()> {
    let api: Api<k8s_openapi::api::core::v1::Service> =
        Api::namespaced(client.clone(), SERVICE_NAMESPACE);
    let patch = json!({"spec": {"ports": [{"name": "grpc", "protocol": "TCP", "port": SERVICE_PORT, "targetPort": port}]}});
    api.patch(
        &format!("{SERVICE_PREFIX}-{cluster}"),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .with_context(|| format!("moving the estimator Service of {cluster}"))?;
    Ok(())
}

/// Every step of the bench (both schedulers together, one alone, a fault row), measured the
/// same way: the schedulers' CPU seconds and own metrics, and the calls the estimators
/// answered, before and after it, and the schedulers' estimator connections sampled during it.
struct Meter<'a> {
    scheds: Vec<&'a Sched>,
    /// The schedulers', then the kube-apiserver's, etcd's and the bench's.
    pids: Vec<u32>,
    cpu: Vec<f64>,
    metrics: Vec<Vec<promtext::Sample>>,
    calls: Vec<[u64; 2]>,
    conns: (RssSampler, tokio::task::JoinHandle<()>),
    start: Instant,
}

/// What a step did: its wall seconds, CPU seconds by [`Meter::pids`], each scheduler's
/// metrics before and after, the calls answered and hung per cluster, and each scheduler's
/// most estimator connections.
struct Measured {
    wall_s: f64,
    cpu: Vec<f64>,
    metrics: Vec<[Vec<promtext::Sample>; 2]>,
    calls: Vec<[u64; 2]>,
    connections: Vec<usize>,
}

impl<'a> Meter<'a> {
    async fn start(plane: &Plane, est: &Estimators, scheds: &[&'a Sched]) -> Meter<'a> {
        let mut pids: Vec<u32> = scheds.iter().map(|s| s.pid()).collect();
        let ports = est.ports();
        let conns = RssSampler::start_with(pids.clone(), Duration::from_millis(500), move |p| {
            connections_to(p, &ports) as u64
        });
        pids.extend([plane.apiserver_pid, plane.etcd_pid, std::process::id()]);
        let mut metrics = Vec::new();
        for s in scheds {
            metrics.push(s.scrape().await.unwrap_or_default());
        }
        Meter {
            scheds: scheds.to_vec(),
            cpu: plane::cpu_snapshot(&pids),
            pids,
            metrics,
            calls: est.counts().await,
            conns,
            start: Instant::now(),
        }
    }

    async fn stop(self, est: &Estimators) -> Measured {
        self.conns.1.abort();
        let wall_s = self.start.elapsed().as_secs_f64();
        let cpu = plane::cpu_since(&self.pids, &self.cpu);
        let mut metrics = Vec::new();
        for (s, before) in self.scheds.iter().zip(self.metrics) {
            metrics.push([before, s.scrape().await.unwrap_or_default()]);
        }
        let calls = (est.counts().await.iter().zip(&self.calls))
            .map(|(a, b)| [a[0] - b[0], a[1] - b[1]])
            .collect();
        let connections = (0..self.scheds.len())
            .map(|i| self.conns.0.max(i) as usize)
            .collect();
        Measured {
            wall_s,
            cpu,
            metrics,
            calls,
            connections,
        }
    }
}

impl Measured {
    /// Scheduler `i`'s histogram `name` (series matching `filter`) over the step.
    fn histogram(&self, i: usize, name: &str, filter: &[(&str, &str)]) -> Histogram {
        let [before, after] = &self.metrics[i];
        Histogram::read(after, name, filter).since(&Histogram::read(before, name, filter))
    }

    /// Estimator calls answered over the step, by every cluster.
    fn answered(&self) -> u64 {
        self.calls.iter().map(|c| c[0]).sum()
    }
}

/// Scheduler `i`'s attempt and queue counters over the step, keyed `result/schedule_type`
/// and `queue/<event>`, and its algorithm passes.
fn attempts(m: &Measured, i: usize) -> BTreeMap<String, f64> {
    let counters = |s: &[promtext::Sample]| {
        let mut c = promtext::sums_by(s, ATTEMPTS, |s| {
            Some(format!(
                "{}/{}",
                s.label("result"),
                s.label("schedule_type")
            ))
        });
        let queued = "karmada_scheduler_queue_incoming_bindings_total";
        c.extend(promtext::sums_by(s, queued, |s| {
            Some(format!("queue/{}", s.label("event")))
        }));
        c
    };
    let [before, after] = &m.metrics[i];
    let mut attempts = promtext::growth(&counters(before), &counters(after));
    let passes = m.histogram(i, ALGO, &[("schedule_step", "Filter")]).count;
    if passes > 0.0 {
        attempts.insert(PASSES.into(), passes);
    }
    attempts
}

/// One scheduler alone on `items`: its figures, and the calls each cluster answered.
async fn alone(
    plane: &Plane,
    cfg: &Scenario,
    est: &Estimators,
    sched: &Sched,
    items: &[(String, String, Value)],
) -> anyhow::Result<(SideFigures, Vec<[u64; 2]>)> {
    let perf = if cfg.samples.perf && sched.label == "rust" {
        plane::start_perf(&plane.env, &[("rust", sched.pid())])
    } else {
        Vec::new()
    };
    let meter = Meter::start(plane, est, &[sched]).await;
    let (client, observer) = (&plane.client, &plane.observer);
    let batch =
        plane::create_and_settle(cfg, client, observer, items, &[sched.name.as_str()]).await?;
    let m = meter.stop(est).await;
    let (profile, _) = plane::stop_perf(perf).await;
    let mut attempt_ms = BTreeMap::new();
    let mut put = |label: &str, name: &str, filter: &[(&str, &str)]| {
        let h = m.histogram(0, name, filter);
        if let Some(mean) = h.mean() {
            attempt_ms.insert(label.to_string(), mean * 1000.0);
        }
        h
    };
    put("e2e", E2E, &[]);
    for step in ["Filter", "Score", "Select", "AssignReplicas"] {
        put(step, ALGO, &[("schedule_step", step)]);
    }
    if let Some(q) = put("estimator call", ESTIMATOR_CALL, &[]).quantile(0.99) {
        attempt_ms.insert("estimator call p99".into(), q * 1000.0);
    }
    let [(keys, mut phase)] = batch.sides.try_into().expect("one side");
    phase.rate_after_creation_per_s = rate_after(observer, &keys, batch.created);
    let processes = [
        "scheduler",
        "kube-apiserver",
        "etcd",
        "bench (stub estimators, watches)",
    ];
    let figures = SideFigures {
        phase,
        rpcs_per_binding: Some(m.answered() as f64 / keys.len().max(1) as f64),
        connections: m.connections[0],
        cpu_s: m.cpu[0],
        wall_s: m.wall_s,
        attempts: attempts(&m, 0),
        attempt_ms,
        cpu_by_process: (processes.iter().zip(&m.cpu))
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
        profile,
    };
    Ok((figures, m.calls))
}

/// A row of the fault table: what is done to the stub ([`PerCluster`]) around one scheduler's batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// Nothing: the reference row (its "faulty" clusters are the hung row's).
    None,
    /// One estimator accepts calls and never answers.
    Hung,
    /// A tenth of the estimators refuse connections.
    Refusing,
    /// A tenth of the estimators move to new ports halfway through the batch; their Services
    /// follow, the old ports then refuse.
    Moved,
    /// The batch after [`Fault::Moved`], for the other scheduler: the estimators already at
    /// their new addresses, the old ones refusing.
    AfterMove,
}

impl Fault {
    fn label(self) -> &'static str {
        match self {
            Fault::None => "none (reference)",
            Fault::Hung => "1 estimator hung",
            Fault::Refusing => "10 % refusing connections",
            Fault::Moved | Fault::AfterMove => "10 % of the VIPs moved mid-run",
        }
    }

    /// Applies the fault to the `faulty` clusters of `stub` (`on`) or undoes it (moved
    /// estimators stay moved: the move is made during the batch).
    async fn set(self, stub: &PerCluster, faulty: &HashSet<usize>, on: bool) -> anyhow::Result<()> {
        for &i in faulty {
            match self {
                Fault::Hung => stub.set_hang(i, on),
                Fault::Refusing if on => stub.refuse(i).await,
                Fault::Refusing => stub.restore(i).await?,
                Fault::None | Fault::Moved | Fault::AfterMove => {}
            }
        }
        Ok(())
    }
}

/// What every fault row shares: the control plane, the scenario, the estimators (the stub),
/// the fault-free placements of our alone batch by template, the Divided templates the rows
/// create, and the run's start.
struct Rows<'a> {
    plane: &'a Plane,
    cfg: &'a Scenario,
    est: &'a Estimators,
    stub: &'a PerCluster,
    fault_free: BTreeMap<String, Placement>,
    templates: Vec<BindingTemplate>,
    t0: Instant,
}

impl Rows<'_> {
    /// Waits until every one of `keys` is decided.
    async fn decided(&self, keys: &[String]) {
        let timeout = self.cfg.settle_timeout;
        (self.plane.observer)
            .settle(keys, &[], plane::decided, Duration::ZERO, timeout)
            .await;
    }

    /// Applies `fault` to the `faulty` clusters around one scheduler's batch (named with
    /// `suffix`) and measures the row.
    async fn row(
        &self,
        fault: Fault,
        faulty: &HashSet<usize>,
        sched: &Sched,
        label: &str,
        suffix: &str,
    ) -> anyhow::Result<FaultRow> {
        let (cfg, stub) = (self.cfg, self.stub);
        let (client, observer) = (&self.plane.client, &self.plane.observer);
        fault.set(stub, faulty, true).await?;
        let items = plane::items(&self.templates, suffix, |_| &sched.name);
        let keys = keys_of(&items, &sched.name);
        let meter = Meter::start(self.plane, self.est, &[sched]).await;
        let start = Instant::now();
        // The reference and hung rows create one at a time, so that each binding's
        // creation-to-decision time is one attempt (no queueing behind the others): what a
        // hung estimator costs a cycle. The others at once, in two halves.
        let sequential = matches!(fault, Fault::None | Fault::Hung);
        let half = if sequential {
            items.len()
        } else {
            items.len() / 2
        };
        if sequential {
            for (item, key) in items.iter().zip(&keys) {
                create_bindings(client, observer, std::slice::from_ref(item), 1).await?;
                self.decided(std::slice::from_ref(key)).await;
            }
        } else {
            create_bindings(client, observer, &items[..half], cfg.create_concurrency).await?;
        }
        if fault == Fault::Moved {
            // Let the first half be decided against the old addresses first.
            self.decided(&keys[..half]).await;
            for &i in faulty {
                let port = stub.move_port(i).await?;
                retarget(client, &stub.clusters()[i], port).await?;
            }
            // The Services are written; a moment for watchers, then the old addresses go away.
            tokio::time::sleep(Duration::from_secs(1)).await;
            for &i in faulty {
                stub.close_previous(i).await;
            }
            log!(self.t0, "{label}: {} estimators moved", faulty.len());
        }
        let second_half = Instant::now();
        create_bindings(client, observer, &items[half..], cfg.create_concurrency).await?;
        let names = [sched.name.as_str()];
        let settled = plane::settle_sides(observer, &items, &names, start, cfg.settle_timeout);
        let [(_, mut phase)] = settled.await.try_into().expect("one side");
        if fault == Fault::Moved {
            // The move itself (and its pause) is not the scheduler's time.
            phase.whole_rate_per_s = rate_after(observer, &keys[half..], second_half);
        }
        let decide: Vec<f64> = (observer.snapshot(&keys).iter())
            .filter_map(|o| Some(o.decided_at?.saturating_duration_since(o.created_at?)))
            .map(|d| d.as_secs_f64())
            .collect();
        fault.set(stub, faulty, false).await?;
        let m = meter.stop(self.est).await;
        let h = m.histogram(0, E2E, &[]);
        // Answered by the healthy and by the faulty clusters, and calls hung by the faulty.
        let (mut healthy, mut sick, mut hung) = (0, 0, 0);
        for (i, [answered, hung_calls]) in m.calls.iter().enumerate() {
            if faulty.contains(&i) {
                (sick, hung) = (sick + answered, hung + hung_calls);
            } else {
                healthy += answered;
            }
        }
        let same = (self.templates.iter())
            .filter(|t| {
                let got = observer.get(&t.key(suffix)).map(|o| o.clusters);
                got.is_some() && got.as_ref() == self.fault_free.get(&t.key(""))
            })
            .count();
        let n = keys.len().max(1) as f64;
        Ok(FaultRow {
            fault: fault.label().to_string(),
            scheduler: label.to_string(),
            phase,
            attempt_p50_s: h.quantile(0.5),
            attempt_p99_s: h.quantile(0.99),
            decide_p50_s: crate::stats::percentile(&decide, 0.5),
            decide_max_s: decide.iter().copied().reduce(f64::max),
            sequential,
            healthy_answers_per_binding: healthy as f64 / n,
            faulty_answers_per_binding: sick as f64 / n,
            hung_calls_per_binding: hung as f64 / n,
            same_as_fault_free: same,
        })
    }
}

/// The clusters' estimators: the members' real Go ones, else the bench's stub behind an
/// `ExternalName` Service per cluster; and how the report names them.
async fn estimators(
    plane: &Plane,
    cfg: &Scenario,
    real: bool,
) -> anyhow::Result<(Estimators, String)> {
    if real {
        let members = plane.env.members().iter();
        let metrics = |m: &testenv::MemberInfo| format!("127.0.0.1:{}", m.estimator_metrics_port);
        let members = members.map(|m| (m.estimator_port, metrics(m))).collect();
        return Ok((Estimators::Real(members), "real Go estimators".to_string()));
    }
    let stub = start_stub(&plane.wl.cluster_names, cfg.estimators.latency).await?;
    let services = (0..plane.wl.cluster_names.len())
        .map(|i| {
            serde_json::to_value(external_name_service(
                &stub.clusters()[i],
                "127.0.0.1",
                stub.port(i),
            ))
        })
        .collect::<Result<Vec<Value>, _>>()?;
    apply_all(&plane.client, services, cfg.create_concurrency)
        .await
        .context("creating the estimator Services")?;
    let ms = cfg.estimators.latency.as_secs_f64() * 1000.0;
    Ok((Estimators::Stub(stub), format!("stub, {ms:.0} ms")))
}

/// Both schedulers on their halves at once.
async fn together(
    plane: &Plane,
    cfg: &Scenario,
    est: &Estimators,
    both: [&Sched; 2],
    n: usize,
    t0: Instant,
) -> anyhow::Result<[SideFigures; 2]> {
    let mut items = plane::originals(&plane.wl, &both.map(|s| s.name.clone()));
    items.truncate(n);
    let meter = Meter::start(plane, est, &both).await;
    let names = both.map(|s| s.name.as_str());
    let batch =
        plane::create_and_settle(cfg, &plane.client, &plane.observer, &items, &names).await?;
    let m = meter.stop(est).await;
    let figures = batch
        .sides
        .into_iter()
        .enumerate()
        .map(|(i, (_, phase))| SideFigures {
            phase,
            connections: m.connections[i],
            cpu_s: m.cpu[i],
            ..Default::default()
        });
    let together: [SideFigures; 2] = plane::two(figures.collect());
    let [ours, theirs] = (together.each_ref()).map(|f| f.phase.steady_rate_per_s.unwrap_or(0.0));
    log!(t0, "together: ours {ours:.1}/s, Go {theirs:.1}/s");
    Ok(together)
}

/// What the alone batches leave for the ceilings and the fault rows.
#[derive(Default)]
struct AloneBatches {
    figures: Vec<SideFigures>,
    /// Calls per cluster during our alone batch (stub only).
    asked: Vec<u64>,
    /// The machine's 1-minute load average before our batch.
    load_1m: f64,
    /// The estimator calls of our alone batch, for the fair ceiling (stub only).
    recorded: Vec<testenv::estimator::Call>,
}

/// The same batch for each scheduler, the other idle.
async fn alone_batches(
    plane: &Plane,
    cfg: &Scenario,
    est: &Estimators,
    both: [&Sched; 2],
    templates: &[BindingTemplate],
    t0: Instant,
) -> anyhow::Result<AloneBatches> {
    let mut out = AloneBatches::default();
    for (i, s) in both.into_iter().enumerate() {
        wait_queues_idle(&both, crate::plane::QUIET, cfg.settle_timeout).await;
        let items = plane::items(templates, ALONE[i], |_| &s.name);
        let ours_stub = match est {
            Estimators::Stub(stub) if i == 0 => Some(stub.fake()),
            _ => None,
        };
        if i == 0 {
            out.load_1m = crate::procs::load_1m();
        }
        if let Some(fake) = ours_stub {
            fake.start_recording();
        }
        let (f, calls) = alone(plane, cfg, est, s, &items).await?;
        if let Some(fake) = ours_stub {
            (out.recorded, out.asked) =
                (fake.take_recording(), calls.iter().map(|c| c[0]).collect());
        }
        let rate = f.phase.steady_rate_per_s.unwrap_or(0.0);
        let (p99, rpcs) = (
            f.phase.latency_p99_ms.unwrap_or(0.0),
            f.rpcs_per_binding.unwrap_or(0.0),
        );
        let c = f.connections;
        log!(
            t0,
            "alone {}: {rate:.1}/s steady, p99 {p99:.0} ms, {rpcs:.1} estimator calls/binding, {c} connections",
            s.label
        );
        out.figures.push(f);
    }
    Ok(out)
}

/// The replay ceiling of our alone batch's writes, and the fair ceiling: the same writes,
/// each binding first making its share of the very estimator calls our batch made, against
/// the same stub, with no scheduling logic (stub only); with the fair ceiling's calls.
async fn ceilings(
    plane: &Plane,
    cfg: &Scenario,
    est: &Estimators,
    templates: &[BindingTemplate],
    recorded: Vec<testenv::estimator::Call>,
    t0: Instant,
) -> anyhow::Result<(BTreeMap<String, f64>, BTreeMap<String, f64>, usize)> {
    // What the ceilings cost, for the log: the bench holds the stub and the bare client.
    let busy = [
        ("bench (stub estimators, bare client)", std::process::id()),
        ("kube-apiserver", plane.apiserver_pid),
        ("etcd", plane.etcd_pid),
    ];
    let concurrency = &cfg.ceiling.concurrency;
    let ceiling = |calls| {
        crate::ceiling::replay_ceiling(
            &plane.client,
            templates,
            ALONE[0],
            concurrency,
            calls,
            &busy,
            t0,
        )
    };
    let replay_ceiling = ceiling(None).await?;
    let Estimators::Stub(stub) = est else {
        return Ok((replay_ceiling, BTreeMap::new(), 0));
    };
    if recorded.is_empty() {
        return Ok((replay_ceiling, BTreeMap::new(), 0));
    }
    let calls = crate::ceiling::EstimatorCalls::connect(stub, recorded, templates.len()).await?;
    let (n, distinct) = (calls.len(), calls.distinct());
    log!(
        t0,
        "our alone batch made {n} estimator calls, {distinct} of them distinct (cluster, method, request)"
    );
    Ok((replay_ceiling, ceiling(Some(&calls)).await?, n))
}

/// Pairs of the alone batches placed alike, with the same `Scheduled` status, and the first
/// ten that are not.
fn alone_agreement(plane: &Plane, templates: &[BindingTemplate]) -> (usize, Vec<String>) {
    let mut disagreements = Vec::new();
    let mut agree = 0;
    for t in templates {
        let [a, b] = ALONE.map(|s| {
            plane
                .observer
                .get(&t.key(s))
                .map(|o| (o.clusters, o.condition))
        });
        let status = |c: &Option<(String, String)>| c.as_ref().map(|c| c.0.clone());
        let same = match (&a, &b) {
            (Some((pa, ca)), Some((pb, cb))) => pa == pb && status(ca) == status(cb),
            _ => false,
        };
        if same {
            agree += 1;
        } else if disagreements.len() < 10 {
            let (key, strategy) = (t.key(""), &t.strategy);
            disagreements.push(format!("{key} [{strategy}]: ours {a:?}, Go {b:?}"));
        }
    }
    (agree, disagreements)
}

/// The fault rows: each fault against ours, then Go, on the Divided templates.
async fn fault_rows(
    rows: &Rows<'_>,
    both: [&Sched; 2],
    asked: &[u64],
) -> anyhow::Result<Vec<FaultRow>> {
    // The clusters the batch asks most come first: a fault there matters.
    let mut ranked: Vec<usize> = (0..asked.len()).collect();
    ranked.sort_by_key(|&i| std::cmp::Reverse(asked[i]));
    let hung: HashSet<usize> = ranked.iter().copied().take(1).collect();
    let tenth: HashSet<usize> = ranked.iter().copied().step_by(10).collect();
    let faulted = [
        (Fault::None, &hung, Fault::None),
        (Fault::Hung, &hung, Fault::Hung),
        (Fault::Refusing, &tenth, Fault::Refusing),
        // A move is one event: the second scheduler meets the moved addresses.
        (Fault::Moved, &tenth, Fault::AfterMove),
    ];
    let mut faults = Vec::new();
    for (k, (first, set, second)) in faulted.into_iter().enumerate() {
        for (i, s) in both.into_iter().enumerate() {
            wait_queues_idle(&both, crate::plane::QUIET, rows.cfg.settle_timeout).await;
            let label = ["ours", "Go"][i];
            let suffix = format!("-f{k}{}", ["r", "g"][i]);
            let fault = if i == 0 { first } else { second };
            let row = rows.row(fault, set, s, label, &suffix).await?;
            let (p99, healthy, hung) = (
                row.attempt_p99_s.unwrap_or(0.0),
                row.healthy_answers_per_binding,
                row.hung_calls_per_binding,
            );
            let (done, n, same) = (row.phase.done, row.phase.bindings, row.same_as_fault_free);
            log!(
                rows.t0,
                "fault '{}' {label}: {done}/{n} decided, attempt p99 {p99:.2}s, {healthy:.1} healthy answers/binding, {hung:.1} hung calls/binding, {same}/{n} as without the fault",
                row.fault
            );
            faults.push(row);
        }
    }
    Ok(faults)
}

/// One scale on a fresh control plane.
async fn scale(
    base: &Scenario,
    clusters: usize,
    with_faults: bool,
    t0: Instant,
) -> anyhow::Result<Scale> {
    let real = clusters <= base.estimators.real_max;
    let mut cfg = base.clone();
    cfg.workload.clusters = clusters;
    cfg.workload.bindings = base.workload.bindings.max(base.workload.alone);
    cfg.flags.estimator = true;
    cfg.estimators.members = if real { clusters } else { 0 };
    let plane = plane::start_plane(&cfg, t0).await?;
    let (est, estimators) = estimators(&plane, &cfg, real).await?;
    log!(t0, "{clusters} clusters, estimators: {estimators}");
    let (mut rust, mut go) = plane::start_schedulers(&cfg, &plane, t0).await?;
    // Connected to every estimator, nothing to schedule yet: what the connections cost.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let pids = [rust.pid(), go.pid()];
    let idle_rss_kib = pids.map(|p| crate::procs::memory_kib(p).map_or(0, |m| m.0));
    let (rss, rss_task) = RssSampler::start(pids.to_vec(), Duration::from_millis(250));
    let together = together(&plane, &cfg, &est, [&rust, &go], base.workload.bindings, t0).await?;
    rust.check_alive()?;
    go.check_alive()?;
    let wl = &plane.wl;
    let templates = wl.bindings[..base.workload.alone.min(wl.bindings.len())].to_vec();
    let alone = alone_batches(&plane, &cfg, &est, [&rust, &go], &templates, t0).await?;
    // The fair ceiling opens a connection per cluster of its own: with both schedulers still
    // connected, the stub's and the ceiling's sockets can pass the open-files limit (5,000
    // clusters: 5,000 listeners, 10,000 schedulers' and 10,000 ceiling's connections ends).
    // Then the schedulers are measured and stopped first, and the fault rows skipped.
    let limit = crate::procs::open_files_limit();
    let stopped_early = clusters * 5 > limit;
    let mut peak_early = None;
    if stopped_early {
        rss_task.abort();
        peak_early = Some([rss.max(0), rss.max(1)]);
        rust.proc.kill();
        go.proc.kill();
        let why = format!("schedulers stopped before the ceilings (open-files limit {limit})");
        log!(t0, "{clusters} clusters: {why}, no fault rows");
    }
    let (replay_ceiling, fair_ceiling, fair_ceiling_calls) =
        ceilings(&plane, &cfg, &est, &templates, alone.recorded, t0).await?;
    let (agree, disagreements) = alone_agreement(&plane, &templates);
    let pairs = templates.len();
    log!(t0, "alone batches agree: {agree}/{pairs}");
    let mut faults = Vec::new();
    if let (true, false, Estimators::Stub(stub)) = (with_faults, stopped_early, &est) {
        let fault_free = (templates.iter())
            .filter_map(|t| Some((t.key(""), plane.observer.get(&t.key(ALONE[0]))?.clusters)))
            .collect();
        // Only the templates that ask the estimators (replicas to divide) say something.
        let divided = |t: &&BindingTemplate| {
            t.spec["placement"]["replicaScheduling"]["replicaSchedulingType"] == "Divided"
        };
        let n = base.faults.estimator_row_bindings;
        let templates = templates.iter().filter(divided).take(n).cloned().collect();
        let rows = Rows {
            plane: &plane,
            cfg: &cfg,
            est: &est,
            stub,
            fault_free,
            templates,
            t0,
        };
        faults = fault_rows(&rows, [&rust, &go], &alone.asked).await?;
    }
    rss_task.abort();
    let load_1m = [alone.load_1m, crate::procs::load_1m()];
    let peak = peak_early.unwrap_or_else(|| [rss.max(0), rss.max(1)]);
    rust.proc.kill();
    go.proc.kill();
    let (bindings, pairs) = (
        base.workload.bindings.min(wl.bindings.len()),
        templates.len(),
    );
    plane.stop();
    Ok(Scale {
        clusters,
        estimators,
        bindings,
        alone_bindings: pairs,
        together,
        alone: plane::two(alone.figures),
        replay_ceiling,
        fair_ceiling,
        fair_ceiling_calls,
        load_1m,
        peak_rss_kib: peak,
        idle_rss_kib,
        agree,
        pairs,
        disagreements,
        faults,
    })
}

/// Runs every scale.
pub async fn run(base: &Scenario) -> anyhow::Result<EstBench> {
    let t0 = Instant::now();
    let largest_stub = base
        .workload
        .scales
        .iter()
        .copied()
        .filter(|&c| c > base.estimators.real_max)
        .max();
    let mut scales = Vec::new();
    for &c in &base.workload.scales {
        let with_faults = base.faults.estimator_rows && Some(c) == largest_stub;
        scales.push(scale(base, c, with_faults, t0).await?);
    }
    Ok(EstBench {
        latency_ms: base.estimators.latency.as_secs_f64() * 1000.0,
        scales,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each cluster's port answers that cluster's figure, and the calls are counted per
    /// cluster.
    #[tokio::test]
    async fn the_stub_serves_a_port_per_cluster() {
        use estimator_client::pb::messages as pb;
        let clusters = vec!["member1".to_string(), "member2".to_string()];
        let stub = start_stub(&clusters, Duration::ZERO).await.unwrap();
        assert_ne!(stub.port(0), stub.port(1));
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], stub.port(1)));
        let mut client = testenv::estimator::bare_client(addr).await.unwrap();
        let request = pb::MaxAvailableReplicasRequest {
            cluster: "member2".into(),
            ..Default::default()
        };
        let got = client
            .max_available_replicas(tonic::Request::new(request))
            .await
            .unwrap()
            .into_inner()
            .max_replicas;
        assert_eq!(got, max_available_answer("member2"));
        let answered: Vec<u64> = stub.counts().iter().map(|c| c.answered()).collect();
        assert_eq!(answered, [0, 1]);
    }
}
