//! A real, local Karmada control plane for end-to-end tests.
//!
//! [`TestEnv`] starts, through `hack/local-up.sh`, an etcd, a Karmada
//! kube-apiserver (Karmada CRDs + the project's `Cluster` CRD, namespace
//! `karmada-system`) and N member clusters (a kube-apiserver each with fake
//! Ready nodes and Running pods, plus one real Go `karmada-scheduler-estimator`
//! per member), with a `Cluster` object and an ExternalName estimator Service
//! per member. Every environment has its own temporary state dir and its own
//! free loopback ports; everything listens on 127.0.0.1 only. Dropping the
//! [`TestEnv`] stops all processes (`hack/local-down.sh`); if the test process
//! dies without running destructors, a watcher started by the script tears the
//! environment down within a second.
//!
//! The Go binaries are built by `hack/build-tools.sh` into `_output/bin`.
//! Tests call [`tools_or_skip`] first:
//!
//! ```no_run
//! # async fn t() -> anyhow::Result<()> {
//! let Some(tools) = testenv::tools_or_skip("my_e2e_test") else { return Ok(()) };
//! let env = testenv::TestEnv::builder().tools(tools).members(2).start().await?;
//! let client = env.client().await?;
//! env.apply_yaml("apiVersion: v1\nkind: Namespace\nmetadata: {name: demo}\n").await?;
//! # let _ = client; Ok(()) }
//! ```
//!
//! When the binaries are missing, [`tools_or_skip`] prints why and returns
//! `None` (the test passes as skipped) — unless `KARMADA_E2E` is set, in which
//! case it builds them and panics if that fails.

use std::fmt;
use std::fs;
use std::io::Read as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::GroupVersionKind;
use kube::discovery::{Scope, pinned_kind};
use kube::{Client, Config};
use serde::Deserialize;
use serde_json::Value;

pub mod churn;
pub mod estimator;
pub mod faultproxy;
pub mod faults;
pub mod fencing;
pub mod fixtures;
pub mod helm;
pub mod help;
pub mod hostcluster;
pub mod inputs;
pub mod overcommit;
pub mod pki;
pub mod podman;
pub mod rbac;
pub mod rng;
pub mod simulate;
pub mod units;
pub mod vm;
pub mod whole;
pub mod workload;

/// Environment variable that turns "skip when the Go binaries are absent" into
/// "build them, and fail if that is not possible".
pub const E2E_ENV: &str = "KARMADA_E2E";

/// Field manager used for server-side apply by [`apply_value`].
pub const FIELD_MANAGER: &str = "karmada-testenv";

/// Binaries `hack/build-tools.sh` provides.
pub const REQUIRED_BINARIES: &[&str] = &[
    "kube-apiserver",
    "etcd",
    "kubectl",
    "karmada-scheduler",
    "karmada-descheduler",
    "karmada-scheduler-estimator",
    "estimator-probe",
    "cluster-status",
];

/// True when `KARMADA_E2E` is set to something other than "", "0" or "false".
pub fn e2e_required() -> bool {
    std::env::var(E2E_ENV)
        .map(|v| !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"))
        .unwrap_or(false)
}

/// Whether this process runs as root (real uid 0).
pub fn is_root() -> bool {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .map(|u| u.split_whitespace().next() == Some("0"))
        })
        .unwrap_or(false)
}

/// The repository root (this crate lives in `crates/testenv`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/testenv has a repository root")
        .to_path_buf()
}

/// Why the Go tools are not usable.
#[derive(Debug)]
pub enum ToolsError {
    /// Not built, and building was not requested (`KARMADA_E2E` unset).
    Missing(String),
    /// `hack/build-tools.sh` failed.
    BuildFailed(String),
}

impl fmt::Display for ToolsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolsError::Missing(m) | ToolsError::BuildFailed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ToolsError {}

/// The located Go binaries (kube-apiserver, etcd, kubectl, the Go Karmada
/// scheduler and estimator, and the helper programs).
#[derive(Clone, Debug)]
pub struct Tools {
    root: PathBuf,
    bin_dir: PathBuf,
}

