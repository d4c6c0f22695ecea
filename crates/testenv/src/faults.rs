//! A seeded fault scenario on the real control plane, shared by the fault suite
//! (`crates/scheduler/tests/e2e_faults.rs`) and the bench's fault row.
//!
//! One run drives one scheduler process (ours or the Go reference) through a
//! [`FaultProxy`] to the Karmada API server while a stream of bindings of every
//! replica strategy (ResourceBindings, and ClusterResourceBindings of Namespaces) is
//! created and scaled, and:
//! - the API server is SIGKILLed and restarted, and SIGSTOPped then SIGCONTed,
//!   at seeded moments;
//! - the proxy cuts connections mid-request, drops responses after forwarding
//!   the request, and delays responses;
//! - finally the scheduler itself is SIGKILLed while a binding is between its
//!   spec and status writes (the proxy holds the answer to the spec write back),
//!   and a new process is started.
//!
//! Afterwards every binding is checked: a `Scheduled=True` condition, a
//! `schedulerObservedGeneration` equal to its generation, and a `spec.clusters`
//! equal to what `simulate` gives for the final objects. A watch (not through
//! the proxy) records every version of every binding: no generation may carry
//! two different placements. The [`FaultReport`] says what was stuck, what
//! was half-written when the scheduler was killed, and whether the daemon ever
//! exited on its own.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use futures::StreamExt as _;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher;
use serde_json::{Value, json};

use crate::faultproxy::{FaultProxy, Policy, SplitMix64};
use crate::{GoProcess, TestEnv, free_port};

/// Namespace of the scenario's bindings.
pub const NAMESPACE: &str = "default";

/// Which scheduler a run drives.
#[derive(Clone, Debug)]
pub struct SchedulerUnderTest {
    /// `rust` or `go`: names its bindings, its logs and its Lease.
    pub tag: String,
    /// The binary (`karmada-scheduler` of either implementation).
    pub program: PathBuf,
    /// Flags beyond those the run sets (`--kubeconfig`, `--scheduler-name`, leader election,
    /// metrics and health addresses).
    pub extra_args: Vec<String>,
}

/// The size and the seed of a run.
#[derive(Clone, Debug)]
pub struct FaultConfig {
    pub seed: u64,
    /// Bindings created during the stream (spread over the strategies).
    pub bindings: usize,
    /// How long the stream of creations lasts.
    pub stream: Duration,
    /// API server SIGKILL + restart cycles during the stream.
    pub apiserver_kills: usize,
    /// API server SIGSTOP + SIGCONT cycles during the stream.
    pub apiserver_pauses: usize,
    /// Proxy chaos (cuts, dropped and delayed responses) during the stream.
    pub proxy_chaos: bool,
    /// Kill the scheduler between its two writes at the end, and start a new one.
    pub kill_scheduler: bool,
    /// How long after the last fault every binding must be complete.
    pub settle: Duration,
    /// Our `karmada-scheduler` binary, for `simulate`.
    pub simulate_bin: PathBuf,
}

/// What a run found.
#[derive(Clone, Debug, Default)]
pub struct FaultReport {
    pub tag: String,
    pub seed: u64,
    pub bindings: usize,
    pub apiserver_kills: usize,
    pub apiserver_pauses: usize,
    /// Faults the proxy injected.
    pub proxy: crate::faultproxy::Stats,
    /// Bindings found between their two writes when the scheduler was killed.
    pub half_written_at_kill: Vec<String>,
    /// Bindings not complete `settle` after the last fault, with what is missing.
    pub stuck: Vec<String>,
    /// `spec.clusters` different from `simulate`'s for the final objects.
    pub simulate_mismatches: Vec<String>,
    /// A generation seen with two different placements.
    pub double_placements: Vec<String>,
    /// The scheduler exited without being killed by the run.
    pub exits: Vec<String>,
    /// From the last fault until every binding was complete (`None`: not within `settle`).
    pub recovered_after: Option<Duration>,
}

impl FaultReport {
    /// Whether nothing was lost.
    pub fn clean(&self) -> bool {
        self.stuck.is_empty()
            && self.simulate_mismatches.is_empty()
            && self.double_placements.is_empty()
            && self.exits.is_empty()
    }

