//! A whole Karmada v1.18.2 for end-to-end tests, through `hack/karmada-up.sh`: the Karmada
//! API server with karmada-aggregated-apiserver (serving `cluster.karmada.io`),
//! karmada-webhook, karmada-controller-manager, the scheduler and descheduler under test, and
//! three kwok-simulated members (two in Push mode, one in Pull mode through karmada-agent),
//! each with a Go estimator. Everything listens on 127.0.0.1; dropping the [`WholeKarmada`]
//! runs `hack/karmada-down.sh`, and a watcher tears it down if the test process dies first.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::Value;

use crate::{Tools, e2e_required, repo_root};

/// The Go binaries `hack/karmada-up.sh` needs besides those of [`crate::REQUIRED_BINARIES`].
pub const WHOLE_BINARIES: &[&str] = &[
    "karmada-controller-manager",
    "karmada-aggregated-apiserver",
    "karmada-webhook",
    "karmada-agent",
    "kwok",
    "kube-controller-manager",
    "kube-scheduler",
];

/// A running whole Karmada; stopped on drop unless [`WholeKarmada::attach`]ed.
pub struct WholeKarmada {
    state: PathBuf,
    kubectl: PathBuf,
    tools_bin: PathBuf,
    stopped: bool,
    keep: bool,
}

impl WholeKarmada {
    /// Starts one with our `scheduler` and `descheduler` binaries. `None` (after saying why)
    /// when the Go binaries are absent and `KARMADA_E2E` is unset; with it set,
    /// `hack/karmada-up.sh` builds what is missing.
    pub fn start(
        test: &str,
        tools: &Tools,
        scheduler: &Path,
        descheduler: &Path,
    ) -> anyhow::Result<Option<WholeKarmada>> {
        let missing: Vec<&str> = WHOLE_BINARIES
            .iter()
            .copied()
            .filter(|b| !tools.bin(b).is_file())
            .collect();
        if !missing.is_empty() && !e2e_required() {
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: {} not built in {} (hack/build-tools.sh node karmada-cp kwok)",
                missing.join(", "),
                tools.bin_dir().display()
            );
            return Ok(None);
        }
        let state = tempfile::Builder::new()
            .prefix(&format!("karmada-whole-{}-", std::process::id()))
            .tempdir()?
            .keep();
        let log = state.join("karmada-up.log");
        let f = fs::File::create(&log)?;
        let status = Command::new(repo_root().join("hack/karmada-up.sh"))
            .arg("--state-dir")
            .arg(&state)
            .args(["--scheduler", "ours"])
            .env("KARMADA_TOOLS_BIN", tools.bin_dir())
            .env("KARMADA_SCHEDULER_BIN", scheduler)
            .env("KARMADA_DESCHEDULER_BIN", descheduler)
            .env("KARMADA_UP_WATCH_PID", std::process::id().to_string())
            .env_remove("KARMADA_UP_DIR")
            .stdin(Stdio::null())
            .stdout(f.try_clone()?)
            .stderr(f)
            .status()
            .context("running hack/karmada-up.sh")?;
        let whole = WholeKarmada {
            state: state.clone(),
            kubectl: tools.bin("kubectl"),
            tools_bin: tools.bin_dir().to_path_buf(),
            stopped: false,
            keep: false,
        };
        if !status.success() {
            let text = fs::read_to_string(&log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(40).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            bail!(
                "hack/karmada-up.sh failed ({status}); logs in {}:\n{}",
                state.join("logs").display(),
                tail.join("\n")
            );
        }
        Ok(Some(whole))
    }

    /// One already running in `state` (brought up by `hack/karmada-up.sh --state-dir state`);
    /// left running when dropped, so that a bench can be run again on it.
    pub fn attach(state: &Path, tools: &Tools) -> anyhow::Result<WholeKarmada> {
        if !state.join("env.json").is_file() {
            bail!(
                "{} holds no running whole Karmada (hack/karmada-up.sh --state-dir {0})",
                state.display()
            );
        }
        Ok(WholeKarmada {
            state: state.to_path_buf(),
            kubectl: tools.bin("kubectl"),
            tools_bin: tools.bin_dir().to_path_buf(),
            // Never stopped from here: it was running before.
            stopped: true,
            keep: false,
        })
    }