impl Tools {
    /// Locates the binaries in `$KARMADA_TOOLS_BIN` or `<repo>/_output/bin`.
    ///
    /// Up to date: returned as is. Present but built from other pinned
    /// versions: rebuilt (`hack/build-tools.sh`, incremental). Absent: built
    /// only when `KARMADA_E2E` is set, otherwise [`ToolsError::Missing`].
    /// The result is computed once per process.
    pub fn ensure() -> Result<Tools, ToolsError> {
        static TOOLS: OnceLock<Result<Tools, String>> = OnceLock::new();
        TOOLS
            .get_or_init(|| Self::ensure_uncached().map_err(|e| e.to_string()))
            .clone()
            .map_err(|e| {
                if e.starts_with(MISSING_PREFIX) {
                    ToolsError::Missing(e)
                } else {
                    ToolsError::BuildFailed(e)
                }
            })
    }

    fn ensure_uncached() -> Result<Tools, ToolsError> {
        let root = repo_root();
        let bin_dir = std::env::var_os("KARMADA_TOOLS_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("_output/bin"));
        let tools = Tools { root, bin_dir };
        let script = tools.root.join("hack/build-tools.sh");
        let up_to_date = Command::new(&script)
            .arg("--check")
            .env("KARMADA_TOOLS_BIN", &tools.bin_dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if up_to_date {
            return Ok(tools);
        }
        let all_present = REQUIRED_BINARIES
            .iter()
            .all(|b| tools.bin_dir.join(b).is_file());
        if !all_present && !e2e_required() {
            return Err(ToolsError::Missing(format!(
                "{MISSING_PREFIX} in {} (build them with `hack/build-tools.sh`, ~15-20 min the first time; \
                 set {E2E_ENV}=1 to build them automatically and fail instead of skipping)",
                tools.bin_dir.display()
            )));
        }
        eprintln!(
            "testenv: building the Go tools with {} (progress below)",
            script.display()
        );
        let status = Command::new(&script)
            .env("KARMADA_TOOLS_BIN", &tools.bin_dir)
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit())
            .status()
            .map_err(|e| {
                ToolsError::BuildFailed(format!("cannot run {}: {e}", script.display()))
            })?;
        if !status.success() {
            return Err(ToolsError::BuildFailed(format!(
                "{} failed ({status}); the Go binaries for the end-to-end tests could not be built",
                script.display()
            )));
        }
        Ok(tools)
    }

    /// Directory holding the binaries.
    pub fn bin_dir(&self) -> &Path {
        &self.bin_dir
    }

    /// Path of one binary, e.g. `tools.bin("karmada-scheduler")`.
    pub fn bin(&self, name: &str) -> PathBuf {
        self.bin_dir.join(name)
    }

    /// Asks a karmada-scheduler-estimator (gRPC at `address`, `host:port`)
    /// for `MaxAvailableReplicas` of one replica needing `request`
    /// (`[("cpu", "500m"), ("memory", "512Mi")]`), optionally restricted to
    /// nodes matching `node_selector`.
    ///
    /// This shells out to the Go `estimator-probe` (Karmada's own pb and
    /// service packages); it can be replaced by the Rust client of
    /// `crates/estimator-client` once that exists.
    pub fn estimator_max_available_replicas(
        &self,
        address: &str,
        cluster: &str,
        request: &[(&str, &str)],
        node_selector: &[(&str, &str)],
    ) -> anyhow::Result<i32> {
        let join = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        let out = Command::new(self.bin("estimator-probe"))
            .args(["--address", address, "--cluster", cluster])
            .args(["--request", &join(request)])
            .args(["--node-selector", &join(node_selector)])
            .args(["--timeout", "30s"])
            .output()
            .context("running estimator-probe")?;
        if !out.status.success() {
            bail!(
                "estimator-probe {address} {cluster} failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Answer {
            max_replicas: i32,
        }
        let answer: Answer = serde_json::from_slice(&out.stdout).with_context(|| {
            format!(
                "estimator-probe output {:?}",
                String::from_utf8_lossy(&out.stdout)
            )
        })?;
        Ok(answer.max_replicas)
    }
}

const MISSING_PREFIX: &str = "the Go binaries for the end-to-end tests are not built";

/// For end-to-end tests: the tools, or `None` after printing a clear skip
/// message when they are absent and `KARMADA_E2E` is unset. Panics when
/// `KARMADA_E2E` is set and they cannot be built.
pub fn tools_or_skip(test: &str) -> Option<Tools> {
    match Tools::ensure() {
        Ok(t) => Some(t),
        Err(ToolsError::Missing(m)) if !e2e_required() => {
            // Straight to the process's stderr: libtest does not capture
            // this, so the skip is visible without --nocapture.
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {m}");
            None
        }
        Err(e) => panic!("{test}: {e}"),
    }
}

/// Flags that make our karmada-scheduler act as the Go v1.18.2 binaries (this environment's
/// peers) where Karmada v1.19.0, which ours follows by default, differs: with
/// `PriorityBasedScheduling` off (it became Beta, on by default), ours runs v1.18.2's
/// rate-limited queue and, unless told otherwise, decides as v1.18.2 too (the
/// `clusterAffinities` resumption on a requested reschedule, no component results). Every
/// test comparing ours with a v1.18.2 binary passes them.
pub const AS_V1_18_2: &[&str] = &["--feature-gates=PriorityBasedScheduling=false"];

/// A free TCP port on 127.0.0.1 (bound and released; the usual small race).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind 127.0.0.1:0")
}

/// What `hack/local-up.sh` started (its `env.json`).
#[derive(Clone, Debug, Deserialize)]
pub struct EnvInfo {
    /// State dir (certs, kubeconfigs, logs, pid files, etcd data).
    pub state_dir: PathBuf,
    /// Kubeconfig of the Karmada API server.
    pub kubeconfig: PathBuf,
    /// `https://127.0.0.1:<port>`.
    pub karmada_apiserver_url: String,
    pub karmada_apiserver_port: u16,
    /// `http://127.0.0.1:<port>` (shared by all API servers, one prefix each).
    pub etcd_url: String,
    /// CA, serving, admin client and service-account keys.
    pub certs_dir: PathBuf,
    /// The kubectl the script used.
    pub kubectl: PathBuf,
    pub members: Vec<MemberInfo>,
}

/// One member cluster.
#[derive(Clone, Debug, Deserialize)]
pub struct MemberInfo {
    /// Cluster name (`member1`, ...), also the `Cluster` object's name.
    pub name: String,
    /// Kubeconfig of the member's API server.
    pub kubeconfig: PathBuf,
    /// `https://127.0.0.1:<port>`.
    pub apiserver_url: String,
    pub apiserver_port: u16,
    pub apiserver_pid: u32,
    /// gRPC address of the member's Go karmada-scheduler-estimator, `127.0.0.1:<port>`.
    pub estimator_address: String,
    pub estimator_port: u16,
    pub estimator_health_port: u16,
    pub estimator_metrics_port: u16,
    pub estimator_pid: u32,
}

/// PEM files of the estimators' mutual TLS ([`TestEnvBuilder::estimator_tls`]), laid out as
/// the Secret Karmada's chart mounts at `/etc/karmada/pki`: `ca.crt`, `karmada.crt`,
/// `karmada.key`. Readable by every user (a container may run them as another user).
#[derive(Clone, Debug)]
pub struct EstimatorPki {
    /// The directory holding the three files.
    pub dir: PathBuf,
    /// The CA certificate (`ca.crt`): trust root of servers and clients.
    pub ca: PathBuf,
    /// The certificate (`karmada.crt`), for server and client authentication.
    pub cert: PathBuf,
    /// Its private key (`karmada.key`).
    pub key: PathBuf,
}

impl EstimatorPki {
    fn generate(dir: &Path, members: usize) -> anyhow::Result<Self> {
        use std::os::unix::fs::PermissionsExt as _;
        let ca = pki::Pki::unprefixed(dir, "karmada-testenv-estimator-ca")?;
        let mut names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        for i in 1..=members {
            let svc = format!("karmada-scheduler-estimator-member{i}.karmada-system");
            names.push(format!("{svc}.svc"));
            names.push(format!("{svc}.svc.cluster.local"));
        }
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let files = ca.server_and_client("karmada", "system:karmada:karmada", &names)?;
        let pki = EstimatorPki {
            dir: dir.to_path_buf(),
            ca: ca.ca_file().to_path_buf(),
            cert: files.cert,
            key: files.key,
        };
        for path in [&pki.ca, &pki.cert, &pki.key] {
            fs::set_permissions(path, fs::Permissions::from_mode(0o644))?;
        }
        Ok(pki)
    }
}

/// Options for [`TestEnv`].
#[derive(Clone, Debug)]
pub struct TestEnvBuilder {
    tools: Option<Tools>,
    members: usize,
    nodes_per_member: usize,
    verbose: bool,
    estimator_args: Vec<String>,
    estimator_tls: bool,
    apiserver_sans: Vec<String>,
}

impl Default for TestEnvBuilder {
    fn default() -> Self {
        TestEnvBuilder {
            tools: None,
            members: 3,
            nodes_per_member: 2,
            verbose: std::env::var_os("KARMADA_TESTENV_VERBOSE").is_some(),
            estimator_args: Vec::new(),
            estimator_tls: false,
            apiserver_sans: Vec::new(),
        }
    }
}

impl TestEnvBuilder {
    /// Tools from [`tools_or_skip`] / [`Tools::ensure`] (default: `Tools::ensure()`).
    pub fn tools(mut self, tools: Tools) -> Self {
        self.tools = Some(tools);
        self
    }