    /// A few lines for the test log and the bench report.
    pub fn summary(&self) -> String {
        let list = |v: &[String]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                format!("{} ({})", v.len(), v.join("; "))
            }
        };
        format!(
            "[{tag}] seed {seed}: {n} bindings, {k} API server kills, {p} pauses, proxy {proxy:?}\n\
             [{tag}]   half-written when the scheduler was killed: {half}\n\
             [{tag}]   stuck: {stuck}\n\
             [{tag}]   placement differs from simulate: {sim}\n\
             [{tag}]   generations with two placements: {dbl}\n\
             [{tag}]   scheduler exits: {exits}\n\
             [{tag}]   all complete after the last fault: {rec}",
            tag = self.tag,
            seed = self.seed,
            n = self.bindings,
            k = self.apiserver_kills,
            p = self.apiserver_pauses,
            proxy = self.proxy,
            half = list(&self.half_written_at_kill),
            stuck = list(&self.stuck),
            sim = list(&self.simulate_mismatches),
            dbl = list(&self.double_placements),
            exits = list(&self.exits),
            rec =
                self.recovered_after
                    .map_or("not within the settle time".to_string(), |d| format!(
                        "{:.1}s",
                        d.as_secs_f64()
                    )),
        )
    }
}

/// A seeded duration in `[lo, hi]`.
pub(crate) fn between(rng: &mut SplitMix64, lo: Duration, hi: Duration) -> Duration {
    let span = hi.saturating_sub(lo).as_millis() as u64;
    lo + Duration::from_millis(rng.below(span + 1))
}

/// The placements of the stream, one per replica strategy (and a non-workload).
pub(crate) fn placement(strategy: usize) -> (bool, Value) {
    let names = json!({"clusterNames": ["member1", "member2"]});
    match strategy {
        0 => (
            true,
            json!({"clusterAffinity": names, "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}),
        ),
        1 => (
            true,
            json!({"clusterAffinity": names, "replicaScheduling": {
                "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                "weightPreference": {"staticWeightList": [
                    {"targetCluster": {"clusterNames": ["member1"]}, "weight": 1},
                    {"targetCluster": {"clusterNames": ["member2"]}, "weight": 2}]}}}),
        ),
        2 => (
            true,
            json!({"clusterAffinity": names, "replicaScheduling": {
                "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}),
        ),
        3 => (
            true,
            json!({"clusterAffinity": names, "replicaScheduling": {
                "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}),
        ),
        _ => (false, json!({"clusterAffinity": names})),
    }
}

/// Strategies of the stream: the five of [`placement`] on ResourceBindings, and a
/// ClusterResourceBinding of a Namespace.
pub(crate) const STRATEGIES: u64 = 6;
pub(crate) const CLUSTER_SCOPED: usize = 5;

/// A labelled binding of the stream.
pub(crate) fn binding(name: &str, scheduler: &str, strategy: usize, replicas: i32) -> Value {
    let (workload, placement) = placement(strategy);
    if strategy == CLUSTER_SCOPED {
        return json!({
            "apiVersion": "work.karmada.io/v1alpha2",
            "kind": "ClusterResourceBinding",
            "metadata": {"name": name,
                         "labels": {"clusterpropagationpolicy.karmada.io/permanent-id": format!("{name}-id")}},
            "spec": {"resource": {"apiVersion": "v1", "kind": "Namespace", "name": name,
                                  "uid": format!("{name}-uid")},
                     "schedulerName": scheduler, "placement": placement},
        });
    }
    let resource = if workload {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": NAMESPACE,
               "name": name, "uid": format!("{name}-uid")})
    } else {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "namespace": NAMESPACE,
               "name": name, "uid": format!("{name}-uid")})
    };
    let mut spec =
        json!({"resource": resource, "schedulerName": scheduler, "placement": placement});
    if workload {
        spec["replicas"] = json!(replicas);
        spec["replicaRequirements"] = json!({"resourceRequest": {"cpu": "100m", "memory": "64Mi"}});
    }
    json!({
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": name, "namespace": NAMESPACE,
                     "labels": {"propagationpolicy.karmada.io/permanent-id": format!("{name}-id")}},
        "spec": spec,
    })
}

fn binding_resource(kind: &str) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk("work.karmada.io", "v1alpha2", kind))
}

/// Both binding kinds of the API server.
#[derive(Clone)]
pub(crate) struct Bindings {
    pub(crate) rb: Api<DynamicObject>,
    pub(crate) crb: Api<DynamicObject>,
}

impl Bindings {
    pub(crate) fn new(client: &kube::Client) -> Self {
        Self {
            rb: Api::namespaced_with(
                client.clone(),
                NAMESPACE,
                &binding_resource("ResourceBinding"),
            ),
            crb: Api::all_with(client.clone(), &binding_resource("ClusterResourceBinding")),
        }
    }

    pub(crate) fn of(&self, kind: &str) -> &Api<DynamicObject> {
        if kind == "ClusterResourceBinding" {
            &self.crb
        } else {
            &self.rb
        }
    }
}

