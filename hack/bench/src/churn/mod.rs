//! `churn`: the soak bench. Ours and Go side by side with real Go estimators under a steady
//! stream of binding pairs (one binding of a template for each scheduler) created, scaled and
//! deleted at a constant live count, optionally with API server kills; both processes are
//! sampled throughout and the pairs must agree at the end (`templates/churn.md` tells how).

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio::time::{Instant, MissedTickBehavior};

use crate::figures::num;
use crate::observe::{Obs, Observer};
use crate::plane::{self, Plane, create_one, delete_one, log, scale_one};
use crate::procs::{connections_to, cpu_seconds, load_1m, memory_kib, open_fds, scrape, threads};
use crate::promtext;
use crate::scenario::Scenario;
use crate::stats;
use crate::workload::BindingTemplate;
use testenv::rng::Rng;

mod report;
pub use report::{chart, markdown};

/// Our gauge of the tasks alive on the tokio runtime.
const TOKIO_TASKS: &str = "karmada_scheduler_tokio_alive_tasks";
/// The Go runtime's goroutines.
const GOROUTINES: &str = "go_goroutines";
/// Our estimator client's per-cluster connected gauge (the Go scheduler has none).
const ESTIMATOR_CONNECTED: &str = "karmada_scheduler_estimator_client_connected";
/// Requests of the stream in flight at most; a tick finding them all taken is skipped.
const IN_FLIGHT: usize = 64;
/// A request of the stream without an answer after this long counts as failed.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// A pair is not scaled again before this long.
const SCALE_GAP: Duration = Duration::from_secs(5);
/// Binding templates the stream cycles through.
const TEMPLATES: usize = 500;
/// Disagreements and incomplete bindings listed in the report, at most.
const LISTED: usize = 10;

/// How long the API server stays down at each fault.
const FAULT_DOWN: Duration = Duration::from_secs(2);
/// How long to wait, after the stream, for every live binding to be settled.
const SETTLE: Duration = Duration::from_secs(180);

/// One sampling instant; pairs of values are `[ours, Go]`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ChurnSample {
    /// Seconds since the stream started.
    pub t_s: f64,
    /// Bindings alive (created, not yet deleted), both schedulers.
    pub live: usize,
    pub rss_kib: [u64; 2],
    pub fds: [usize; 2],
    pub threads: [u64; 2],
    /// `workqueue_depth{name="scheduler-queue"}`.
    pub queue_depth: [Option<f64>; 2],
    /// Ours: tokio tasks alive; Go: goroutines.
    pub tasks: [Option<f64>; 2],
    /// Established TCP connections to the estimators' ports.
    pub estimator_sockets: [usize; 2],
    /// Ours only: clusters whose estimator the client reports connected.
    pub estimator_connected: Option<f64>,
    /// Live bindings without a `Scheduled` condition, or `Scheduled=True` for an older
    /// generation, as the bench's watch sees them.
    pub backlog: [usize; 2],
    /// CPU seconds (user + system) used by each process so far.
    #[serde(default)]
    pub cpu_s: [f64; 2],
    /// The machine's 1-minute load average (other work on the cores shows here).
    #[serde(default)]
    pub load1: f64,
}

/// Requests of the stream (bindings, both schedulers).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Ops {
    pub created: u64,
    pub create_failed: u64,
    pub scaled: u64,
    pub scale_failed: u64,
    pub deleted: u64,
    pub delete_failed: u64,
    /// Ticks skipped because `IN_FLIGHT` requests were still running (API server down).
    pub skipped_ticks: u64,
    /// Scale ticks that found no pair to scale.
    pub no_scale_candidate: u64,
    /// Creation ticks without a creation: a pair whose deletion had failed was deleted again
    /// instead (the live count would grow otherwise).
    #[serde(default)]
    pub creations_held: u64,
    /// Of the scale changes, those made to a pair a member of which was not placed at its
    /// generation yet (no pair was): they may not see the same history.
    #[serde(default)]
    pub scaled_before_placed: u64,
}