    /// Number of member clusters (default 3).
    pub fn members(mut self, n: usize) -> Self {
        self.members = n;
        self
    }

    /// Fake nodes per member (default 2). Member `i` (1-based) gets nodes of
    /// `2*i` CPUs / `4*i` Gi each, one Running pod (500m, 1Gi) per node and a
    /// Succeeded pod on node 1; read the objects back rather than relying on
    /// these numbers.
    pub fn nodes_per_member(mut self, n: usize) -> Self {
        self.nodes_per_member = n;
        self
    }

    /// Extra flags for every member's Go estimator (e.g.
    /// `--feature-gates=SchedulingOvercommitProtection=true`).
    pub fn estimator_args(mut self, args: &[&str]) -> Self {
        self.estimator_args = args.iter().map(|a| a.to_string()).collect();
        self
    }

    /// Serve every member's estimator over mutual TLS, as Karmada's chart does: one CA
    /// ([`EstimatorPki::ca`]) signs one certificate ([`EstimatorPki::cert`], for server and
    /// client use, naming `localhost`, `127.0.0.1` and the estimator Services' DNS names) that
    /// the estimators serve with (`--grpc-auth-cert-file`, `--grpc-auth-key-file`) and whose
    /// clients must present a certificate of that CA (`--grpc-client-ca-file`). The files are
    /// in [`TestEnv::estimator_pki`]. The Go `estimator-probe` of [`Tools`] speaks plaintext
    /// only, so it cannot reach these estimators.
    pub fn estimator_tls(mut self, on: bool) -> Self {
        self.estimator_tls = on;
        self
    }