/// The Karmada API server of an environment, to kill, stop and restart.
pub struct ApiServer<'e> {
    env: &'e TestEnv,
    program: PathBuf,
    args: Vec<String>,
    /// The process started by the last restart (the first one belongs to the environment).
    current: Option<GoProcess>,
    pid: u32,
    restarts: usize,
    /// Names the restarted processes' logs and pid files.
    tag: String,
}

/// Send `sig` (`KILL`, `STOP`, `CONT`, ...) to a process.
pub fn signal(pid: u32, sig: &str) {
    let _ = Command::new("kill")
        .args([format!("-{sig}"), pid.to_string()])
        .status();
}

/// The program and arguments of a running process.
pub fn command_line(pid: u32) -> anyhow::Result<(PathBuf, Vec<String>)> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline"))
        .with_context(|| format!("reading the command line of pid {pid}"))?;
    let mut parts: Vec<String> = raw
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect();
    if parts.is_empty() {
        bail!("pid {pid} has no command line");
    }
    let program = PathBuf::from(parts.remove(0));
    Ok((program, parts))
}

/// A member's estimator, killed by [`StoppedEstimator::kill`]: what it takes to start it again
/// somewhere else.
pub struct StoppedEstimator {
    member: String,
    program: PathBuf,
    args: Vec<String>,
}

/// Replace the value of `flag` (`--flag v` or `--flag=v`) in `args`.
fn set_flag(args: &mut [String], flag: &str, value: &str) {
    for i in 0..args.len() {
        if args[i] == flag && i + 1 < args.len() {
            args[i + 1] = value.to_string();
        } else if args[i].starts_with(&format!("{flag}=")) {
            args[i] = format!("{flag}={value}");
        }
    }
}

impl StoppedEstimator {
    /// SIGKILL `member`'s estimator (the one the environment started).
    pub fn kill(env: &TestEnv, member: &str) -> anyhow::Result<Self> {
        let info = env
            .member(member)
            .with_context(|| format!("no member {member}"))?;
        let (program, args) = command_line(info.estimator_pid)?;
        signal(info.estimator_pid, "KILL");
        Ok(Self {
            member: member.to_string(),
            program,
            args,
        })
    }

    /// Start it again on a new port, as when a VIP moves to another backend, and point only
    /// the `targetPort` of its `ExternalName` Service at it. Returns the process and the port.
    pub async fn start_moved(mut self, env: &TestEnv) -> anyhow::Result<(GoProcess, u16)> {
        let port = free_port();
        set_flag(&mut self.args, "--server-port", &port.to_string());
        for flag in ["--health-probe-bind-address", "--metrics-bind-address"] {
            set_flag(&mut self.args, flag, &format!("127.0.0.1:{}", free_port()));
        }
        let name = format!("{}-estimator-moved-{port}", self.member);
        let process = env.spawn_process(&name, &self.program, &self.args)?;
        let services: Api<k8s_openapi::api::core::v1::Service> =
            Api::namespaced(env.client().await?, "karmada-system");
        let patch = json!({"spec": {"ports": [{"name": "grpc", "protocol": "TCP", "port": 10352, "targetPort": port}]}});
        services
            .patch(
                &format!("karmada-scheduler-estimator-{}", self.member),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await?;
        Ok((process, port))
    }
}

impl<'e> ApiServer<'e> {
    /// The live Karmada API server of `env`: the environment's, or one an earlier run restarted.
    pub fn new(env: &'e TestEnv, tag: &str) -> anyhow::Result<Self> {
        let pids = env.state_dir().join("pids");
        let mut live = None;
        for entry in std::fs::read_dir(&pids).context("reading the pid files")? {
            let path = entry?.path();
            let file = path
                .file_name()
                .and_then(|f| f.to_str())
                .unwrap_or_default();
            if !file.starts_with("karmada-apiserver") {
                continue;
            }
            let Ok(pid) = std::fs::read_to_string(&path)?.trim().parse::<u32>() else {
                continue;
            };
            if let Ok(cmd) = command_line(pid) {
                live = Some((pid, cmd));
            }
        }
        let Some((pid, (program, parts))) = live else {
            bail!("no running Karmada API server in {}", pids.display());
        };
        Ok(Self {
            env,
            program,
            args: parts,
            current: None,
            pid,
            restarts: 0,
            tag: tag.to_string(),
        })
    }