    /// The scheduler and descheduler running: `ours` or `go` (`DIR/scheduler.kind`).
    pub fn scheduler_kind(&self) -> anyhow::Result<String> {
        Ok(fs::read_to_string(self.state.join("scheduler.kind"))?
            .trim()
            .to_string())
    }

    /// Swaps in the scheduler and descheduler of `kind` (`ours`: the given binaries; `go`:
    /// the Go v1.18.2 ones) by running `hack/karmada-up.sh --no-build` on the running state
    /// dir, which stops the others and waits for the new ones' health.
    pub fn set_scheduler(
        &self,
        kind: &str,
        scheduler: &Path,
        descheduler: &Path,
    ) -> anyhow::Result<()> {
        let log = self.state.join(format!("karmada-up-{kind}.log"));
        let status = Command::new(repo_root().join("hack/karmada-up.sh"))
            .arg("--state-dir")
            .arg(&self.state)
            .args(["--scheduler", kind, "--no-build"])
            .env("KARMADA_TOOLS_BIN", &self.tools_bin)
            .env("KARMADA_SCHEDULER_BIN", scheduler)
            .env("KARMADA_DESCHEDULER_BIN", descheduler)
            .env_remove("KARMADA_UP_DIR")
            .env_remove("KARMADA_UP_WATCH_PID")
            .stdin(Stdio::null())
            .stdout(fs::File::create(&log)?)
            .stderr(fs::OpenOptions::new().append(true).open(&log)?)
            .status()
            .context("running hack/karmada-up.sh")?;
        if !status.success() {
            bail!(
                "hack/karmada-up.sh --scheduler {kind} failed ({status}); see {}",
                log.display()
            );
        }
        Ok(())
    }

    /// A client of the Karmada API server (`member` None) or of a member.
    pub async fn client(&self, member: Option<&str>) -> anyhow::Result<kube::Client> {
        let kc = match member {
            None => self.kubeconfig(),
            Some(m) => self.state.join(format!("{m}.kubeconfig")),
        };
        crate::client_from_kubeconfig(&kc).await
    }