    /// Extra subjectAltNames of the API servers' serving certificate (`IP:10.234.7.1`,
    /// `DNS:karmada.example`), for clients reaching them through another address than
    /// 127.0.0.1 (see [`vm`]).
    pub fn apiserver_sans(mut self, sans: &[String]) -> Self {
        self.apiserver_sans = sans.to_vec();
        self
    }

    /// Stream the script's progress to stderr (also `KARMADA_TESTENV_VERBOSE=1`).
    pub fn verbose(mut self, v: bool) -> Self {
        self.verbose = v;
        self
    }

    /// Starts the environment (typically 15-40 s on 2 cores).
    pub async fn start(self) -> anyhow::Result<TestEnv> {
        let tools = match self.tools {
            Some(t) => t,
            None => Tools::ensure()?,
        };
        // A fresh name each time (tempfile's random suffix, created exclusively): processes in
        // other PID namespaces share the temporary directory, and reusing a live environment's
        // directory would take its state (and its processes' pid files) away. Kept rather than
        // removed on drop: hack/local-down.sh removes it unless the logs are to be kept.
        let state_dir = tempfile::Builder::new()
            .prefix(&format!("karmada-testenv-{}-", std::process::id()))
            .tempdir()
            .context("creating the state dir")?
            .keep();
        let mut estimator_args = self.estimator_args.clone();
        let estimator_pki = if self.estimator_tls {
            let pki = EstimatorPki::generate(&state_dir.join("estimator-pki"), self.members)?;
            estimator_args.extend([
                format!("--grpc-auth-cert-file={}", pki.cert.display()),
                format!("--grpc-auth-key-file={}", pki.key.display()),
                format!("--grpc-client-ca-file={}", pki.ca.display()),
            ]);
            Some(pki)
        } else {
            None
        };
        let up_log = state_dir.join("local-up.log");
        let mut cmd = tokio::process::Command::new(tools.root.join("hack/local-up.sh"));
        cmd.arg("--state-dir")
            .arg(&state_dir)
            .args(["--members", &self.members.to_string(), "--no-build"])
            .env("LOCAL_UP_NODES", self.nodes_per_member.to_string())
            .env("LOCAL_UP_WATCH_PID", std::process::id().to_string())
            .env("KARMADA_TOOLS_BIN", &tools.bin_dir)
            .env("LOCAL_UP_ESTIMATOR_ARGS", estimator_args.join(" "))
            .env("LOCAL_UP_APISERVER_SANS", self.apiserver_sans.join(","))
            .env_remove("LOCAL_UP_DIR")
            .env_remove("LOCAL_UP_MEMBERS")
            .stdin(Stdio::null());
        if self.verbose {
            cmd.stdout(Stdio::inherit()).stderr(Stdio::inherit());
        } else {
            let f = fs::File::create(&up_log)?;
            cmd.stdout(f.try_clone()?).stderr(f);
        }
        // The guard tears down whatever was started if anything below fails.
        let mut env = TestEnv {
            tools,
            info: None,
            estimator_pki,
            state_dir: state_dir.clone(),
            stopped: false,
            keep_state: false,
            seq: AtomicUsize::new(0),
        };
        let status = cmd.status().await.context("running hack/local-up.sh")?;
        if !status.success() {
            let mut log = String::new();
            fs::File::open(&up_log)
                .and_then(|mut f| f.read_to_string(&mut log))
                .ok();
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            env.keep_state_on_drop();
            bail!(
                "hack/local-up.sh failed ({status}); state kept in {} — last lines:\n{}",
                state_dir.display(),
                tail.join("\n")
            );
        }
        let info: EnvInfo = serde_json::from_slice(
            &fs::read(state_dir.join("env.json")).context("reading env.json")?,
        )
        .context("parsing env.json")?;
        env.info = Some(info);
        Ok(env)
    }
}

/// A running local Karmada control plane; stopped on drop.
pub struct TestEnv {
    tools: Tools,
    info: Option<EnvInfo>,
    estimator_pki: Option<EstimatorPki>,
    state_dir: PathBuf,
    stopped: bool,
    keep_state: bool,
    seq: AtomicUsize,
}

impl TestEnv {
    /// Options: members, nodes per member, tools.
    pub fn builder() -> TestEnvBuilder {
        TestEnvBuilder::default()
    }

