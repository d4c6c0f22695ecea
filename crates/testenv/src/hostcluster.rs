//! The one-node host cluster of `hack/host-cluster-up.sh` for tests: a real Kubernetes (etcd,
//! kube-apiserver, kube-controller-manager, kube-scheduler, kubelet with containerd and runc,
//! CNI bridge, kube-proxy in iptables mode, CoreDNS) on which the charts' pods run.
//!
//! Everything of it listens on the bridge address [`HostClusterInfo::node_ip`] (the node's
//! InternalIP), which the script creates; pods live on the bridge's /24. A process on this
//! machine's loopback (the Karmada control plane of [`crate::TestEnv`]) is reached by pods at
//! `node_ip:<port>` after [`HostCluster::expose`]. [`HostCluster::import`] puts an image
//! archive into the node's containerd (there is no registry: pods use
//! `imagePullPolicy: Never`). Dropping a [`HostCluster`] runs `hack/host-cluster-down.sh`, which
//! removes every process, mount, iptables rule, bridge and file it made; so does a watcher
//! the script starts when the test process dies without unwinding.
//!
//! There is one host cluster per machine (fixed bridge and addresses), so a test binary holds
//! one at a time; tests that need it run their steps in one test function.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context as _, bail};
use kube::Client;
use serde::Deserialize;

use crate::{client_from_kubeconfig, e2e_required, repo_root};

/// `<state>/env.json` of `hack/host-cluster-up.sh`.
#[derive(Clone, Debug, Deserialize)]
pub struct HostClusterInfo {
    /// The state dir.
    pub state_dir: PathBuf,
    /// Admin kubeconfig (`system:masters`).
    pub kubeconfig: PathBuf,
    /// The node's name.
    pub node_name: String,
    /// The node's address: the bridge's, where the cluster's API server listens and where pods
    /// reach exposed loopback ports.
    pub node_ip: String,
    /// `https://<node_ip>:<port>`.
    pub apiserver: String,
    /// Pod range (one node).
    pub pod_cidr: String,
    /// Service range.
    pub service_cidr: String,
    /// ClusterIP of `kube-system/kube-dns`.
    pub dns_service_ip: String,
    /// containerd's socket.
    pub containerd_socket: PathBuf,
    /// The Go estimator's image (built by the script from upstream's binary; imported).
    pub estimator_image: String,
    /// A static busybox image (imported), for probes from inside the pod network.
    pub busybox_image: String,
    /// busybox + kubectl + a `bash` running busybox's sh (imported): the `kubectl.image` of
    /// Karmada's chart (its init containers).
    pub kubectl_image: String,
}

/// A running host cluster; stopped and removed on drop.
#[derive(Debug)]
pub struct HostCluster {
    info: HostClusterInfo,
    keep: bool,
}

/// Why this machine cannot run the host cluster at all (`None`: it can try).
fn cannot_run() -> Option<String> {
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        return Some("the host cluster scripts support linux/amd64 only".into());
    }
    if !crate::is_root() {
        return Some(
            "the host cluster needs root (containerd, kubelet, a bridge, iptables)".into(),
        );
    }
    if !Path::new("/proc/sys/net/bridge").exists() {
        return Some(
            "the kernel has no br_netfilter (/proc/sys/net/bridge), so Services cannot reach \
             pods on the bridge"
                .into(),
        );
    }
    if !Path::new("/usr/bin/apt-get").exists()
        && ["containerd", "runc"]
            .iter()
            .any(|b| Command::new(b).arg("--version").output().is_err())
    {
        return Some("containerd/runc are not installed and there is no apt-get".into());
    }
    None
}