/// One fault.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FaultMark {
    pub t_s: f64,
    /// Seconds until the API server served again.
    pub back_after_s: f64,
    pub error: Option<String>,
}

/// One scheduler's figures besides the samples.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ChurnSide {
    pub scheduler_name: String,
    /// Creation to the first `Scheduled` condition, over the bindings deleted during the run
    /// and those alive at the end.
    pub latency_p50_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
    pub latency_max_ms: Option<f64>,
    /// Bindings deleted before the scheduler decided them.
    pub deleted_undecided: u64,
    /// At the end: live bindings `Scheduled=True` at their generation, `Scheduled=False`, and
    /// incomplete (no condition, or `True` for an older generation), with a few listed.
    pub scheduled: usize,
    pub unschedulable: usize,
    pub incomplete: Vec<String>,
    pub incomplete_count: usize,
    /// How the process ended, when it exited during the run.
    pub exited: Option<String>,
}

/// The whole run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ChurnRun {
    #[serde(flatten)]
    pub stamp: crate::results::Stamp,
    pub seed: u64,
    pub minutes: f64,
    pub live: usize,
    pub rate: f64,
    pub scale_rate: f64,
    pub sample_s: f64,
    pub members: usize,
    pub kube_api_qps: f64,
    pub kube_api_burst: u32,
    pub faults_enabled: bool,
    pub fault_every_s: f64,
    pub fault_down_s: f64,
    pub faults: Vec<FaultMark>,
    pub ops: Ops,
    /// Seconds the stream ran (shorter than asked when a scheduler exited).
    pub stream_s: f64,
    /// Seconds after the stream until every live binding was settled (`None`: not within
    /// the settle time).
    pub settled_after_s: Option<f64>,
    pub settle_s: f64,
    /// `[ours, Go]`.
    pub sides: [ChurnSide; 2],
    /// Live pairs compared at the end (both members created and scaled without an error).
    pub pairs: usize,
    pub agree: usize,
    pub disagreements: Vec<String>,
    /// Pairs scaled while a member was not placed yet, compared apart: the lagging scheduler
    /// may have seen two generations as one, and a Divided placement depends on the history.
    #[serde(default)]
    pub unplaced_pairs: usize,
    #[serde(default)]
    pub unplaced_agree: usize,
    /// Pairs left out of the comparison: a request of theirs failed (during a fault).
    pub broken_pairs: usize,
    pub samples: Vec<ChurnSample>,
    /// The sample taken after the settle.
    pub end_sample: Option<ChurnSample>,
}

/// A live pair of the stream.
#[derive(Clone, Debug)]
struct Pair {
    /// `[ours, Go]`: `(key, object)`.
    members: [(String, Value); 2],
    template: usize,
    /// Current `spec.replicas` (0: not a workload, never scaled).
    replicas: i64,
    last_scaled: Option<Instant>,
    /// A request for it failed: its members' histories may differ.
    broken: bool,
    /// Scaled while a member was not placed at its generation: that member's scheduler may
    /// see the two generations as one.
    scaled_unplaced: bool,
}

/// State shared by the stream's tasks and the sampler.
#[derive(Default)]
struct State {
    live: VecDeque<Pair>,
    /// Pairs being created.
    creating: usize,
    /// Pairs whose deletion failed, deleted again first.
    retry: VecDeque<Pair>,
    ops: Ops,
    /// Creation-to-decision latencies (ms) of deleted bindings, `[ours, Go]`.
    latencies: [Vec<f64>; 2],
    deleted_undecided: [u64; 2],
}

impl State {
    /// Keys of the live pairs compared at the end (not broken), `[ours, Go]`.
    fn keys(&self) -> [Vec<String>; 2] {
        let pairs = || self.live.iter().chain(&self.retry).filter(|p| !p.broken);
        [0, 1].map(|i| pairs().map(|p| p.members[i].0.clone()).collect())
    }
}

type Shared = Arc<Mutex<State>>;