    /// Starts an environment with the default options (3 members).
    pub async fn start() -> anyhow::Result<TestEnv> {
        Self::builder().start().await
    }

    /// The estimators' certificates, when started with [`TestEnvBuilder::estimator_tls`].
    pub fn estimator_pki(&self) -> Option<&EstimatorPki> {
        self.estimator_pki.as_ref()
    }

    /// Everything the script reported.
    pub fn info(&self) -> &EnvInfo {
        self.info.as_ref().expect("environment is started")
    }

    /// The tools the environment runs.
    pub fn tools(&self) -> &Tools {
        &self.tools
    }

    /// Kubeconfig of the Karmada API server (admin, `system:masters`).
    pub fn kubeconfig(&self) -> &Path {
        &self.info().kubeconfig
    }

    /// `https://127.0.0.1:<port>` of the Karmada API server.
    pub fn apiserver_url(&self) -> &str {
        &self.info().karmada_apiserver_url
    }

    /// Per-test state dir (logs are in `logs/`).
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// The pid of the control-plane process `name` (`etcd`, `karmada-apiserver`, ...), from
    /// its pid file in the state dir.
    pub fn pid_of(&self, name: &str) -> anyhow::Result<u32> {
        let p = self.state_dir.join("pids").join(format!("{name}.pid"));
        Ok(fs::read_to_string(&p)
            .with_context(|| format!("reading {}", p.display()))?
            .trim()
            .parse()?)
    }

    /// The member clusters.
    pub fn members(&self) -> &[MemberInfo] {
        &self.info().members
    }

    /// One member by name.
    pub fn member(&self, name: &str) -> Option<&MemberInfo> {
        self.members().iter().find(|m| m.name == name)
    }

