//! Containers for the tests: podman (Debian's, installed by `hack/ci-deps.sh`) with runc, on
//! this kind of machine (cgroup v1 or hybrid, no systemd, no `CAP_SYS_RESOURCE`), with its
//! own image store under a test directory, so that tests neither see nor leave images.
//!
//! What it takes to run a container here:
//! - `--cgroup-manager=cgroupfs` (no systemd) and `--runtime=runc`: crun 1.8 refuses this
//!   machine's hybrid cgroup layout ("cgroups in hybrid mode not supported, drop all
//!   controllers from cgroupv2"), and with `--cgroups=disabled` podman refuses runc;
//! - explicit `--ulimit nofile=...,nproc=...`: podman's defaults raise the hard limits, which
//!   needs `CAP_SYS_RESOURCE` ("setrlimit `RLIMIT_NOFILE`: Operation not permitted").

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use anyhow::{Context as _, bail};

use crate::e2e_required;

/// Limits every container gets (see the module documentation).
const ULIMITS: [&str; 2] = ["nofile=4096:4096", "nproc=4096:4096"];

/// A podman with its own storage in a directory; removes its containers and images on drop.
#[derive(Debug)]
pub struct Podman {
    bin: PathBuf,
    dir: PathBuf,
    containers: std::sync::Mutex<Vec<String>>,
}

/// One container to run (the parts of a Kubernetes container spec the tests use).
#[derive(Clone, Debug, Default)]
pub struct RunSpec {
    /// Container name.
    pub name: String,
    /// Image reference.
    pub image: String,
    /// The program (Kubernetes `command[0]`; replaces the image's entrypoint).
    pub entrypoint: String,
    /// Its arguments (the rest of `command`, then `args`).
    pub args: Vec<String>,
    /// Environment variables.
    pub env: Vec<(String, String)>,
    /// `(host path, container path)`, read-only bind mounts.
    pub mounts: Vec<(PathBuf, String)>,
    /// `--user` (`None`: the image's user).
    pub user: Option<String>,
    /// Read-only root filesystem.
    pub read_only: bool,
}

impl Podman {
    /// podman and runc when installed and this process is root; otherwise `None` after a
    /// message — or a panic when `KARMADA_E2E` is set. Storage goes to `dir`.
    pub fn or_skip(test: &str, dir: &Path) -> Option<Podman> {
        let missing: Vec<&str> = ["podman", "runc"]
            .into_iter()
            .filter(|b| {
                !Command::new(b)
                    .arg("--version")
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            })
            .collect();
        let root = crate::is_root();
        let why = if !missing.is_empty() {
            format!(
                "{} not installed (hack/ci-deps.sh installs Debian's)",
                missing.join(" and ")
            )
        } else if !root {
            "containers are run as root (rootful podman)".to_string()
        } else {
            return Some(Podman {
                bin: PathBuf::from("podman"),
                dir: dir.to_path_buf(),
                containers: Default::default(),
            });
        };
        assert!(!e2e_required(), "{test}: {why}");
        eprintln!("SKIPPED {test}: {why}");
        None
    }

    /// `podman` with this store's global flags.
    pub fn command(&self) -> Command {
        let mut c = Command::new(&self.bin);
        c.arg("--root")
            .arg(self.dir.join("storage"))
            .arg("--runroot")
            .arg(self.dir.join("run"))
            .arg("--tmpdir")
            .arg(self.dir.join("tmp"))
            .args([
                "--storage-driver=overlay",
                "--cgroup-manager=cgroupfs",
                "--runtime=runc",
                "--events-backend=file",
            ])
            .stdin(Stdio::null());
        c
    }