    /// Every process the script started and runs now, by name (`pids/<name>.pid`).
    pub fn processes(&self) -> BTreeMap<String, u32> {
        let mut out = BTreeMap::new();
        for e in fs::read_dir(self.state.join("pids"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(n) = name.strip_suffix(".pid")
                && let Ok(pid) = self.pid(n)
                && Path::new(&format!("/proc/{pid}")).exists()
            {
                out.insert(n.to_string(), pid);
            }
        }
        out
    }

    /// A loopback port the script reserved, by its name in `DIR/config.env` without `_PORT`
    /// (e.g. `CM_METRICS`, `KARMADA_APISERVER`).
    pub fn port(&self, name: &str) -> anyhow::Result<u16> {
        let config = fs::read_to_string(self.state.join("config.env"))?;
        let key = format!("{name}_PORT=");
        config
            .lines()
            .find_map(|l| l.strip_prefix(&key))
            .with_context(|| format!("no {key} in config.env"))?
            .trim()
            .parse()
            .with_context(|| format!("{key} in config.env"))
    }

    /// The state dir (kubeconfigs, logs, pids).
    pub fn state_dir(&self) -> &Path {
        &self.state
    }

    /// `DIR/karmada.kubeconfig`.
    pub fn kubeconfig(&self) -> PathBuf {
        self.state.join("karmada.kubeconfig")
    }

    /// kubectl against the Karmada API server (`member` None) or a member; stdout.
    pub fn kubectl(&self, member: Option<&str>, args: &[&str]) -> anyhow::Result<String> {
        let kc = match member {
            None => self.kubeconfig(),
            Some(m) => self.state.join(format!("{m}.kubeconfig")),
        };
        let out = Command::new(&self.kubectl)
            .arg("--kubeconfig")
            .arg(&kc)
            .arg("--cache-dir")
            .arg(self.state.join("kube-cache"))
            .args(args)
            .output()
            .context("running kubectl")?;
        if !out.status.success() {
            bail!(
                "kubectl {} ({}): {}",
                args.join(" "),
                member.unwrap_or("karmada"),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// kubectl `get ... -o json`, parsed.
    pub fn get_json(&self, member: Option<&str>, args: &[&str]) -> anyhow::Result<Value> {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "json"]);
        Ok(serde_json::from_str(&self.kubectl(member, &all)?)?)
    }

    /// kubectl apply of a YAML string on the Karmada API server.
    pub fn apply(&self, yaml: &str) -> anyhow::Result<()> {
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        let path = self.state.join(format!(
            "apply-{}.yaml",
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        fs::write(&path, yaml)?;
        self.kubectl(None, &["apply", "-f", &path.to_string_lossy()])?;
        Ok(())
    }

    /// Pid of one of the processes the script started (`pids/<name>.pid`).
    pub fn pid(&self, name: &str) -> anyhow::Result<u32> {
        Ok(
            fs::read_to_string(self.state.join(format!("pids/{name}.pid")))?
                .trim()
                .parse()?,
        )
    }

    /// Kills one process the script started (SIGKILL, mid-stream) and starts it again with
    /// the same command line, after `down` has passed; its pid file follows, so teardown
    /// still stops it.
    pub fn restart(&self, name: &str, down: Duration) -> anyhow::Result<()> {
        let pid = self.pid(name)?;
        let cmdline = fs::read(format!("/proc/{pid}/cmdline"))?;
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while Path::new(&format!("/proc/{pid}/cmdline")).exists()
            && fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| !c.is_empty())
                .unwrap_or(false)
        {
            if Instant::now() > deadline {
                bail!("{name} (pid {pid}) did not exit after SIGKILL");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(down);
        let log = fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(self.state.join(format!("logs/{name}.log")))?;
        use std::os::unix::process::CommandExt as _;
        let child = Command::new(&args[0])
            .args(&args[1..])
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0)
            .spawn()
            .with_context(|| format!("restarting {name}"))?;
        fs::write(
            self.state.join(format!("pids/{name}.pid")),
            format!("{}\n", child.id()),
        )?;
        // Reaped by init once this handle is gone; teardown stops it by pid.
        std::mem::forget(child);
        Ok(())
    }

    /// Keeps the state dir (logs) when stopped, as after a panic; for a test that fails by
    /// returning an error.
    pub fn keep_state(&mut self) {
        self.keep = true;
    }

    /// Stops everything (`hack/karmada-down.sh`) and removes the state dir.
    pub fn stop(&mut self) -> anyhow::Result<()> {
        if self.stopped {
            return Ok(());
        }
        self.stopped = true;
        let mut cmd = Command::new(repo_root().join("hack/karmada-down.sh"));
        cmd.arg("--state-dir").arg(&self.state);
        if self.keep || std::thread::panicking() {
            cmd.arg("--keep-state");
        }
        let status = cmd.stdout(Stdio::null()).stderr(Stdio::null()).status()?;
        if !status.success() {
            bail!("hack/karmada-down.sh failed ({status})");
        }
        Ok(())
    }
}

impl Drop for WholeKarmada {
    fn drop(&mut self) {
        if self.keep || std::thread::panicking() {
            eprintln!(
                "whole Karmada: logs of the failed run kept in {}",
                self.state.join("logs").display()
            );
        }
        let _ = self.stop();
    }
}

/// Polls `f` every 500 ms until it returns `Ok(Some(_))`, for at most `timeout`; the last
/// error or "still None" is in the failure.
pub fn poll<T>(
    what: &str,
    timeout: Duration,
    mut f: impl FnMut() -> anyhow::Result<Option<T>>,
) -> anyhow::Result<T> {
    let deadline = Instant::now() + timeout;
    let mut last = String::from("not yet");
    loop {
        match f() {
            Ok(Some(v)) => return Ok(v),
            Ok(None) => {}
            Err(e) => last = format!("{e:#}"),
        }
        if Instant::now() > deadline {
            bail!("timed out after {timeout:?} waiting for {what} ({last})");
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}