fn lock(s: &Shared) -> std::sync::MutexGuard<'_, State> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

/// `Scheduled=True` for the current generation.
fn placed(o: &Obs) -> bool {
    o.condition.as_ref().is_some_and(|c| c.0 == "True") && o.observed_generation >= o.generation
}

/// `Scheduled` seen, and when `True`, for the current generation.
fn settled(o: &Obs) -> bool {
    placed(o) || o.condition.as_ref().is_some_and(|c| c.0 != "True")
}

fn latency_ms(o: &Obs) -> Option<f64> {
    Some(
        o.decided_at?
            .saturating_duration_since(o.created_at?)
            .as_secs_f64()
            * 1000.0,
    )
}

/// The pair of stream number `n`.
fn new_pair(n: u64, templates: &[BindingTemplate], sides: &[String; 2]) -> Pair {
    let template = (n as usize) % templates.len();
    let b = &templates[template];
    let member = |i: usize| {
        let suffix = format!("-c{n}{}", ["r", "g"][i]);
        (b.key(&suffix), b.object(&suffix, &sides[i]))
    };
    Pair {
        members: [member(0), member(1)],
        template,
        replicas: b.spec.get("replicas").and_then(Value::as_i64).unwrap_or(0),
        last_scaled: None,
        broken: false,
        scaled_unplaced: false,
    }
}

/// Whether `e` comes from a 404 answer.
fn not_found(e: &anyhow::Error) -> bool {
    e.chain().any(
        |c| matches!(c.downcast_ref::<kube::Error>(), Some(kube::Error::Api(a)) if a.code == 404),
    )
}

/// `one(0)` and `one(1)`, a request for each member of a pair, at once; each given up after
/// [`REQUEST_TIMEOUT`] (a hung API server). Failures but 404s are logged.
async fn both<T, F>(one: impl Fn(usize) -> F) -> [anyhow::Result<T>; 2]
where
    F: Future<Output = anyhow::Result<T>>,
{
    let bounded = |i| tokio::time::timeout(REQUEST_TIMEOUT, one(i));
    let (a, b) = tokio::join!(bounded(0), bounded(1));
    [a, b].map(|r| {
        let r = r.unwrap_or_else(|_| Err(anyhow::anyhow!("no answer within {REQUEST_TIMEOUT:?}")));
        if let Err(e) = &r
            && !not_found(e)
        {
            eprintln!("bench churn: {e:#}");
        }
        r
    })
}

fn failures<T>(results: &[anyhow::Result<T>; 2]) -> u64 {
    results.iter().filter(|r| r.is_err()).count() as u64
}

/// Everything a stream task needs.
#[derive(Clone)]
struct Ctx {
    client: kube::Client,
    observer: Observer,
    state: Shared,
    sides: [String; 2],
}

impl Ctx {
    async fn create(self, pair: Pair) {
        let (client, observer) = (&self.client, &self.observer);
        let results = both(|i| {
            let (key, obj) = &pair.members[i];
            create_one(client, observer, key, &self.sides[i], obj)
        })
        .await;
        let failed = failures(&results);
        let mut st = lock(&self.state);
        st.creating -= 1;
        st.ops.created += 2 - failed;
        st.ops.create_failed += failed;
        // Even when a POST failed (its answer may have been lost with the object created), the
        // pair is deleted in its turn.
        st.live.push_back(Pair {
            broken: failed > 0,
            ..pair
        });
    }

    async fn delete(self, pair: Pair) {
        let client = &self.client;
        let results = both(|i| {
            let (key, obj) = &pair.members[i];
            delete_one(client, key, obj)
        })
        .await;
        let failed = failures(&results);
        let mut st = lock(&self.state);
        if failed > 0 {
            // Deleted again in its turn (a member already gone counts as deleted then).
            st.ops.delete_failed += failed;
            st.retry.push_back(pair);
            return;
        }
        st.ops.deleted += 2;
        for (i, (key, _)) in pair.members.iter().enumerate() {
            if let Some(o) = self.observer.get(key) {
                match latency_ms(&o) {
                    Some(ms) if !pair.broken => st.latencies[i].push(ms),
                    Some(_) => {}
                    None => st.deleted_undecided[i] += 1,
                }
            }
            self.observer.forget(key);
        }
    }

