//! The two scheduler processes: how they are started (identical flags), probed, and measured
//! (`/proc/<pid>/status` for memory, `/proc/<pid>/stat` for CPU time).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, bail};
use testenv::{GoProcess, TestEnv, free_port};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::time::Instant;

/// One running scheduler.
pub struct Sched {
    /// `rust` or `go`.
    pub label: &'static str,
    /// Its `--scheduler-name`, also `spec.schedulerName` of the bindings it owns.
    pub name: String,
    pub metrics: String,
    pub health: String,
    pub proc: GoProcess,
}

/// Flags both schedulers get, besides their own name and ports.
#[derive(Clone, Debug)]
pub struct CommonFlags {
    pub qps: f64,
    pub burst: u32,
    pub estimator: bool,
    pub extra: Vec<String>,
}

impl Sched {
    /// Starts `binary` against `env` with the common flags.
    pub fn spawn(
        env: &TestEnv,
        label: &'static str,
        binary: &Path,
        flags: &CommonFlags,
    ) -> anyhow::Result<Sched> {
        let name = format!("bench-{label}");
        let metrics = format!("127.0.0.1:{}", free_port());
        let health = format!("127.0.0.1:{}", free_port());
        let mut args = vec![
            format!("--kubeconfig={}", env.kubeconfig().display()),
            "--leader-elect=false".to_string(),
            format!("--scheduler-name={name}"),
            format!("--kube-api-qps={}", flags.qps),
            format!("--kube-api-burst={}", flags.burst),
            format!("--enable-scheduler-estimator={}", flags.estimator),
            format!("--metrics-bind-address={metrics}"),
            format!("--health-probe-bind-address={health}"),
        ];
        args.extend(flags.extra.iter().cloned());
        if label == "rust" {
            // Side by side with the Go v1.18.2 scheduler: ours with v1.18.2's queue.
            args.extend(testenv::AS_V1_18_2.iter().map(|s| s.to_string()));
        }
        let proc = env.spawn_process(&format!("{label}-scheduler"), binary, &args)?;
        Ok(Sched {
            label,
            name,
            metrics,
            health,
            proc,
        })
    }

    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }

    /// Waits for `/healthz` to answer 200.
    pub async fn wait_healthy(&mut self, timeout: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            self.check_alive()?;
            if let Ok((200, _)) = http_get(&self.health, "/healthz").await {
                return Ok(());
            }
            if Instant::now() > deadline {
                let log = self.proc.log_tail(30);
                bail!(
                    "{} scheduler not healthy after {timeout:?}:\n{log}",
                    self.label
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The samples of its `/metrics`.
    pub async fn scrape(&self) -> anyhow::Result<Vec<crate::promtext::Sample>> {
        scrape(&self.metrics).await
    }

    /// Fails if the process has exited.
    pub fn check_alive(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.proc.try_wait()? {
            bail!(
                "{} scheduler exited ({status}):\n{}",
                self.label,
                self.proc.log_tail(30)
            );
        }
        Ok(())
    }
}

/// A plain HTTP/1.0 GET on loopback: `(status code, body)`.
pub async fn http_get(addr: &str, path: &str) -> anyhow::Result<(u16, String)> {
    let mut s = tokio::time::timeout(Duration::from_secs(5), tokio::net::TcpStream::connect(addr))
        .await??;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await?;
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut buf)).await??;
    let text = String::from_utf8_lossy(&buf);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow!("malformed HTTP answer from {addr}{path}"))?;
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| anyhow!("no status code from {addr}{path}"))?;
    Ok((code, body.to_string()))
}

/// The samples of the `/metrics` at `addr`.
pub async fn scrape(addr: &str) -> anyhow::Result<Vec<crate::promtext::Sample>> {
    match http_get(addr, "/metrics").await? {
        (200, body) => Ok(crate::promtext::parse(&body)),
        (code, _) => Err(anyhow!("{addr}/metrics answered {code}")),
    }
}

/// Numeric fields of `/proc/<pid>/status` (`VmRSS:`, `Threads:`, ...), in the order asked.
fn status_fields<const N: usize>(pid: u32, names: [&str; N]) -> Option<[u64; N]> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let mut out = [0; N];
    for (o, name) in out.iter_mut().zip(names) {
        *o = s
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())?;
    }
    Some(out)
}