    /// SIGKILL, wait `down`, start it again on the same port and etcd data.
    pub async fn kill_and_restart(&mut self, down: Duration) -> anyhow::Result<()> {
        signal(self.pid, "KILL");
        if let Some(mut p) = self.current.take() {
            p.kill();
        }
        tokio::time::sleep(down).await;
        // A restart can fail to bind while the old sockets close; try again until it serves.
        for _ in 0..5 {
            self.restarts += 1;
            let name = format!("karmada-apiserver-{}-restart-{}", self.tag, self.restarts);
            let mut p = self.env.spawn_process(&name, &self.program, &self.args)?;
            self.pid = p.pid();
            let port = self.env.info().karmada_apiserver_port;
            let until = Instant::now() + Duration::from_secs(30);
            let mut serving = false;
            while Instant::now() < until {
                if p.try_wait()?.is_some() {
                    break;
                }
                if tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .is_ok()
                {
                    serving = true;
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            self.current = Some(p);
            if serving {
                return Ok(());
            }
            if let Some(mut p) = self.current.take() {
                p.kill();
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        bail!("the Karmada API server did not come back after 5 starts")
    }

    /// SIGSTOP for `hung`, then SIGCONT: a hung server that still accepts connections.
    pub async fn pause(&mut self, hung: Duration) {
        signal(self.pid, "STOP");
        tokio::time::sleep(hung).await;
        signal(self.pid, "CONT");
    }
}

impl Drop for ApiServer<'_> {
    fn drop(&mut self) {
        // Never leave it stopped.
        signal(self.pid, "CONT");
        // A restarted API server is handed over to the environment's teardown, which finds
        // it by its pid file; later tests in the same environment keep using it.
        if let Some(p) = self.current.take() {
            std::mem::forget(p);
        }
    }
}

/// A kubeconfig like the environment's, whose server is the proxy.
pub(crate) fn proxied_kubeconfig(
    env: &TestEnv,
    proxy: SocketAddr,
    tag: &str,
) -> anyhow::Result<PathBuf> {
    let text = std::fs::read_to_string(env.kubeconfig())?;
    let mut kc: serde_yaml::Value = serde_yaml::from_str(&text)?;
    if let Some(clusters) = kc.get_mut("clusters").and_then(|c| c.as_sequence_mut()) {
        for c in clusters {
            if let Some(cluster) = c.get_mut("cluster").and_then(|c| c.as_mapping_mut()) {
                cluster.insert("server".into(), format!("https://{proxy}").into());
            }
        }
    }
    let path = env.state_dir().join(format!("kubeconfig-proxied-{tag}"));
    std::fs::write(&path, serde_yaml::to_string(&kc)?)?;
    Ok(path)
}

/// The scheduler process of a run (restarted once when the run kills it).
struct Daemon<'e> {
    env: &'e TestEnv,
    sut: SchedulerUnderTest,
    kubeconfig: PathBuf,
    proc: GoProcess,
    starts: usize,
}

impl<'e> Daemon<'e> {
    fn start(
        env: &'e TestEnv,
        sut: SchedulerUnderTest,
        kubeconfig: PathBuf,
    ) -> anyhow::Result<Self> {
        let proc = Self::spawn(env, &sut, &kubeconfig, 0)?;
        Ok(Self {
            env,
            sut,
            kubeconfig,
            proc,
            starts: 1,
        })
    }

    fn spawn(
        env: &TestEnv,
        sut: &SchedulerUnderTest,
        kubeconfig: &Path,
        n: usize,
    ) -> anyhow::Result<GoProcess> {
        let mut args = vec![
            format!("--kubeconfig={}", kubeconfig.display()),
            format!("--scheduler-name={}", scheduler_name(&sut.tag)),
            "--leader-elect=true".to_string(),
            format!("--leader-elect-resource-name=faults-{}", sut.tag),
            format!("--metrics-bind-address=127.0.0.1:{}", free_port()),
            format!("--health-probe-bind-address=127.0.0.1:{}", free_port()),
        ];
        args.extend(sut.extra_args.iter().cloned());
        env.spawn_process(&format!("faults-{}-{n}", sut.tag), &sut.program, &args)
    }

    /// Record an exit the run did not cause.
    fn check_alive(&mut self, exits: &mut Vec<String>) {
        if let Ok(Some(status)) = self.proc.try_wait() {
            exits.push(format!(
                "{} exited ({status}): {}",
                self.proc.name(),
                self.proc.log_tail(5).replace('\n', " | ")
            ));
            // Keep the scenario going with a new process, as a supervisor would.
            if let Ok(p) = Self::spawn(self.env, &self.sut, &self.kubeconfig, self.starts) {
                self.starts += 1;
                self.proc = p;
            }
        }
    }

    /// SIGKILL the process and start a new one.
    fn kill_and_restart(&mut self) -> anyhow::Result<()> {
        self.proc.kill();
        self.proc = Self::spawn(self.env, &self.sut, &self.kubeconfig, self.starts)?;
        self.starts += 1;
        Ok(())
    }
}

fn scheduler_name(tag: &str) -> String {
    format!("faults-{tag}")
}

/// The generations the watch saw with more than one placement, sorted.
pub(crate) fn double_placements(history: &History) -> Vec<String> {
    let seen = history.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut doubles: Vec<String> = seen
        .into_iter()
        .filter(|(_, placements)| placements.len() > 1)
        .map(|((name, generation), placements)| {
            format!(
                "{name} generation {generation}: {}",
                placements.into_iter().collect::<Vec<_>>().join(" / ")
            )
        })
        .collect();
    doubles.sort();
    doubles
}

/// Delete a run's bindings (best effort), so the next run starts clean.
pub(crate) async fn delete_all(api: &Bindings, objs: &[DynamicObject]) {
    for o in objs {
        if let (Some(name), Some(types)) = (&o.metadata.name, &o.types) {
            let _ = api.of(&types.kind).delete(name, &Default::default()).await;
        }
    }
}

/// What the run's own watch saw: per binding and generation, the placements written.
pub(crate) type History = Arc<Mutex<HashMap<(String, i64), BTreeSet<String>>>>;

/// Watch the bindings of both kinds directly (not through the proxy), recording every version.
pub(crate) fn record_history(
    bindings: &Bindings,
    prefix: String,
) -> (History, Vec<tokio::task::JoinHandle<()>>) {
    let history: History = Arc::default();
    let tasks = [bindings.rb.clone(), bindings.crb.clone()]
        .into_iter()
        .map(|api| record_kind(api, prefix.clone(), history.clone()))
        .collect();
    (history, tasks)
}

fn record_kind(api: Api<DynamicObject>, prefix: String, h: History) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let stream = watcher::watcher(api, watcher::Config::default())
            .default_backoff()
            .applied_objects();
        futures::pin_mut!(stream);
        while let Some(item) = stream.next().await {
            let Ok(o) = item else { continue };
            let name = o.metadata.name.clone().unwrap_or_default();
            if !name.starts_with(&prefix) {
                continue;
            }
            let generation = o.metadata.generation.unwrap_or_default();
            let clusters = canonical_clusters(o.data.pointer("/spec/clusters"));
            h.lock()
                .unwrap_or_else(|p| p.into_inner())
                .entry((name, generation))
                .or_default()
                .insert(clusters);
        }
    })
}