    /// A client for the Karmada API server.
    pub async fn client(&self) -> anyhow::Result<Client> {
        client_from_kubeconfig(self.kubeconfig()).await
    }

    /// A client for a member's API server.
    pub async fn member_client(&self, name: &str) -> anyhow::Result<Client> {
        let m = self
            .member(name)
            .ok_or_else(|| anyhow!("no member named {name}"))?;
        client_from_kubeconfig(&m.kubeconfig).await
    }

    /// `kubectl --kubeconfig <karmada kubeconfig>`, ready for more args.
    pub fn kubectl(&self) -> Command {
        let mut c = Command::new(&self.info().kubectl);
        c.arg("--kubeconfig").arg(self.kubeconfig());
        c
    }

    /// Applies YAML (one or more documents, `List`s allowed) to the Karmada
    /// API server; see [`apply_yaml`].
    pub async fn apply_yaml(&self, yaml: &str) -> anyhow::Result<Vec<DynamicObject>> {
        apply_yaml(&self.client().await?, yaml).await
    }

    /// Applies one JSON object to the Karmada API server; see [`apply_value`].
    pub async fn apply_json(&self, value: &Value) -> anyhow::Result<DynamicObject> {
        apply_value(&self.client().await?, value).await
    }

    /// Path of a component's log (`karmada-apiserver`, `etcd`,
    /// `member1-apiserver`, `member1-estimator`, `go-scheduler-0`, ...).
    pub fn log_path(&self, component: &str) -> PathBuf {
        self.state_dir.join("logs").join(format!("{component}.log"))
    }

    /// Last `lines` lines of a component's log (for failure messages).
    pub fn log_tail(&self, component: &str, lines: usize) -> String {
        let text = fs::read_to_string(self.log_path(component)).unwrap_or_default();
        let v: Vec<&str> = text.lines().collect();
        v[v.len().saturating_sub(lines)..].join("\n")
    }

    /// Starts the Go `karmada-scheduler` of Karmada v1.18.2 against this
    /// control plane with `--kubeconfig`, `--leader-elect=false`, metrics and
    /// health on free 127.0.0.1 ports, plus `extra_args` (e.g.
    /// `--enable-scheduler-estimator=true`). Killed when the handle is dropped
    /// (and by the environment's teardown in any case).
    pub fn spawn_go_scheduler(&self, extra_args: &[&str]) -> anyhow::Result<GoProcess> {
        let n = self.seq.fetch_add(1, Ordering::SeqCst);
        let name = format!("go-scheduler-{n}");
        let metrics = format!("127.0.0.1:{}", free_port());
        let health = format!("127.0.0.1:{}", free_port());
        let mut args: Vec<String> = vec![
            format!("--kubeconfig={}", self.kubeconfig().display()),
            "--leader-elect=false".into(),
            format!("--metrics-bind-address={metrics}"),
            format!("--health-probe-bind-address={health}"),
        ];
        args.extend(extra_args.iter().map(|s| s.to_string()));
        let mut p = self.spawn_process(&name, &self.tools.bin("karmada-scheduler"), &args)?;
        p.metrics_address = Some(metrics);
        p.health_address = Some(health);
        Ok(p)
    }

    /// Starts any program as part of this environment: output goes to
    /// `logs/<name>.log`, a pid file makes `hack/local-down.sh` stop it too.
    /// The command line must mention the state dir (e.g. a kubeconfig path in
    /// it) for the teardown to recognise the process as its own.
    pub fn spawn_process(
        &self,
        name: &str,
        program: &Path,
        args: &[String],
    ) -> anyhow::Result<GoProcess> {
        let mut cmd = Command::new(program);
        cmd.args(args);
        GoProcess::start(cmd, &self.state_dir, name)
            .with_context(|| format!("starting {}", program.display()))
    }

    /// Stops everything now and removes the state dir.
    pub fn stop(mut self) {
        self.teardown(false);
    }

    /// Keep the state dir (logs) when this environment is dropped.
    pub fn keep_state_on_drop(&mut self) {
        self.keep_state = true;
    }