    async fn scale(self, pair: Pair, replicas: i64) {
        let (client, observer) = (&self.client, &self.observer);
        let results = both(|i| {
            let (key, obj) = &pair.members[i];
            let (name, ns) = (&obj["metadata"]["name"], &obj["metadata"]["namespace"]);
            let (name, ns) = (name.as_str().unwrap_or_default(), ns.as_str());
            scale_one(client, observer, key, name, ns, replicas)
        })
        .await;
        // Deleted meanwhile: not a failure, and nothing left to compare.
        if results.iter().any(|r| r.as_ref().is_err_and(not_found)) {
            return;
        }
        let ok = failures(&results) == 0;
        let mut st = lock(&self.state);
        if ok {
            st.ops.scaled += 2;
        } else {
            st.ops.scale_failed += 2;
        }
        let key = &pair.members[0].0;
        if let Some(p) = st.live.iter_mut().find(|p| &p.members[0].0 == key) {
            p.replicas = replicas;
            p.broken |= !ok;
        }
    }
}

/// Runs `task` on its own, holding `permit` until it ends.
fn spawn<P: Send + 'static>(permit: P, task: impl Future<Output = ()> + Send + 'static) {
    tokio::spawn(async move {
        task.await;
        drop(permit);
    });
}

/// At a creation tick: the pair to delete first, if any, and whether to create one.
fn next_pair(st: &mut State, live_pairs: usize) -> (Option<Pair>, bool) {
    // Pairs whose deletion failed are still alive: they count, and go first. While deletions
    // fail (the API server down), no pair is added in their place, so that the live count
    // stays put.
    let full = st.live.len() + st.retry.len() + st.creating >= live_pairs;
    let gone = match st.retry.pop_front() {
        Some(p) => Some(p),
        None if full => st.live.pop_front(),
        None => None,
    };
    let make = st.live.len() + st.retry.len() + st.creating < live_pairs;
    if make {
        st.creating += 1;
    } else {
        st.ops.creations_held += 1;
    }
    (gone, make)
}

/// At a scale tick: a pair to scale and its new replicas, if any pair can be.
fn pick_scale(
    ctx: &Ctx,
    rng: &mut Rng,
    templates: &[BindingTemplate],
    live_pairs: usize,
) -> Option<(Pair, i64)> {
    let mut st = lock(&ctx.state);
    let now = Instant::now();
    // Not the oldest tenth: they are about to be deleted.
    let candidates: Vec<usize> = (st.live.iter().enumerate().skip(live_pairs / 10))
        .filter(|(_, p)| {
            p.replicas > 0
                && !p.broken
                && p.last_scaled
                    .is_none_or(|t| now.duration_since(t) >= SCALE_GAP)
        })
        .map(|(i, _)| i)
        .collect();
    // Those both schedulers have placed at their generation, so that both members see the
    // same history; else any (a scheduler behind sees another history).
    let placed_by_both = |i: &usize| {
        (st.live[*i].members.iter()).all(|(k, _)| ctx.observer.get(k).is_some_and(|o| placed(&o)))
    };
    let ready: Vec<usize> = candidates.iter().copied().filter(placed_by_both).collect();
    let (ready, unplaced) = match ready.is_empty() {
        true => (candidates, true),
        false => (ready, false),
    };
    if ready.is_empty() {
        st.ops.no_scale_candidate += 1;
        return None;
    }
    if unplaced {
        st.ops.scaled_before_placed += 2;
    }
    let i = *rng.pick(&ready);
    let p = &mut st.live[i];
    p.last_scaled = Some(now);
    p.scaled_unplaced |= unplaced;
    let base = templates[p.template].spec["replicas"]
        .as_i64()
        .unwrap_or(1)
        .max(1);
    let mut r = rng.range(1, 2 * base + 1);
    if r == p.replicas {
        r = if r > 1 { r - 1 } else { r + 1 };
    }
    Some((p.clone(), r))
}