/// Memory of a process in KiB: `(VmRSS, VmHWM)`.
pub fn memory_kib(pid: u32) -> Option<(u64, u64)> {
    status_fields(pid, ["VmRSS:", "VmHWM:"]).map(|[rss, hwm]| (rss, hwm))
}

/// Threads of a process (`Threads:` of `/proc/<pid>/status`).
pub fn threads(pid: u32) -> Option<u64> {
    status_fields(pid, ["Threads:"]).map(|[n]| n)
}

/// Open file descriptors of a process (entries of `/proc/<pid>/fd`).
pub fn open_fds(pid: u32) -> Option<usize> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ok()
        .map(|d| d.count())
}

/// User + system CPU time of a process, in seconds (clock ticks of 1/100 s).
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces: fields are counted after its closing parenthesis.
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// One sampling instant: a figure (RSS in KiB, connections) of each process, in the order given.
type RssRow = (Instant, Vec<u64>);

/// Periodic samples of a figure of a set of processes (RSS unless told otherwise).
#[derive(Clone, Default)]
pub struct RssSampler {
    samples: Arc<Mutex<Vec<RssRow>>>,
}

impl RssSampler {
    /// Samples the RSS of `pids` every `every` until the returned handle is aborted.
    pub fn start(pids: Vec<u32>, every: Duration) -> (RssSampler, tokio::task::JoinHandle<()>) {
        Self::start_with(pids, every, |p| memory_kib(p).map(|m| m.0).unwrap_or(0))
    }

    /// Samples `figure` of each of `pids` every `every` until the returned handle is aborted.
    pub fn start_with(
        pids: Vec<u32>,
        every: Duration,
        figure: impl Fn(u32) -> u64 + Send + 'static,
    ) -> (RssSampler, tokio::task::JoinHandle<()>) {
        let s = RssSampler::default();
        let samples = s.samples.clone();
        let h = tokio::spawn(async move {
            loop {
                let row = pids.iter().map(|p| figure(*p)).collect();
                samples
                    .lock()
                    .expect("sampler lock")
                    .push((Instant::now(), row));
                tokio::time::sleep(every).await;
            }
        });
        (s, h)
    }

    /// Mean RSS (KiB) of process `idx` over samples taken in `[from, to]`.
    pub fn mean_between(&self, idx: usize, from: Instant, to: Instant) -> Option<u64> {
        let s = self.samples.lock().expect("sampler lock");
        let v: Vec<u64> = s
            .iter()
            .filter(|(t, _)| *t >= from && *t <= to)
            .map(|(_, r)| r[idx])
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<u64>() / v.len() as u64)
    }

    /// Highest sampled RSS (KiB) of process `idx`.
    pub fn max(&self, idx: usize) -> u64 {
        let s = self.samples.lock().expect("sampler lock");
        s.iter().map(|(_, r)| r[idx]).max().unwrap_or(0)
    }
}

/// Established TCP connections of process `pid` whose remote port is one of `ports` (on any
/// address): its open estimator connections when `ports` are the estimators' ports. Read from
/// `/proc/<pid>/fd` (the socket inodes it holds) and `/proc/<pid>/net/tcp{,6}`.
pub fn connections_to(pid: u32, ports: &std::collections::HashSet<u16>) -> usize {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return 0;
    };
    let inodes: std::collections::HashSet<String> = fds
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().to_string();
            l.strip_prefix("socket:[")
                .and_then(|r| r.strip_suffix(']'))
                .map(str::to_string)
        })
        .collect();
    let mut n = 0;
    for table in ["tcp", "tcp6"] {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            let (Some(remote), Some(state), Some(inode)) = (f.get(2), f.get(3), f.get(9)) else {
                continue;
            };
            let port = remote
                .rsplit_once(':')
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            if *state == "01" && port.is_some_and(|p| ports.contains(&p)) && inodes.contains(*inode)
            {
                n += 1;
            }
        }
    }
    n
}

/// This process's soft limit of open files (`Max open files` in /proc/self/limits; 1024 when
/// unreadable), which the processes it starts inherit.
pub fn open_files_limit() -> usize {
    std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|l| {
            l.lines()
                .find(|line| line.starts_with("Max open files"))
                .and_then(|line| line.split_whitespace().nth(3)?.parse().ok())
        })
        .unwrap_or(1024)
}

/// The 1-minute load average (`/proc/loadavg`), 0 if unreadable.
pub fn load_1m() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}