    fn teardown(&mut self, keep: bool) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        let keep = keep || self.keep_state;
        let mut cmd = Command::new(self.tools.root.join("hack/local-down.sh"));
        cmd.arg("--state-dir").arg(&self.state_dir);
        if keep {
            cmd.arg("--keep-state");
        }
        let out = cmd.stdin(Stdio::null()).output();
        match out {
            Ok(o) if o.status.success() => {}
            Ok(o) => eprintln!(
                "testenv: hack/local-down.sh failed: {}",
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(e) => eprintln!("testenv: cannot run hack/local-down.sh: {e}"),
        }
        if keep {
            eprintln!("testenv: state (logs) kept in {}", self.state_dir.display());
        }
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        let keep = std::thread::panicking() || std::env::var_os("KARMADA_TESTENV_KEEP").is_some();
        self.teardown(keep);
    }
}

/// A process started by [`TestEnv::spawn_go_scheduler`] / [`TestEnv::spawn_process`];
/// killed on drop.
pub struct GoProcess {
    name: String,
    child: Child,
    pid_file: PathBuf,
    log: PathBuf,
    metrics_address: Option<String>,
    health_address: Option<String>,
}

impl GoProcess {
    /// Starts `cmd` as `name` of the environment in `state_dir`: output to
    /// `logs/<name>.log`, stdin closed, pid in `pids/<name>.pid` (so `hack/local-down.sh`
    /// stops it too). Killed when the handle is dropped.
    pub(crate) fn start(mut cmd: Command, state_dir: &Path, name: &str) -> anyhow::Result<Self> {
        let log = state_dir.join("logs").join(format!("{name}.log"));
        let f = fs::File::create(&log)?;
        let child = cmd
            .stdin(Stdio::null())
            .stdout(f.try_clone()?)
            .stderr(f)
            .spawn()?;
        let pid_file = state_dir.join("pids").join(format!("{name}.pid"));
        fs::write(&pid_file, child.id().to_string())?;
        Ok(GoProcess {
            name: name.to_string(),
            child,
            pid_file,
            log,
            metrics_address: None,
            health_address: None,
        })
    }

    /// Name used for the log and pid files.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its log file.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// Last `lines` lines of its log.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let v: Vec<&str> = text.lines().collect();
        v[v.len().saturating_sub(lines)..].join("\n")
    }

    /// `127.0.0.1:<port>` of the metrics endpoint (schedulers only).
    pub fn metrics_address(&self) -> Option<&str> {
        self.metrics_address.as_deref()
    }

    /// `127.0.0.1:<port>` of the health endpoint (schedulers only).
    pub fn health_address(&self) -> Option<&str> {
        self.health_address.as_deref()
    }

    /// `Some(status)` if the process has exited.
    pub fn try_wait(&mut self) -> anyhow::Result<Option<std::process::ExitStatus>> {
        Ok(self.child.try_wait()?)
    }

    /// Waits until `GET http://<health>/healthz` answers 200 (schedulers only).
    pub async fn wait_healthy(&mut self, timeout: Duration) -> anyhow::Result<()> {
        let addr = self
            .health_address
            .clone()
            .ok_or_else(|| anyhow!("{} has no health address", self.name))?;
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_wait()? {
                bail!("{} exited ({status}):\n{}", self.name, self.log_tail(30));
            }
            if http_get_ok(&addr, "/healthz").await {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "{} not healthy after {timeout:?}:\n{}",
                    self.name,
                    self.log_tail(30)
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Stops it (SIGKILL) and waits.
    pub fn kill(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
        fs::remove_file(&self.pid_file).ok();
    }
}

impl Drop for GoProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn http_get_ok(addr: &str, path: &str) -> bool {
    matches!(http_get(addr, path).await, Ok((200, _)))
}

/// `GET http://<addr><path>` (HTTP/1.0, 2 s to connect and 5 s to read): the status code and
/// the body.
pub async fn http_get(addr: &str, path: &str) -> anyhow::Result<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::time::timeout(Duration::from_secs(2), tokio::net::TcpStream::connect(addr))
        .await
        .map_err(|_| anyhow!("connecting to {addr}: timed out"))?
        .with_context(|| format!("connecting to {addr}"))?;
    let req = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    s.write_all(req.as_bytes()).await?;
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut buf))
        .await
        .map_err(|_| anyhow!("GET {addr}{path}: no complete answer within 5s"))??;
    let text = String::from_utf8_lossy(&buf);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| anyhow!("GET {addr}{path}: not an HTTP answer: {head:?}"))?;
    Ok((status, body.to_string()))
}

