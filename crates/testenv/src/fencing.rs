//! Two scheduler replicas sharing one Lease, with the leader frozen and cut off: the fencing
//! suite's scenario (`crates/scheduler/tests/e2e_fencing.rs`).
//!
//! Each replica reaches the Karmada API server through its own [`FaultProxy`], which connects
//! from its own loopback address (127.0.0.2, 127.0.0.3), so the API server's audit log (see
//! `hack/local-up.sh`) tells which replica made each request. While a stream of bindings of
//! every strategy is created and scaled, at seeded moments the replica that leads is
//! - frozen (SIGSTOP) for longer than the lease, then resumed (SIGCONT), or
//! - cut from the API server by its proxy (open connections reset, new ones refused) for
//!   longer than the lease, while the other replica still reaches it.
//!
//! Afterwards every binding must be current (`Scheduled=True`, observed generation equal to
//! its generation, the placement `simulate` gives for the final objects) and no generation may
//! carry two placements. From the audit log, every write a replica made to a binding or an
//! Event is checked against the Lease as the API server recorded it: it must have arrived
//! while the last Lease write before it named that replica, and less than a lease duration
//! after that write. A replica that exits is started again, as a supervisor would; an exit is
//! recorded.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::str::FromStr as _;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

use crate::faultproxy::{FaultProxy, Policy, SplitMix64};
use crate::faults::{
    Bindings, CLUSTER_SCOPED, STRATEGIES, between, binding, create, delete_all, double_placements,
    incomplete, list_ours, placement, proxied_kubeconfig, record_history, scale, signal,
    simulate_check,
};
use crate::{GoProcess, TestEnv, free_port};

/// Lease timing of the scenario (short, so that a run takes a minute).
pub const LEASE_DURATION: Duration = Duration::from_secs(4);
const RENEW_DEADLINE: &str = "3s";
const RETRY_PERIOD: &str = "1s";

/// One replica of the pair.
#[derive(Clone, Debug)]
pub struct Replica {
    /// Names its logs (`rs-a`, `go`).
    pub tag: String,
    pub program: PathBuf,
    /// Flags beyond those the run sets (kubeconfig, scheduler name, election, addresses).
    pub extra_args: Vec<String>,
}

/// The size and seed of a run.
#[derive(Clone, Debug)]
pub struct FencingConfig {
    pub seed: u64,
    /// Names the run's bindings, Lease and scheduler name (`ours`, `ours-go`).
    pub pair: String,
    pub bindings: usize,
    pub stream: Duration,
    /// Leader freezes (SIGSTOP longer than the lease) during the stream.
    pub freezes: usize,
    /// Leader cut-offs (its proxy refuses, longer than the lease) during the stream.
    pub cuts: usize,
    /// How long after the stream every binding must be complete.
    pub settle: Duration,
    /// Our `karmada-scheduler`, for `simulate`.
    pub simulate_bin: PathBuf,
}

/// One write seen in the audit log outside its replica's lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaleWrite {
    pub replica: String,
    pub what: String,
    /// The answer the API server gave (2xx: it landed).
    pub code: u16,
    pub why: String,
}

/// What a run found.
#[derive(Clone, Debug, Default)]
pub struct FencingReport {
    pub pair: String,
    pub seed: u64,
    pub bindings: usize,
    /// What was done to whom, in order.
    pub faults: Vec<String>,
    /// Bindings not complete `settle` after the stream.
    pub stuck: Vec<String>,
    pub simulate_mismatches: Vec<String>,
    pub double_placements: Vec<String>,
    /// Exits of each replica the run did not cause.
    pub exits: BTreeMap<String, Vec<String>>,
    /// Writes (bindings, their status, Events) per replica that the API server accepted.
    pub writes: BTreeMap<String, usize>,
    /// Writes that arrived while the replica did not hold the Lease (landed or refused).
    pub stale: Vec<StaleWrite>,
    /// Lease holder changes seen in the audit log.
    pub leader_changes: usize,
    /// The `User-Agent`s of each replica's requests.
    pub user_agents: BTreeMap<String, BTreeSet<String>>,
}