impl HostCluster {
    /// Starts the host cluster (`hack/host-cluster-up.sh`, state in `<repo>/_output/host-cluster`
    /// or `$HOST_CLUSTER_DIR`). Skips (prints why, returns `Ok(None)`) when the machine cannot
    /// run it or the Go binaries are not built — unless `KARMADA_E2E` is set, in which case the
    /// script builds them and any failure is an error.
    pub fn start(test: &str) -> anyhow::Result<Option<HostCluster>> {
        if let Some(why) = cannot_run() {
            assert!(!e2e_required(), "{test}: {why}");
            eprintln!("SKIPPED {test}: {why}");
            return Ok(None);
        }
        let root = repo_root();
        let mut up = Command::new(root.join("hack/host-cluster-up.sh"));
        if !e2e_required() {
            let fresh = Command::new(root.join("hack/build-tools.sh"))
                .args(["--check", "kube", "node", "coredns", "estimator-pod"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !fresh {
                eprintln!(
                    "SKIPPED {test}: the host cluster's Go binaries are not built \
                     (hack/build-tools.sh kube node coredns estimator-pod; set KARMADA_E2E=1 to \
                     build them)"
                );
                return Ok(None);
            }
            up.arg("--no-build");
        }
        let state = std::env::var_os("HOST_CLUSTER_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("_output/host-cluster"));
        if state.exists() {
            // Left by a test process that died without its Drop (its watcher normally
            // cleans up within a second).
            eprintln!(
                "{test}: removing a leftover host cluster in {}",
                state.display()
            );
            run_down(&state, false);
        }
        let started = Instant::now();
        let out = up
            .env("HOST_CLUSTER_WATCH_PID", std::process::id().to_string())
            .stdin(Stdio::null())
            .output()
            .context("running hack/host-cluster-up.sh")?;
        if !out.status.success() {
            let log = String::from_utf8_lossy(&out.stderr).into_owned();
            // Leave nothing half-started behind.
            run_down(&state, false);
            bail!("hack/host-cluster-up.sh failed ({}):\n{log}", out.status);
        }
        let env = state.join("env.json");
        let info: HostClusterInfo = serde_json::from_slice(
            &std::fs::read(&env).with_context(|| format!("reading {}", env.display()))?,
        )
        .with_context(|| format!("parsing {}", env.display()))?;
        eprintln!(
            "{test}: host cluster up in {:.0?} (node {} at {})",
            started.elapsed(),
            info.node_name,
            info.node_ip
        );
        Ok(Some(HostCluster {
            info,
            keep: std::env::var_os("HOST_CLUSTER_KEEP").is_some(),
        }))
    }

    /// What the script reported.
    pub fn info(&self) -> &HostClusterInfo {
        &self.info
    }

    /// A client with the admin kubeconfig.
    pub async fn client(&self) -> anyhow::Result<Client> {
        client_from_kubeconfig(&self.info.kubeconfig).await
    }

    /// `kubectl --kubeconfig <admin>` (the pinned kubectl of `_output/bin`).
    pub fn kubectl(&self) -> Command {
        let bin = std::env::var_os("KARMADA_TOOLS_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo_root().join("_output/bin"));
        let mut c = Command::new(bin.join("kubectl"));
        c.arg("--kubeconfig").arg(&self.info.kubeconfig);
        c.stdin(Stdio::null());
        c
    }

    /// Runs kubectl with `args`; its stdout, or an error with stderr.
    pub fn kubectl_run(&self, args: &[&str]) -> anyhow::Result<String> {
        let out = self
            .kubectl()
            .args(args)
            .output()
            .with_context(|| format!("running kubectl {}", args.join(" ")))?;
        if !out.status.success() {
            bail!(
                "kubectl {} failed ({}): {}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Imports an image archive (docker-archive or OCI archive) into the node's containerd.
    pub fn import(&self, archive: &Path) -> anyhow::Result<()> {
        self.script(&["import", &archive.to_string_lossy()])
    }

    /// Makes `127.0.0.1:<port>` of this machine reachable from pods at `<node_ip>:<port>`.
    pub fn expose(&self, ports: &[u16]) -> anyhow::Result<()> {
        let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
        let mut args = vec!["expose"];
        args.extend(ports.iter().map(String::as_str));
        self.script(&args)
    }

    fn script(&self, args: &[&str]) -> anyhow::Result<()> {
        let out = Command::new(repo_root().join("hack/host-cluster-up.sh"))
            .arg("--state-dir")
            .arg(&self.info.state_dir)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .context("running hack/host-cluster-up.sh")?;
        if !out.status.success() {
            bail!(
                "hack/host-cluster-up.sh {} failed ({}): {}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    }

    /// The last `lines` lines of a daemon's log (kubelet, containerd, kube-proxy, ...).
    pub fn log_tail(&self, daemon: &str, lines: usize) -> String {
        let path = self
            .info
            .state_dir
            .join("logs")
            .join(format!("{daemon}.log"));
        match std::fs::read_to_string(&path) {
            Ok(s) => {
                let all: Vec<&str> = s.lines().collect();
                all[all.len().saturating_sub(lines)..].join("\n")
            }
            Err(e) => format!("({}: {e})", path.display()),
        }
    }
}

fn run_down(state: &Path, keep: bool) {
    let mut down = Command::new(repo_root().join("hack/host-cluster-down.sh"));
    down.arg("--state-dir").arg(state);
    if keep {
        down.arg("--keep-state");
    }
    match down.stdin(Stdio::null()).output() {
        Ok(o) if o.status.success() => {}
        Ok(o) => eprintln!(
            "hack/host-cluster-down.sh failed ({}): {}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => eprintln!("running hack/host-cluster-down.sh: {e}"),
    }
}

impl Drop for HostCluster {
    fn drop(&mut self) {
        if self.keep {
            eprintln!(
                "HOST_CLUSTER_KEEP: host cluster left running (KUBECONFIG={}; stop with \
                 hack/host-cluster-down.sh --state-dir {})",
                self.info.kubeconfig.display(),
                self.info.state_dir.display()
            );
            return;
        }
        run_down(&self.info.state_dir, false);
    }
}