/// A `kube::Client` from a kubeconfig file.
pub async fn client_from_kubeconfig(path: &Path) -> anyhow::Result<Client> {
    let kc = Kubeconfig::read_from(path).with_context(|| format!("reading {}", path.display()))?;
    let cfg = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
    Ok(Client::try_from(cfg)?)
}

/// Parses YAML with one or more documents (empty ones and `kind: *List`
/// wrappers are handled) into JSON values.
pub fn parse_yaml_documents(yaml: &str) -> anyhow::Result<Vec<Value>> {
    let mut out = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(yaml) {
        let v = Value::deserialize(doc)?;
        flatten_lists(v, &mut out);
    }
    Ok(out)
}

fn flatten_lists(v: Value, out: &mut Vec<Value>) {
    match v {
        Value::Null => {}
        Value::Object(ref m)
            if m.get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| k.ends_with("List"))
                && m.get("items").is_some_and(Value::is_array) =>
        {
            if let Some(Value::Array(items)) = v.get("items").cloned() {
                for i in items {
                    flatten_lists(i, out);
                }
            }
        }
        v => out.push(v),
    }
}

/// Applies every object of `yaml` in order (see [`apply_value`]).
pub async fn apply_yaml(client: &Client, yaml: &str) -> anyhow::Result<Vec<DynamicObject>> {
    let mut applied = Vec::new();
    for v in parse_yaml_documents(yaml)? {
        applied.push(apply_value(client, &v).await?);
    }
    Ok(applied)
}

/// Server-side applies one object (field manager [`FIELD_MANAGER`], forced),
/// resolving its kind by discovery; namespaced objects without a namespace go
/// to `default`. If the object carries a `status`, it is then merge-patched
/// into the status subresource (which apply on the main resource ignores),
/// so e.g. a `Cluster` with its status or a `Node` with capacity can be
/// created in one call. Returns the object as stored.
pub async fn apply_value(client: &Client, value: &Value) -> anyhow::Result<DynamicObject> {
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .ok_or_else(|| anyhow!("object without apiVersion: {value}"))?;
    let kind = value
        .get("kind")
        .and_then(Value::as_str)
        .ok_or_else(|| anyhow!("object without kind: {value}"))?;
    let name = value
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .ok_or_else(|| anyhow!("{kind} without metadata.name"))?;
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let (ar, caps) = pinned_kind(client, &gvk)
        .await
        .with_context(|| format!("discovering {api_version} {kind}"))?;
    let api: Api<DynamicObject> = match caps.scope {
        Scope::Namespaced => {
            let ns = value
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or("default");
            Api::namespaced_with(client.clone(), ns, &ar)
        }
        Scope::Cluster => Api::all_with(client.clone(), &ar),
    };
    let mut body = value.clone();
    if let Some(m) = body.as_object_mut() {
        m.remove("status");
        if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("resourceVersion");
            meta.remove("managedFields");
        }
    }
    let pp = PatchParams::apply(FIELD_MANAGER).force();
    let mut obj = api
        .patch(name, &pp, &Patch::Apply(&body))
        .await
        .with_context(|| format!("applying {kind} {name}"))?;
    if let Some(status) = value.get("status").filter(|s| !s.is_null()) {
        let has_status_subresource = caps.subresources.iter().any(|(r, _)| r.plural == "status");
        let patch = serde_json::json!({ "status": status });
        obj = if has_status_subresource {
            api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
        } else {
            api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
        }
        .with_context(|| format!("patching the status of {kind} {name}"))?;
    }
    Ok(obj)
}

/// Polls `f` every 250 ms until it returns `Some`, or fails after `timeout`
/// with `what` in the message.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut f: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Option<T>>>,
{
    let deadline = Instant::now() + timeout;
    let mut last_err = None;
    loop {
        match f().await {
            Ok(Some(v)) => return Ok(v),
            Ok(None) => {}
            Err(e) => last_err = Some(e),
        }
        if Instant::now() > deadline {
            return Err(match last_err {
                Some(e) => e.context(format!("timed out after {timeout:?} waiting for {what}")),
                None => anyhow!("timed out after {timeout:?} waiting for {what}"),
            });
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