/// The stream: pairs created every `2 / rate` s (the oldest deleted first once `live` is
/// reached), a pair scaled every `2 / scale_rate` s, until `until`.
async fn drive(
    ctx: Ctx,
    flags: &Scenario,
    templates: &[BindingTemplate],
    seed: u64,
    until: Instant,
) {
    let sem = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut rng = Rng::new(seed).fork("churn-stream");
    let live_pairs = (flags.workload.live / 2).max(1);
    let every = |rate: f64| Duration::from_secs_f64(2.0 / rate.max(1e-3));
    let mut create_tick = tokio::time::interval(every(flags.workload.rate));
    create_tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let mut scale_tick = tokio::time::interval(every(flags.workload.scale_rate));
    scale_tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
    scale_tick.tick().await;
    let mut n: u64 = 0;
    loop {
        let create = tokio::select! {
            _ = tokio::time::sleep_until(until) => break,
            _ = create_tick.tick() => true,
            _ = scale_tick.tick(), if flags.workload.scale_rate > 0.0 => false,
        };
        let Ok(permit) = sem.clone().try_acquire_owned() else {
            lock(&ctx.state).ops.skipped_ticks += 1;
            continue;
        };
        if create {
            let (gone, make) = next_pair(&mut lock(&ctx.state), live_pairs);
            if let Some(p) = gone {
                spawn(sem.clone().try_acquire_owned(), ctx.clone().delete(p));
            }
            if make {
                spawn(
                    permit,
                    ctx.clone().create(new_pair(n, templates, &ctx.sides)),
                );
                n += 1;
            }
        } else {
            let pick = pick_scale(&ctx, &mut rng, templates, live_pairs);
            if let Some((pair, replicas)) = pick {
                spawn(permit, ctx.clone().scale(pair, replicas));
            }
        }
    }
    // Let the requests in flight end (each gives up after `REQUEST_TIMEOUT`).
    let _ = tokio::time::timeout(REQUEST_TIMEOUT * 3, sem.acquire_many(IN_FLIGHT as u32)).await;
}

impl ChurnSample {
    /// One log line: every figure, ours / Go.
    fn line(&self) -> String {
        let cells = FIGURES.iter().map(|(_, [a, b], digits, get)| {
            let v = |i| num(get(self, i), *digits);
            format!("{a} {} / {b} {}", v(0), v(1))
        });
        let cells: Vec<String> = cells.collect();
        format!("live {} | {}", self.live, cells.join(" | "))
    }
}

/// What the sampler reads: each scheduler's pid and `/metrics` address, the estimators'
/// ports, the bench's watch and the stream's pairs.
struct Probe {
    scheds: [(u32, String); 2],
    ports: HashSet<u16>,
    observer: Observer,
    state: Shared,
}