impl FencingReport {
    /// Writes of `replica` outside its lease that the API server accepted.
    pub fn landed_outside_lease(&self, replica: &str) -> Vec<&StaleWrite> {
        self.stale
            .iter()
            .filter(|w| w.replica == replica && (200..300).contains(&w.code))
            .collect()
    }

    /// Requests of `replica` outside its lease, whatever the answer.
    pub fn sent_outside_lease(&self, replica: &str) -> Vec<&StaleWrite> {
        self.stale.iter().filter(|w| w.replica == replica).collect()
    }

    pub fn summary(&self) -> String {
        let list = |v: &[String]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                format!("{} ({})", v.len(), v.join("; "))
            }
        };
        let mut out = format!(
            "[{p}] seed {s}: {n} bindings, faults: {f}\n\
             [{p}]   lease holder changes: {lc}\n\
             [{p}]   stuck: {stuck}\n\
             [{p}]   placement differs from simulate: {sim}\n\
             [{p}]   generations with two placements: {dbl}\n",
            p = self.pair,
            s = self.seed,
            n = self.bindings,
            f = list(&self.faults),
            lc = self.leader_changes,
            stuck = list(&self.stuck),
            sim = list(&self.simulate_mismatches),
            dbl = list(&self.double_placements),
        );
        for (replica, writes) in &self.writes {
            let sent = self.sent_outside_lease(replica);
            let landed = self.landed_outside_lease(replica);
            let shown: Vec<String> = sent
                .iter()
                .take(5)
                .map(|w| format!("{} -> {} ({})", w.what, w.code, w.why))
                .collect();
            out.push_str(&format!(
                "[{p}]   {replica}: {writes} writes accepted; outside its lease: {} sent, {} landed{}; exits: {}\n",
                sent.len(),
                landed.len(),
                if shown.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", shown.join("; "))
                },
                list(self.exits.get(replica).map_or(&[][..], Vec::as_slice)),
                p = self.pair,
            ));
        }
        out
    }
}

/// A replica's process, its proxy and its source address.
struct Running<'e> {
    env: &'e TestEnv,
    replica: Replica,
    proxy: FaultProxy,
    source: IpAddr,
    kubeconfig: PathBuf,
    metrics: String,
    proc: GoProcess,
    starts: usize,
    scheduler_name: String,
    lease: String,
    frozen: bool,
}

impl<'e> Running<'e> {
    async fn start(
        env: &'e TestEnv,
        replica: Replica,
        source: IpAddr,
        seed: u64,
        scheduler_name: &str,
        lease: &str,
    ) -> anyhow::Result<Self> {
        let upstream: SocketAddr =
            format!("127.0.0.1:{}", env.info().karmada_apiserver_port).parse()?;
        let proxy = FaultProxy::start(upstream, seed).await?;
        proxy.set_source(source)?;
        let kubeconfig =
            proxied_kubeconfig(env, proxy.local_addr(), &format!("fencing-{}", replica.tag))?;
        let metrics = format!("127.0.0.1:{}", free_port());
        let proc = Self::spawn(
            env,
            &replica,
            &kubeconfig,
            &metrics,
            0,
            scheduler_name,
            lease,
        )?;
        Ok(Self {
            env,
            replica,
            proxy,
            source,
            kubeconfig,
            metrics,
            proc,
            starts: 1,
            scheduler_name: scheduler_name.to_string(),
            lease: lease.to_string(),
            frozen: false,
        })
    }

    fn spawn(
        env: &TestEnv,
        replica: &Replica,
        kubeconfig: &std::path::Path,
        metrics: &str,
        n: usize,
        scheduler_name: &str,
        lease: &str,
    ) -> anyhow::Result<GoProcess> {
        let mut args = vec![
            format!("--kubeconfig={}", kubeconfig.display()),
            format!("--scheduler-name={scheduler_name}"),
            "--leader-elect=true".to_string(),
            format!("--leader-elect-resource-name={lease}"),
            format!(
                "--leader-elect-lease-duration={}s",
                LEASE_DURATION.as_secs()
            ),
            format!("--leader-elect-renew-deadline={RENEW_DEADLINE}"),
            format!("--leader-elect-retry-period={RETRY_PERIOD}"),
            format!("--metrics-bind-address={metrics}"),
            format!("--health-probe-bind-address=127.0.0.1:{}", free_port()),
            "--v=2".to_string(),
        ];
        args.extend(replica.extra_args.iter().cloned());
        env.spawn_process(
            &format!("fencing-{}-{n}", replica.tag),
            &replica.program,
            &args,
        )
    }