    fn run(&self, what: &str, args: &[&str]) -> anyhow::Result<Output> {
        let out = self
            .command()
            .args(args)
            .output()
            .with_context(|| format!("running podman {what}"))?;
        if !out.status.success() {
            bail!(
                "podman {what} failed ({}):\n{}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(out)
    }

    /// `podman load -i <archive>`; returns the names it loaded.
    pub fn load(&self, archive: &Path) -> anyhow::Result<Vec<String>> {
        let archive = archive.to_string_lossy();
        let out = self.run("load", &["load", "-i", &archive])?;
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.strip_prefix("Loaded image: "))
            .flat_map(|l| l.split(", "))
            .map(|s| s.trim().to_string())
            .collect())
    }

    /// `podman image inspect <image>` as JSON (the first element).
    pub fn inspect_image(&self, image: &str) -> anyhow::Result<serde_json::Value> {
        let out = self.run("image inspect", &["image", "inspect", image])?;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
        Ok(v.get(0).cloned().unwrap_or_default())
    }

    /// Starts a container (host network, detached, never pulling); removed on drop.
    pub fn run_detached(&self, spec: &RunSpec) -> anyhow::Result<()> {
        let mut args: Vec<String> = vec![
            "run".into(),
            "--detach".into(),
            "--pull=never".into(),
            "--network=host".into(),
            format!("--name={}", spec.name),
            format!("--entrypoint={}", spec.entrypoint),
        ];
        for u in ULIMITS {
            args.push(format!("--ulimit={u}"));
        }
        if spec.read_only {
            args.push("--read-only".into());
            // podman mounts a tmpfs on /tmp, /var/tmp and /run of a read-only container unless
            // told not to; a pod's read-only root filesystem has none of them.
            args.push("--read-only-tmpfs=false".into());
        }
        if let Some(u) = &spec.user {
            args.push(format!("--user={u}"));
        }
        for (k, v) in &spec.env {
            args.push(format!("--env={k}={v}"));
        }
        for (host, path) in &spec.mounts {
            args.push(format!("--volume={}:{path}:ro", host.display()));
        }
        args.push(spec.image.clone());
        args.extend(spec.args.iter().cloned());
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        self.containers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(spec.name.clone());
        self.run("run", &refs)?;
        Ok(())
    }

    /// The container's output so far (stdout and stderr).
    pub fn logs(&self, name: &str) -> String {
        match self.command().args(["logs", name]).output() {
            Ok(o) => format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(e) => format!("(podman logs {name}: {e})"),
        }
    }

    /// `podman inspect` of a container (the first element).
    pub fn inspect_container(&self, name: &str) -> anyhow::Result<serde_json::Value> {
        let out = self.run("container inspect", &["container", "inspect", name])?;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
        Ok(v.get(0).cloned().unwrap_or_default())
    }

    /// Whether the container is running.
    pub fn running(&self, name: &str) -> bool {
        self.inspect_container(name)
            .ok()
            .and_then(|v| v.pointer("/State/Running").and_then(|r| r.as_bool()))
            .unwrap_or(false)
    }

    /// `podman exec`-free check of a process inside: its `/proc/<pid>/status` line `key`.
    pub fn process_status(&self, name: &str, key: &str) -> anyhow::Result<String> {
        let v = self.inspect_container(name)?;
        let pid = v
            .pointer("/State/Pid")
            .and_then(|p| p.as_u64())
            .filter(|p| *p > 0)
            .with_context(|| format!("{name} has no process"))?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        status
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key}:")))
            .map(|s| s.trim().to_string())
            .with_context(|| format!("no {key} in /proc/{pid}/status"))
    }

    /// Stops and removes a container now.
    pub fn remove(&self, name: &str) {
        let _ = self
            .command()
            .args(["rm", "--force", "--time=2", name])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

impl Drop for Podman {
    fn drop(&mut self) {
        let names = std::mem::take(&mut *self.containers.lock().unwrap_or_else(|p| p.into_inner()));
        for n in names {
            self.remove(&n);
        }
        // Unmounts and deletes every image and layer of this store.
        let _ = self
            .command()
            .args(["system", "reset", "--force"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