impl Probe {
    /// Samples every `every` until `until`, or until a scheduler is gone (then `stop` tells
    /// the stream).
    async fn sample_until(
        &self,
        every: Duration,
        start: Instant,
        until: Instant,
        stop: &tokio::sync::Notify,
        t0: Instant,
    ) -> Vec<ChurnSample> {
        let mut samples = Vec::new();
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(until) => break,
                _ = tick.tick() => {}
            }
            let s = self.sample(start.elapsed().as_secs_f64()).await;
            log!(t0, "{}", s.line());
            samples.push(s);
            if self.gone() {
                stop.notify_waiters();
                break;
            }
        }
        samples
    }

    async fn sample(&self, t_s: f64) -> ChurnSample {
        let (keys, live) = {
            let st = lock(&self.state);
            (st.keys(), (st.live.len() + st.retry.len()) * 2)
        };
        let mut s = ChurnSample {
            t_s,
            live,
            load1: load_1m(),
            ..Default::default()
        };
        for (i, (pid, metrics)) in self.scheds.iter().enumerate() {
            let pid = *pid;
            s.rss_kib[i] = memory_kib(pid).map_or(0, |m| m.0);
            s.fds[i] = open_fds(pid).unwrap_or(0);
            s.threads[i] = threads(pid).unwrap_or(0);
            s.estimator_sockets[i] = connections_to(pid, &self.ports);
            s.cpu_s[i] = cpu_seconds(pid).unwrap_or(0.0);
            let snap = self.observer.snapshot(&keys[i]);
            s.backlog[i] = snap.iter().filter(|o| !settled(o)).count();
            let Ok(m) = scrape(metrics).await else {
                continue;
            };
            let gauge = |name: &str, filter: &[(&str, &str)]| {
                let has = m.iter().any(|x| x.name == name);
                has.then(|| promtext::sum(&m, name, filter))
            };
            s.queue_depth[i] = gauge("workqueue_depth", &[("name", "scheduler-queue")]);
            s.tasks[i] = gauge([TOKIO_TASKS, GOROUTINES][i], &[]);
            if i == 0 {
                s.estimator_connected = gauge(ESTIMATOR_CONNECTED, &[]);
            }
        }
        s
    }

    /// Whether a scheduler has exited.
    fn gone(&self) -> bool {
        let gone = |pid: &u32| std::fs::metadata(format!("/proc/{pid}")).is_err();
        self.scheds.iter().any(|(pid, _)| gone(pid))
    }
}

/// Kills and restarts the API server every `api_kill_every` until `until`.
async fn fault_loop(
    env: &testenv::TestEnv,
    flags: &Scenario,
    start: Instant,
    until: Instant,
    t0: Instant,
) -> Vec<FaultMark> {
    if !flags.faults.api_kills {
        return vec![];
    }
    // `api` hands a restarted server over to the environment's teardown when dropped.
    let mut api = match testenv::faults::ApiServer::new(env, "churn") {
        Ok(a) => a,
        Err(e) => {
            return vec![FaultMark {
                error: Some(format!("{e:#}")),
                ..Default::default()
            }];
        }
    };
    let mut marks = Vec::new();
    let mut next = start + flags.faults.api_kill_every;
    while next + FAULT_DOWN < until {
        tokio::time::sleep_until(next).await;
        let at = Instant::now();
        log!(t0, "fault: SIGKILL of the API server");
        let r = api.kill_and_restart(FAULT_DOWN).await;
        let back_after_s = at.elapsed().as_secs_f64();
        log!(
            t0,
            "fault: API server serving again after {back_after_s:.1}s"
        );
        marks.push(FaultMark {
            t_s: at.duration_since(start).as_secs_f64(),
            back_after_s,
            error: r.err().map(|e| format!("{e:#}")),
        });
        next += flags.faults.api_kill_every;
    }
    marks
}

/// Waits until every live binding is decided, and placed at its generation when `True`;
/// the seconds that took.
async fn settle_live(
    plane: &Plane,
    keys: &[String],
    sides: &[String; 2],
    t0: Instant,
) -> Option<f64> {
    let start = Instant::now();
    let names = [sides[0].as_str(), sides[1].as_str()];
    let ok = plane
        .observer
        .settle(keys, &names, settled, plane::QUIET, SETTLE)
        .await;
    let after = ok.then(|| start.elapsed().as_secs_f64());
    match after {
        Some(s) => log!(t0, "every live binding settled {s:.1}s after the stream"),
        None => log!(t0, "not every live binding settled within {SETTLE:?}"),
    }
    after
}