    /// Start it again if it exited; the exit is recorded.
    fn check_alive(&mut self, exits: &mut BTreeMap<String, Vec<String>>) {
        if let Ok(Some(status)) = self.proc.try_wait() {
            exits
                .entry(self.replica.tag.clone())
                .or_default()
                .push(format!(
                    "{} exited ({status}): {}",
                    self.proc.name(),
                    self.proc.log_tail(3).replace('\n', " | ")
                ));
            if let Ok(p) = Self::spawn(
                self.env,
                &self.replica,
                &self.kubeconfig,
                &self.metrics,
                self.starts,
                &self.scheduler_name,
                &self.lease,
            ) {
                self.starts += 1;
                self.proc = p;
                self.frozen = false;
            }
        }
    }

    async fn leads(&self) -> bool {
        if self.frozen {
            return false;
        }
        metrics_text(&self.metrics).await.is_some_and(|m| {
            m.lines().any(|l| {
                l.starts_with("leader_election_master_status") && l.rsplit(' ').next() == Some("1")
            })
        })
    }

    fn freeze(&mut self) {
        signal(self.proc.pid(), "STOP");
        self.frozen = true;
    }

    fn thaw(&mut self) {
        signal(self.proc.pid(), "CONT");
        self.frozen = false;
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        // Never leave a process stopped (its kill would wait on nothing, but be safe).
        if self.frozen {
            signal(self.proc.pid(), "CONT");
        }
    }
}