/// `spec.clusters` as `name:replicas` sorted by name (the order is not part of the check).
pub(crate) fn canonical_clusters(v: Option<&Value>) -> String {
    let mut entries: Vec<String> = v
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|c| {
                    format!(
                        "{}:{}",
                        c["name"].as_str().unwrap_or_default(),
                        c["replicas"].as_i64().unwrap_or(0)
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    entries.sort();
    entries.join(",")
}

/// Create (or, after a lost answer, find) a binding; retried while the API server is away.
pub(crate) async fn create(
    bindings: &Bindings,
    obj: &Value,
    deadline: Instant,
) -> anyhow::Result<()> {
    let api = bindings.of(obj["kind"].as_str().unwrap_or_default());
    let o: DynamicObject = serde_json::from_value(obj.clone())?;
    loop {
        match tokio::time::timeout(
            Duration::from_secs(5),
            api.create(&PostParams::default(), &o),
        )
        .await
        {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(kube::Error::Api(s))) if s.code == 409 => return Ok(()),
            Ok(Err(kube::Error::Api(s))) if s.code < 500 && s.code != 429 => {
                bail!("creating {:?}: {}", o.metadata.name, s.message)
            }
            _ if Instant::now() > deadline => {
                bail!("creating {:?}: API server away", o.metadata.name)
            }
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// Set `spec.replicas` of a binding; retried while the API server is away.
pub(crate) async fn scale(
    api: &Api<DynamicObject>,
    name: &str,
    replicas: i32,
    deadline: Instant,
) -> anyhow::Result<()> {
    let patch = json!({"spec": {"replicas": replicas}});
    loop {
        match tokio::time::timeout(
            Duration::from_secs(5),
            api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)),
        )
        .await
        {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(kube::Error::Api(s))) if s.code < 500 && s.code != 429 => {
                bail!("scaling {name}: {}", s.message)
            }
            _ if Instant::now() > deadline => bail!("scaling {name}: API server away"),
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// `status.schedulerObservedGeneration`, 0 when absent.
pub(crate) fn observed_generation(o: &DynamicObject) -> i64 {
    o.data
        .pointer("/status/schedulerObservedGeneration")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// Why a binding is not complete, or `None` when it is.
pub(crate) fn incomplete(o: &DynamicObject) -> Option<String> {
    let generation = o.metadata.generation.unwrap_or_default();
    let observed = observed_generation(o);
    let condition = o
        .data
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|a| a.iter().find(|c| c["type"] == "Scheduled"));
    let clusters = o
        .data
        .pointer("/spec/clusters")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let mut missing = Vec::new();
    match condition {
        None => missing.push("no Scheduled condition".to_string()),
        Some(c) if c["status"] != "True" => missing.push(format!(
            "Scheduled={} ({})",
            c["status"].as_str().unwrap_or_default(),
            c["message"].as_str().unwrap_or_default()
        )),
        Some(_) => {}
    }
    if observed != generation {
        missing.push(format!("observed generation {observed} of {generation}"));
    }
    if clusters == 0 {
        missing.push("no clusters".into());
    }
    if let Some(want) = o.data.pointer("/spec/replicas").and_then(Value::as_i64) {
        let divided = o
            .data
            .pointer("/spec/placement/replicaScheduling/replicaSchedulingType")
            .and_then(Value::as_str)
            == Some("Divided");
        let sum: i64 = o
            .data
            .pointer("/spec/clusters")
            .and_then(Value::as_array)
            .map_or(0, |a| {
                a.iter().map(|c| c["replicas"].as_i64().unwrap_or(0)).sum()
            });
        if divided && sum != want {
            missing.push(format!("{sum} of {want} replicas placed"));
        }
    }
    (!missing.is_empty()).then(|| missing.join(", "))
}

/// The run's bindings of both kinds as the API server has them now.
pub(crate) async fn list_ours(
    bindings: &Bindings,
    prefix: &str,
) -> anyhow::Result<Vec<DynamicObject>> {
    let mut out = Vec::new();
    for (api, kind) in [
        (&bindings.rb, "ResourceBinding"),
        (&bindings.crb, "ClusterResourceBinding"),
    ] {
        for mut o in api.list(&ListParams::default()).await?.items {
            if !o
                .metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with(prefix))
            {
                continue;
            }
            // List items may come without their kind; simulate and the clean-up need it.
            o.types = Some(kube::core::TypeMeta {
                api_version: "work.karmada.io/v1alpha2".into(),
                kind: kind.into(),
            });
            out.push(o);
        }
    }
    Ok(out)
}

/// Bindings between their two writes: a placement written for the current generation
/// and no status for it.
fn half_written(objs: &[DynamicObject]) -> Vec<String> {
    objs.iter()
        .filter(|o| {
            let observed = observed_generation(o);
            let placed = o
                .data
                .pointer("/spec/clusters")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty());
            placed && observed != o.metadata.generation.unwrap_or_default()
        })
        .filter_map(|o| o.metadata.name.clone())
        .collect()
}

/// Wait until every binding is complete (or `settle` passes); the incomplete ones.
async fn settle(
    api: &Bindings,
    prefix: &str,
    expected: usize,
    settle: Duration,
    daemon: &mut Daemon<'_>,
    exits: &mut Vec<String>,
) -> (Vec<String>, Option<Duration>) {
    let start = Instant::now();
    let mut last = vec!["never listed".to_string()];
    while start.elapsed() < settle {
        daemon.check_alive(exits);
        if let Ok(objs) = list_ours(api, prefix).await {
            let mut stuck: Vec<String> = objs
                .iter()
                .filter_map(|o| {
                    incomplete(o).map(|why| {
                        format!("{}: {why}", o.metadata.name.clone().unwrap_or_default())
                    })
                })
                .collect();
            if objs.len() < expected {
                stuck.push(format!("{} of {expected} bindings exist", objs.len()));
            }
            if stuck.is_empty() {
                return (Vec::new(), Some(start.elapsed()));
            }
            last = stuck;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    (last, None)
}

/// Compare the final placements with `simulate` over the final objects.
pub(crate) async fn simulate_check(
    env: &TestEnv,
    simulate_bin: &Path,
    tag: &str,
    objs: &[DynamicObject],
) -> anyhow::Result<Vec<String>> {
    let clusters: Api<DynamicObject> = Api::all_with(
        env.client().await?,
        &ApiResource::from_gvk(&GroupVersionKind::gvk(
            "cluster.karmada.io",
            "v1alpha1",
            "Cluster",
        )),
    );
    let dir = env.state_dir().join(format!("faults-simulate-{tag}"));
    std::fs::create_dir_all(&dir)?;
    let strip = |o: &DynamicObject| {
        let mut v = serde_json::to_value(o).unwrap_or(Value::Null);
        if let Some(m) = v.pointer_mut("/metadata").and_then(Value::as_object_mut) {
            m.remove("managedFields");
        }
        v
    };
    let cluster_docs: Vec<Value> = clusters
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .map(strip)
        .collect();
    let binding_docs: Vec<Value> = objs.iter().map(strip).collect();
    // One document per object (JSON is YAML), as simulate reads them.
    let stream = |docs: &[Value]| {
        docs.iter()
            .map(|d| format!("---\n{d}\n"))
            .collect::<String>()
    };
    let cpath = dir.join("clusters.yaml");
    let bpath = dir.join("bindings.yaml");
    std::fs::write(&cpath, stream(&cluster_docs))?;
    std::fs::write(&bpath, stream(&binding_docs))?;
    let out = Command::new(simulate_bin)
        .arg("simulate")
        .arg("-f")
        .arg(&cpath)
        .arg("-f")
        .arg(&bpath)
        .args(["-o", "json"])
        .output()
        .with_context(|| format!("running {} simulate", simulate_bin.display()))?;
    if !out.status.success() {
        bail!("simulate failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let results: Vec<Value> = serde_json::from_slice(&out.stdout)?;
    let want: BTreeMap<String, String> = results
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap_or_default().to_string(),
                canonical_clusters(r.get("clusters")),
            )
        })
        .collect();
    let mut mismatches = Vec::new();
    for o in objs {
        let name = o.metadata.name.clone().unwrap_or_default();
        let have = canonical_clusters(o.data.pointer("/spec/clusters"));
        match want.get(&name) {
            Some(w) if *w == have => {}
            Some(w) => mismatches.push(format!("{name}: written [{have}], simulate [{w}]")),
            None => mismatches.push(format!("{name}: not in simulate's output")),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(mismatches)
}

/// One fault scenario against one scheduler; see the module doc.
pub async fn run(
    env: &TestEnv,
    cfg: &FaultConfig,
    sut: SchedulerUnderTest,
) -> anyhow::Result<FaultReport> {
    let tag = sut.tag.clone();
    let prefix = format!("f{}-{tag}-", cfg.seed);
    let mut rng = SplitMix64(cfg.seed ^ 0x5eed);
    let upstream: SocketAddr =
        format!("127.0.0.1:{}", env.info().karmada_apiserver_port).parse()?;
    let proxy = FaultProxy::start(upstream, cfg.seed).await?;
    let kubeconfig = proxied_kubeconfig(env, proxy.local_addr(), &tag)?;
    let client = env.client().await?;
    let api = Bindings::new(&client);
    let (history, recorders) = record_history(&api, prefix.clone());
    let mut report = FaultReport {
        tag: tag.clone(),
        seed: cfg.seed,
        bindings: cfg.bindings,
        ..Default::default()
    };
    let mut daemon = Daemon::start(env, sut.clone(), kubeconfig)?;
    let mut apiserver = ApiServer::new(env, &tag)?;

    // The timeline: creations spread evenly over the stream, faults at seeded moments.
    #[derive(Debug)]
    enum Step {
        Create(usize),
        Kill(Duration),
        Pause(Duration),
        Chaos(bool),
    }
    let mut timeline: Vec<(Duration, Step)> = Vec::new();
    let n = cfg.bindings.max(1);
    for i in 0..cfg.bindings {
        timeline.push((cfg.stream * i as u32 / n as u32, Step::Create(i)));
    }
    let stream_ms = cfg.stream.as_millis() as u64;
    // Seeded moments in the stream, each with how long the fault lasts.
    let mut moments = |n: usize, lo: Duration, hi: Duration| -> Vec<(Duration, Duration)> {
        (0..n)
            .map(|_| {
                let at = Duration::from_millis(rng.below(stream_ms));
                (at, between(&mut rng, lo, hi))
            })
            .collect()
    };
    let kills = moments(
        cfg.apiserver_kills,
        Duration::from_millis(500),
        Duration::from_secs(3),
    );
    let pauses = moments(
        cfg.apiserver_pauses,
        Duration::from_secs(1),
        Duration::from_secs(4),
    );
    timeline.extend(kills.into_iter().map(|(at, d)| (at, Step::Kill(d))));
    timeline.extend(pauses.into_iter().map(|(at, d)| (at, Step::Pause(d))));
    if cfg.proxy_chaos {
        timeline.push((Duration::ZERO, Step::Chaos(true)));
        timeline.push((cfg.stream, Step::Chaos(false)));
    }
    timeline.sort_by_key(|(at, _)| *at);

    let start = Instant::now();
    let deadline = start + cfg.stream + Duration::from_secs(120);
    let mut created: Vec<(String, usize)> = Vec::new();
    for (at, step) in timeline {
        if let Some(wait) = at.checked_sub(start.elapsed()) {
            tokio::time::sleep(wait).await;
        }
        daemon.check_alive(&mut report.exits);
        match step {
            Step::Create(i) => {
                let strategy = rng.below(STRATEGIES) as usize;
                let name = format!("{prefix}{i:03}");
                let replicas = 1 + rng.below(6) as i32;
                create(
                    &api,
                    &binding(&name, &scheduler_name(&tag), strategy, replicas),
                    deadline,
                )
                .await?;
                created.push((name, strategy));
                // Now and then scale an earlier workload: the ScaleSchedule path under faults.
                if i % 4 == 3 {
                    let (old, s) = created[rng.below(created.len() as u64) as usize].clone();
                    if s != CLUSTER_SCOPED && placement(s).0 {
                        scale(&api.rb, &old, 1 + rng.below(8) as i32, deadline).await?;
                    }
                }
            }
            Step::Kill(down) => {
                apiserver.kill_and_restart(down).await?;
                report.apiserver_kills += 1;
            }
            Step::Pause(hung) => {
                apiserver.pause(hung).await;
                report.apiserver_pauses += 1;
            }
            Step::Chaos(on) => proxy.set_policy(if on {
                Policy {
                    cut_mid_request: 0.02,
                    drop_response: 0.05,
                    response_delay: Duration::ZERO..Duration::from_millis(30),
                    refuse: false,
                }
            } else {
                Policy::default()
            }),
        }
    }
    let mut expected = created.len();

    if cfg.kill_scheduler {
        // Let the stream finish first, so that what is half-written is the next binding's.
        let _ = settle(
            &api,
            &prefix,
            expected,
            cfg.settle,
            &mut daemon,
            &mut report.exits,
        )
        .await;
        // Hold every answer back: the spec write lands, its answer waits, and the status
        // write is not sent yet when the scheduler dies.
        proxy.set_policy(Policy {
            response_delay: Duration::from_secs(3)..Duration::from_secs(3),
            ..Policy::default()
        });
        let base = created.len();
        for j in 0..4 {
            let name = format!("{prefix}k{j}");
            // Divided bindings: the reference's ladder does not schedule them again once their
            // placement is applied.
            create(
                &api,
                &binding(&name, &scheduler_name(&tag), 1 + j % 3, 3),
                deadline,
            )
            .await?;
            created.push((name, 1 + j % 3));
        }
        expected = created.len();
        let watch_until = Instant::now() + Duration::from_secs(60);
        let mut found = Vec::new();
        while Instant::now() < watch_until {
            let objs = list_ours(&api, &format!("{prefix}k"))
                .await
                .unwrap_or_default();
            found = half_written(&objs);
            if !found.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        daemon.kill_and_restart()?;
        // Read again after the kill: what the new process inherits.
        let objs = list_ours(&api, &format!("{prefix}k"))
            .await
            .unwrap_or_default();
        report.half_written_at_kill = half_written(&objs);
        if found.is_empty() {
            report.stuck.push(format!(
                "no binding of {base}.. was seen between its writes before the kill (the scenario did not hit the window)"
            ));
        }
        proxy.set_policy(Policy::default());
    }

    let (stuck, recovered) = settle(
        &api,
        &prefix,
        expected,
        cfg.settle,
        &mut daemon,
        &mut report.exits,
    )
    .await;
    report.stuck.extend(stuck);
    report.recovered_after = recovered;
    report.proxy = proxy.stats();
    daemon.check_alive(&mut report.exits);

    let objs = list_ours(&api, &prefix).await?;
    report.simulate_mismatches = simulate_check(env, &cfg.simulate_bin, &tag, &objs).await?;
    recorders.iter().for_each(|r| r.abort());
    report.double_placements = double_placements(&history);

    // Stop the scheduler cleanly and remove its bindings, so the next run starts clean.
    drop(daemon);
    delete_all(&api, &objs).await;
    if report.recovered_after.is_none() && report.stuck.is_empty() {
        return Err(anyhow!(
            "inconsistent report: not recovered but nothing stuck"
        ));
    }
    Ok(report)
}