/// A side's live bindings at the end: placed, unschedulable or incomplete, and its latencies.
fn churn_side(
    plane: &Plane,
    st: &State,
    live: &[String],
    i: usize,
    name: &str,
    exited: Option<String>,
) -> ChurnSide {
    let snap = plane.observer.snapshot(live);
    let mut lat = st.latencies[i].clone();
    lat.extend(snap.iter().filter_map(latency_ms));
    let mut side = ChurnSide {
        scheduler_name: name.to_string(),
        latency_p50_ms: stats::percentile(&lat, 0.5),
        latency_p99_ms: stats::percentile(&lat, 0.99),
        latency_max_ms: stats::percentile(&lat, 1.0),
        deleted_undecided: st.deleted_undecided[i],
        exited,
        ..Default::default()
    };
    for (k, o) in live.iter().zip(&snap) {
        if placed(o) {
            side.scheduled += 1;
        } else if settled(o) {
            side.unschedulable += 1;
        } else {
            side.incomplete_count += 1;
            if side.incomplete.len() < LISTED {
                side.incomplete.push(format!(
                    "{k}: condition {:?}, observed generation {} of {}",
                    o.condition, o.observed_generation, o.generation
                ));
            }
        }
    }
    side
}

/// The agreement of the live pairs: with the same history, or scaled before both had placed
/// them (compared apart); pairs a failed request broke are left out.
fn agree_pairs(plane: &Plane, st: &State, out: &mut ChurnRun, t0: Instant) {
    let view = |k: &str| {
        plane.observer.get(k).map(|o| {
            let mut c = o.clusters;
            c.sort();
            (c, o.condition.map(|c| c.0))
        })
    };
    for p in st.live.iter().chain(&st.retry) {
        if p.broken {
            out.broken_pairs += 1;
            continue;
        }
        let (a, b) = (view(&p.members[0].0), view(&p.members[1].0));
        let (pairs, agree) = match p.scaled_unplaced {
            true => (&mut out.unplaced_pairs, &mut out.unplaced_agree),
            false => (&mut out.pairs, &mut out.agree),
        };
        *pairs += 1;
        if a.is_some() && a == b {
            *agree += 1;
        } else if out.disagreements.len() < LISTED {
            let unplaced = match p.scaled_unplaced {
                true => ", scaled before both had placed it",
                false => "",
            };
            out.disagreements.push(format!(
                "{} [{}, {} replicas{unplaced}]: ours {a:?}, Go {b:?}",
                p.members[0].0, plane.wl.bindings[p.template].strategy, p.replicas,
            ));
        }
    }
    log!(
        t0,
        "pairs agree: {}/{}, scaled before placed {}/{} ({} left out after a failed request)",
        out.agree,
        out.pairs,
        out.unplaced_agree,
        out.unplaced_pairs,
        out.broken_pairs
    );
}