async fn metrics_text(addr: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut s = tokio::time::timeout(Duration::from_secs(2), tokio::net::TcpStream::connect(addr))
        .await
        .ok()?
        .ok()?;
    s.write_all(format!("GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await
        .ok()?;
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(2), s.read_to_end(&mut buf))
        .await
        .ok()?
        .ok()?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    text.starts_with("HTTP/1.").then_some(text)
}

/// The replica that leads now (waiting up to `wait` for one), by index.
async fn leader(replicas: &[Running<'_>], wait: Duration) -> Option<usize> {
    let until = Instant::now() + wait;
    loop {
        for (i, r) in replicas.iter().enumerate() {
            if r.leads().await {
                return Some(i);
            }
        }
        if Instant::now() > until {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// One request as the API server's audit log recorded it.
#[derive(Clone, Debug, PartialEq)]
pub struct AuditEntry {
    pub received: Timestamp,
    pub completed: Timestamp,
    pub source: String,
    pub verb: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    pub code: u16,
    /// For Lease writes: the holder identity written.
    pub holder: Option<String>,
    /// The request's `User-Agent`.
    pub user_agent: String,
}

impl AuditEntry {
    fn describe(&self) -> String {
        let sub = if self.subresource.is_empty() {
            String::new()
        } else {
            format!("/{}", self.subresource)
        };
        format!(
            "{} {}{sub} {}/{} at {}",
            self.verb, self.resource, self.namespace, self.name, self.received
        )
    }
}

/// The `ResponseComplete` entries of an audit log (JSON lines).
pub fn parse_audit(text: &str) -> Vec<AuditEntry> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["stage"] == "ResponseComplete")
        .filter_map(|e| {
            let ts = |k: &str| e[k].as_str().and_then(|s| Timestamp::from_str(s).ok());
            let o = &e["objectRef"];
            let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
            Some(AuditEntry {
                received: ts("requestReceivedTimestamp")?,
                completed: ts("stageTimestamp")?,
                source: s(&e["sourceIPs"][0]),
                verb: s(&e["verb"]),
                resource: s(&o["resource"]),
                subresource: s(&o["subresource"]),
                namespace: s(&o["namespace"]),
                name: s(&o["name"]),
                code: e["responseStatus"]["code"].as_u64().unwrap_or(0) as u16,
                holder: e
                    .pointer("/requestObject/spec/holderIdentity")
                    .map(|h| h.as_str().unwrap_or_default().to_string()),
                user_agent: s(&e["userAgent"]),
            })
        })
        .collect()
}

/// Writes of the replicas at `sources` (address → replica tag) to bindings and Events, each
/// checked against the Lease `lease` as the audit log shows it: the last accepted Lease write
/// received before the request must name the replica's identity (taken from its own Lease
/// writes), and be less than `duration` old. Returns the accepted writes per replica, the
/// writes outside the lease, and how often the holder changed.
pub fn stale_writes(
    entries: &[AuditEntry],
    sources: &HashMap<String, String>,
    lease: &str,
    duration: Duration,
) -> (BTreeMap<String, usize>, Vec<StaleWrite>, usize) {
    let mut identity_of: HashMap<String, String> = HashMap::new();
    let mut lease_writes: Vec<&AuditEntry> = entries
        .iter()
        .filter(|e| e.resource == "leases" && e.name == lease && (200..300).contains(&e.code))
        .collect();
    lease_writes.sort_by_key(|e| e.completed);
    for e in &lease_writes {
        if let (Some(tag), Some(h)) = (sources.get(&e.source), &e.holder)
            && !h.is_empty()
        {
            identity_of.insert(tag.clone(), h.clone());
        }
    }
    let mut changes = 0;
    let mut last: Option<&str> = None;
    for e in &lease_writes {
        let h = e.holder.as_deref().unwrap_or_default();
        if !h.is_empty() && last.is_some_and(|l| l != h) {
            changes += 1;
        }
        if !h.is_empty() {
            last = Some(h);
        }
    }
    let mut accepted: BTreeMap<String, usize> = sources.values().map(|t| (t.clone(), 0)).collect();
    let mut stale = Vec::new();
    let is_write = |e: &AuditEntry| {
        matches!(e.verb.as_str(), "create" | "update" | "patch" | "delete")
            && matches!(
                e.resource.as_str(),
                "resourcebindings" | "clusterresourcebindings" | "events"
            )
    };
    for e in entries.iter().filter(|e| is_write(e)) {
        let Some(tag) = sources.get(&e.source) else {
            continue;
        };
        if (200..300).contains(&e.code) {
            *accepted.entry(tag.clone()).or_default() += 1;
        }
        let before = lease_writes
            .iter()
            .rev()
            .find(|l| l.completed <= e.received);
        let why = match (before, identity_of.get(tag)) {
            (None, _) => Some("before any Lease write".to_string()),
            (Some(_), None) => Some("the replica never held the Lease".to_string()),
            (Some(l), Some(me)) if l.holder.as_deref() != Some(me.as_str()) => Some(format!(
                "the Lease named {:?} (written at {})",
                l.holder.as_deref().unwrap_or_default(),
                l.completed
            )),
            (Some(l), Some(_)) => {
                let age = e.received.duration_since(l.completed);
                let age = Duration::try_from(age).unwrap_or_default();
                (age >= duration).then(|| {
                    format!(
                        "{:.1}s after its last renewal (lease {}s)",
                        age.as_secs_f64(),
                        duration.as_secs()
                    )
                })
            }
        };
        if let Some(why) = why {
            stale.push(StaleWrite {
                replica: tag.clone(),
                what: e.describe(),
                code: e.code,
                why,
            });
        }
    }
    (accepted, stale, changes)
}

/// A fault in progress: the replica, whether it is frozen (else cut off), and until when.
type Ongoing = Option<(usize, bool, Instant)>;

/// End the fault in progress, if any.
fn end_fault(replicas: &mut [Running<'_>], ongoing: &mut Ongoing) {
    if let Some((i, freeze, _)) = ongoing.take() {
        if freeze {
            replicas[i].thaw();
        } else {
            replicas[i].proxy.set_policy(Policy::default());
        }
    }
}

/// The pair of replicas through the scenario; see the module doc.
pub async fn run(
    env: &TestEnv,
    cfg: &FencingConfig,
    pair: [Replica; 2],
) -> anyhow::Result<FencingReport> {
    let prefix = format!("x{}-{}-", cfg.seed, cfg.pair);
    // The audit log is the environment's: only what this run wrote is judged (the same
    // source addresses serve every run).
    let run_started = Timestamp::now();
    let scheduler_name = format!("fencing-{}", cfg.pair);
    let lease = format!("fencing-{}-{}", cfg.pair, cfg.seed);
    let mut rng = SplitMix64(cfg.seed ^ 0xfe9ce);
    let client = env.client().await?;
    let api = Bindings::new(&client);
    let (history, recorders) = record_history(&api, prefix.clone());
    let mut report = FencingReport {
        pair: cfg.pair.clone(),
        seed: cfg.seed,
        bindings: cfg.bindings,
        ..Default::default()
    };
    let sources = [Ipv4Addr::new(127, 0, 0, 2), Ipv4Addr::new(127, 0, 0, 3)];
    let mut replicas = Vec::new();
    for (i, r) in pair.into_iter().enumerate() {
        replicas.push(
            Running::start(
                env,
                r,
                IpAddr::V4(sources[i]),
                cfg.seed + i as u64,
                &scheduler_name,
                &lease,
            )
            .await?,
        );
    }
    let source_tags: HashMap<String, String> = replicas
        .iter()
        .map(|r| (r.source.to_string(), r.replica.tag.clone()))
        .collect();
    if leader(&replicas, Duration::from_secs(60)).await.is_none() {
        bail!("no replica of {} led within 60 s", cfg.pair);
    }

    // Faults in separate slots of the stream; creations spread evenly over it.
    #[derive(Debug)]
    enum Step {
        Create(usize),
        Freeze(Duration),
        Cut(Duration),
    }
    let mut timeline: Vec<(Duration, Step)> = Vec::new();
    let n = cfg.bindings.max(1);
    for i in 0..cfg.bindings {
        timeline.push((cfg.stream * i as u32 / n as u32, Step::Create(i)));
    }
    let faults = cfg.freezes + cfg.cuts;
    let slot = cfg.stream / (faults as u32 + 1);
    let mut kinds: Vec<bool> = (0..faults).map(|i| i < cfg.freezes).collect();
    // Seeded order of freezes and cuts.
    for i in (1..kinds.len()).rev() {
        kinds.swap(i, rng.below(i as u64 + 1) as usize);
    }
    for (k, freeze) in kinds.into_iter().enumerate() {
        let at = slot * (k as u32 + 1) + between(&mut rng, Duration::ZERO, slot / 4);
        let lasts =
            LEASE_DURATION + between(&mut rng, Duration::from_secs(1), Duration::from_secs(3));
        timeline.push((
            at,
            if freeze {
                Step::Freeze(lasts)
            } else {
                Step::Cut(lasts)
            },
        ));
    }
    timeline.sort_by_key(|(at, _)| *at);

    let start = Instant::now();
    let deadline = start + cfg.stream + Duration::from_secs(120);
    let mut created: Vec<(String, usize)> = Vec::new();
    let mut ongoing: Ongoing = None;
    for (at, step) in timeline {
        // Wait for the step, ending a fault on time meanwhile.
        loop {
            let now = start.elapsed();
            if let Some((_, _, until)) = ongoing
                && Instant::now() >= until
            {
                end_fault(&mut replicas, &mut ongoing);
            }
            if now >= at {
                break;
            }
            let mut wait = at - now;
            if let Some((_, _, until)) = ongoing {
                wait = wait.min(until.saturating_duration_since(Instant::now()));
            }
            tokio::time::sleep(wait.max(Duration::from_millis(1))).await;
        }
        for r in replicas.iter_mut() {
            r.check_alive(&mut report.exits);
        }
        match step {
            Step::Create(i) => {
                let strategy = rng.below(STRATEGIES) as usize;
                let name = format!("{prefix}{i:03}");
                let replicas_wanted = 1 + rng.below(6) as i32;
                create(
                    &api,
                    &binding(&name, &scheduler_name, strategy, replicas_wanted),
                    deadline,
                )
                .await?;
                created.push((name, strategy));
                // Scale an earlier workload every other creation: changes arrive while a
                // replica is frozen or cut off, so its cache goes stale.
                if i % 2 == 1 {
                    let (old, s) = created[rng.below(created.len() as u64) as usize].clone();
                    if s != CLUSTER_SCOPED && placement(s).0 {
                        scale(&api.rb, &old, 1 + rng.below(8) as i32, deadline).await?;
                    }
                }
            }
            Step::Freeze(lasts) | Step::Cut(lasts) if ongoing.is_some() => {
                report.faults.push(format!(
                    "skipped a fault of {:.1}s: another is in progress",
                    lasts.as_secs_f64()
                ));
            }
            Step::Freeze(lasts) => match leader(&replicas, Duration::from_secs(10)).await {
                Some(i) => {
                    replicas[i].freeze();
                    report.faults.push(format!(
                        "froze {} at {:.1}s for {:.1}s",
                        replicas[i].replica.tag,
                        start.elapsed().as_secs_f64(),
                        lasts.as_secs_f64()
                    ));
                    ongoing = Some((i, true, Instant::now() + lasts));
                }
                None => report.faults.push("no leader to freeze".into()),
            },
            Step::Cut(lasts) => match leader(&replicas, Duration::from_secs(10)).await {
                Some(i) => {
                    replicas[i].proxy.set_policy(Policy {
                        refuse: true,
                        ..Policy::default()
                    });
                    replicas[i].proxy.cut_all();
                    report.faults.push(format!(
                        "cut {} off at {:.1}s for {:.1}s",
                        replicas[i].replica.tag,
                        start.elapsed().as_secs_f64(),
                        lasts.as_secs_f64()
                    ));
                    ongoing = Some((i, false, Instant::now() + lasts));
                }
                None => report.faults.push("no leader to cut off".into()),
            },
        }
    }
    if let Some((_, _, until)) = ongoing {
        tokio::time::sleep(until.saturating_duration_since(Instant::now())).await;
        end_fault(&mut replicas, &mut ongoing);
    }

    // Settle: every binding complete, replicas restarted if they exited.
    let settle_start = Instant::now();
    let mut last = vec!["never listed".to_string()];
    while settle_start.elapsed() < cfg.settle {
        for r in replicas.iter_mut() {
            r.check_alive(&mut report.exits);
        }
        if let Ok(objs) = list_ours(&api, &prefix).await {
            let mut stuck: Vec<String> = objs
                .iter()
                .filter_map(|o| {
                    incomplete(o).map(|why| {
                        format!("{}: {why}", o.metadata.name.clone().unwrap_or_default())
                    })
                })
                .collect();
            if objs.len() < created.len() {
                stuck.push(format!(
                    "{} of {} bindings exist",
                    objs.len(),
                    created.len()
                ));
            }
            last = stuck;
            if last.is_empty() {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    report.stuck = last;
    // A little longer: a stale writer that wakes late would show now.
    tokio::time::sleep(LEASE_DURATION).await;
    let objs = list_ours(&api, &prefix).await?;
    for o in &objs {
        if let Some(why) = incomplete(o) {
            let line = format!("{}: {why}", o.metadata.name.clone().unwrap_or_default());
            if !report.stuck.contains(&line) {
                report.stuck.push(format!("{line} (after settling)"));
            }
        }
    }
    report.simulate_mismatches = simulate_check(
        env,
        &cfg.simulate_bin,
        &format!("fencing-{}", cfg.pair),
        &objs,
    )
    .await?;
    recorders.iter().for_each(|r| r.abort());
    report.double_placements = double_placements(&history);

    // Stop both replicas before reading the audit log, so that it holds all they wrote.
    drop(replicas);
    let audit_path = env.state_dir().join("karmada-apiserver-audit.log");
    let text = std::fs::read_to_string(&audit_path)
        .with_context(|| format!("reading the audit log {}", audit_path.display()))?;
    let mut entries = parse_audit(&text);
    entries.retain(|e| e.received >= run_started);
    let (accepted, stale, changes) = stale_writes(&entries, &source_tags, &lease, LEASE_DURATION);
    report.writes = accepted;
    report.stale = stale;
    report.leader_changes = changes;
    for e in &entries {
        if let Some(tag) = source_tags.get(&e.source) {
            report
                .user_agents
                .entry(tag.clone())
                .or_default()
                .insert(e.user_agent.clone());
        }
    }

    delete_all(&api, &objs).await;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(received: &str, source: &str, verb: &str, resource: &str, code: u16) -> AuditEntry {
        let t = Timestamp::from_str(received).unwrap();
        AuditEntry {
            received: t,
            completed: t,
            source: source.into(),
            verb: verb.into(),
            resource: resource.into(),
            subresource: String::new(),
            namespace: "default".into(),
            name: "b".into(),
            code,
            holder: None,
            user_agent: String::new(),
        }
    }

    fn lease(at: &str, source: &str, holder: &str) -> AuditEntry {
        AuditEntry {
            name: "l".into(),
            holder: Some(holder.into()),
            ..entry(at, source, "update", "leases", 200)
        }
    }

    #[test]
    fn writes_are_judged_against_the_lease_as_the_server_saw_it() {
        let sources: HashMap<String, String> = [
            ("127.0.0.2".to_string(), "a".to_string()),
            ("127.0.0.3".to_string(), "b".to_string()),
        ]
        .into();
        let log = vec![
            lease("2026-01-01T00:00:00Z", "127.0.0.2", "id-a"),
            // a writes while leading: fine.
            entry(
                "2026-01-01T00:00:01Z",
                "127.0.0.2",
                "patch",
                "resourcebindings",
                200,
            ),
            // a renews no more; 5 s later (lease 4 s) it writes: stale, landed.
            entry(
                "2026-01-01T00:00:05Z",
                "127.0.0.2",
                "patch",
                "resourcebindings",
                200,
            ),
            lease("2026-01-01T00:00:06Z", "127.0.0.3", "id-b"),
            entry("2026-01-01T00:00:07Z", "127.0.0.3", "create", "events", 201),
            // a wakes and writes under b's lease: stale, refused.
            entry(
                "2026-01-01T00:00:08Z",
                "127.0.0.2",
                "patch",
                "resourcebindings",
                409,
            ),
            // Reads and others' writes are not judged.
            entry(
                "2026-01-01T00:00:08Z",
                "127.0.0.2",
                "get",
                "resourcebindings",
                200,
            ),
            entry(
                "2026-01-01T00:00:08Z",
                "127.0.0.1",
                "patch",
                "resourcebindings",
                200,
            ),
        ];
        let (accepted, stale, changes) = stale_writes(&log, &sources, "l", Duration::from_secs(4));
        assert_eq!(accepted["a"], 2);
        assert_eq!(accepted["b"], 1);
        assert_eq!(changes, 1);
        assert_eq!(stale.len(), 2, "{stale:#?}");
        assert_eq!(stale[0].code, 200);
        assert!(
            stale[0].why.contains("after its last renewal"),
            "{}",
            stale[0].why
        );
        assert_eq!(stale[1].code, 409);
        assert!(stale[1].why.contains("id-b"), "{}", stale[1].why);
    }

    #[test]
    fn parses_an_audit_line() {
        let line = r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Request","auditID":"x","stage":"ResponseComplete","requestURI":"/apis/coordination.k8s.io/v1/namespaces/karmada-system/leases/l","verb":"update","user":{"username":"admin"},"userAgent":"karmada-scheduler/v0.0.0 (linux/amd64) kubernetes/$Format","sourceIPs":["127.0.0.2"],"objectRef":{"resource":"leases","namespace":"karmada-system","name":"l","apiGroup":"coordination.k8s.io","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestObject":{"spec":{"holderIdentity":"h_1"}},"requestReceivedTimestamp":"2026-12-01T21:00:00.123456Z","stageTimestamp":"2026-12-01T21:00:00.125000Z"}"#;
        let e = parse_audit(&format!("{line}\nnot json\n"));
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].holder.as_deref(), Some("h_1"));
        assert_eq!(e[0].source, "127.0.0.2");
        assert_eq!(e[0].code, 200);
        assert_eq!(
            e[0].user_agent,
            "karmada-scheduler/v0.0.0 (linux/amd64) kubernetes/$Format"
        );
    }
}