/// Runs the churn bench.
pub async fn run(flags: &Scenario) -> anyhow::Result<ChurnRun> {
    let t0 = Instant::now();
    let (w, f) = (&flags.workload, &flags.faults);
    let mut cfg = flags.clone();
    cfg.workload.clusters = flags.estimators.members;
    cfg.workload.bindings = TEMPLATES;
    cfg.flags.estimator = true;
    let plane = plane::start_plane(&cfg, t0).await?;
    let (mut rust, mut go) = plane::start_schedulers(&cfg, &plane, t0).await?;
    let sides = [rust.name.clone(), go.name.clone()];
    let state: Shared = Arc::default();
    let ctx = Ctx {
        client: plane.client.clone(),
        observer: plane.observer.clone(),
        state: state.clone(),
        sides: sides.clone(),
    };
    let probe = Probe {
        scheds: [&rust, &go].map(|s| (s.pid(), s.metrics.clone())),
        ports: plane
            .env
            .members()
            .iter()
            .map(|m| m.estimator_port)
            .collect(),
        observer: plane.observer.clone(),
        state: state.clone(),
    };
    let kills = match f.api_kills {
        true => format!(", API server killed every {:?}", f.api_kill_every),
        false => String::new(),
    };
    let (minutes, live, rate, scale_rate) = (w.minutes, w.live, w.rate, w.scale_rate);
    let what =
        format!("{live} live, {rate}/s creations and deletions, {scale_rate}/s scale changes");
    log!(t0, "churn for {minutes:.1} min: {what}{kills}");
    let start = Instant::now();
    let until = start + Duration::from_secs_f64(w.minutes * 60.0);
    // Stops the stream early when a scheduler exits.
    let stop = tokio::sync::Notify::new();
    let sampler = probe.sample_until(flags.samples.every, start, until, &stop, t0);
    let stream = async {
        tokio::select! {
            _ = drive(ctx.clone(), flags, &plane.wl.bindings, w.seed, until) => {}
            _ = stop.notified() => {}
        }
    };
    let faults = fault_loop(&plane.env, flags, start, until, t0);
    let (samples, (), faults) = tokio::join!(sampler, stream, faults);
    let stream_s = start.elapsed().as_secs_f64();
    log!(t0, "stream ended after {stream_s:.0}s");
    let exited = [rust.proc.try_wait(), go.proc.try_wait()]
        .map(|r| r.ok().flatten().map(|status| format!("exited ({status})")));

    // ---- Settle: every live binding decided, and placed at its generation when `True`.
    let live_keys = lock(&state).keys();
    let settled_after_s = match exited.iter().all(Option::is_none) {
        true => settle_live(&plane, &live_keys.concat(), &sides, t0).await,
        false => None,
    };
    let end = probe.sample(start.elapsed().as_secs_f64()).await;
    log!(t0, "after the settle: {}", end.line());

    // ---- Each side's state, and the agreement of the pairs.
    let st = lock(&state);
    let side = |i: usize| churn_side(&plane, &st, &live_keys[i], i, &sides[i], exited[i].clone());
    let mut out = ChurnRun {
        seed: w.seed,
        minutes: w.minutes,
        live: w.live,
        rate: w.rate,
        scale_rate: w.scale_rate,
        sample_s: flags.samples.every.as_secs_f64(),
        members: flags.estimators.members,
        kube_api_qps: cfg.flags.qps,
        kube_api_burst: cfg.flags.burst,
        faults_enabled: f.api_kills,
        fault_every_s: f.api_kill_every.as_secs_f64(),
        fault_down_s: FAULT_DOWN.as_secs_f64(),
        faults,
        ops: st.ops.clone(),
        stream_s,
        settled_after_s,
        settle_s: SETTLE.as_secs_f64(),
        sides: [side(0), side(1)],
        samples,
        end_sample: Some(end),
        ..Default::default()
    };
    agree_pairs(&plane, &st, &mut out, t0);
    drop(st);
    rust.proc.kill();
    go.proc.kill();
    plane.stop();
    Ok(out)
}

/// A sampled figure of each side: its name, its columns in the samples table, its decimals,
/// and its value in a sample for side `i`.
type Figure = (
    &'static str,
    [&'static str; 2],
    usize,
    fn(&ChurnSample, usize) -> Option<f64>,
);

/// What the log, the report and the chart show of each side.
const FIGURES: [Figure; 7] = [
    ("RSS (MiB)", ["RSS ours", "RSS Go"], 1, |s, i| {
        Some(s.rss_kib[i] as f64 / 1024.0)
    }),
    (
        "open file descriptors",
        ["FDs ours", "FDs Go"],
        0,
        |s, i| Some(s.fds[i] as f64),
    ),
    ("threads", ["threads ours", "threads Go"], 0, |s, i| {
        Some(s.threads[i] as f64)
    }),
    (
        "tasks (ours: tokio tasks alive; Go: goroutines)",
        ["tasks ours", "goroutines Go"],
        0,
        |s, i| s.tasks[i],
    ),
    (
        "binding queue depth (`workqueue_depth{name=\"scheduler-queue\"}`)",
        ["queue ours", "queue Go"],
        0,
        |s, i| s.queue_depth[i],
    ),
    (
        "established connections to the estimators",
        ["est. conns ours", "est. conns Go"],
        0,
        |s, i| Some(s.estimator_sockets[i] as f64),
    ),
    (
        "live bindings unscheduled, as the bench sees them",
        ["backlog ours", "backlog Go"],
        0,
        |s, i| Some(s.backlog[i] as f64),
    ),
];
