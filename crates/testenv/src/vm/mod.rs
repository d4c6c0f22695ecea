//! The VM deployment on one machine: network namespaces standing in for VMs, a bridge for
//! their LAN, and an LVS-style virtual IP in front of the estimator replicas of one member.
//!
//! ```text
//!   root namespace (the "API server VM")          bridge kvm<N>br, 10.234.<N>.0/24
//!   10.234.<N>.1 on the bridge: DNAT of the API servers' ports (and of the other members'
//!   estimators) to their 127.0.0.1 listeners (route_localnet on the bridge)
//!        |
//!        +-- kvm<N>-sched  10.234.<N>.10/32, routes to .1 and the VIPs only, empty resolv.conf
//!        +-- kvm<N>-lb1    10.234.<N>.2, VIP 10.234.<N>.100:9352 -> r1, r2 :10352 (iptables DNAT,
//!        |                 per-connection `statistic --mode nth`, then MASQUERADE)
//!        +-- kvm<N>-lb2    10.234.<N>.3, VIP 10.234.<N>.101:9452 -> r1, r2 :10352
//!        +-- kvm<N>-r1     10.234.<N>.21, a Go karmada-scheduler-estimator of the member
//!        +-- kvm<N>-r2     10.234.<N>.22, another one
//! ```
//!
//! The Go estimator built for the tests listens on 127.0.0.1 only (`hack/build-tools.sh`
//! patches upstream's `:<port>`); each replica's namespace forwards its own address to it
//! ([`NetNs::forward_to_loopback`]), which is what upstream's binary does by itself on a VM.
//! The scheduler host reaches nothing else: member1's estimator of `hack/local-up.sh` is
//! stopped, and the root namespace's DNAT covers only the API servers and the other members'
//! estimators.
//!
//! [`VmNet`] is the generic part (bridge, namespaces, exposed host ports, balancers). Every
//! change it makes is first written as its undo command to `undo.sh` in its registry
//! directory (`$TMPDIR/karmada-vm-topology/<N>`), so that everything — processes in the
//! namespaces, namespaces, veths, the bridge, the iptables rules, `/etc/netns/<ns>` — is
//! removed by `Drop`, by a watcher process when the test process dies without unwinding, by
//! the next run that finds the registry entry stale, or by `hack/vm-topology-down.sh`.
//!
//! [`VmTopology`] is the standard layout above, over a control plane started by
//! `hack/local-up.sh` with the bridge address in the API servers' certificate
//! ([`VmNet::apiserver_sans`]).

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::{EnvInfo, GoProcess, apply_value, client_from_kubeconfig, e2e_required};

/// First two octets of every topology's /24.
pub const SUBNET_PREFIX: [u8; 2] = [10, 234];

/// Host part of the root namespace's bridge address (API servers, the other members).
pub const HOST: u8 = 1;
/// Host part of the scheduler host.
pub const SCHEDULER_HOST: u8 = 10;
/// Host parts of the two balancers.
pub const BALANCER_HOSTS: [u8; 2] = [2, 3];
/// Host parts of the two VIPs.
pub const VIP_HOSTS: [u8; 2] = [100, 101];
/// Ports the VIPs listen on (the Services' `targetPort`).
pub const VIP_PORTS: [u16; 2] = [9352, 9452];
/// Host parts of the estimator replicas.
pub const REPLICA_HOSTS: [u8; 2] = [21, 22];
/// Port of the estimator replicas (`--server-port`).
pub const ESTIMATOR_PORT: u16 = 10352;
/// `--scheduler-estimator-port`, the Services' `port`.
pub const SERVICE_PORT: u16 = 10352;

/// Directory of the registry of topologies on this machine.
pub fn registry_dir() -> PathBuf {
    std::env::temp_dir().join("karmada-vm-topology")
}

/// Runs a command; its stdout, or an error with the command line and stderr.
fn run<S: AsRef<OsStr>>(program: &str, args: &[S]) -> anyhow::Result<String> {
    if std::env::var_os("KARMADA_VM_TRACE").is_some() {
        let line: Vec<String> = args
            .iter()
            .map(|a| a.as_ref().to_string_lossy().into_owned())
            .collect();
        eprintln!("+ {program} {}", line.join(" "));
    }
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {program}"))?;
    if !out.status.success() {
        let line: Vec<String> = args
            .iter()
            .map(|a| a.as_ref().to_string_lossy().into_owned())
            .collect();
        bail!(
            "{program} {} failed ({}): {}",
            line.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether network namespaces, veths, bridges and iptables NAT can be used here; the reason
/// when not.
pub fn check_support() -> anyhow::Result<()> {
    let probe = format!("kvmprobe-{}", std::process::id());
    run("ip", &["netns", "add", &probe]).context("creating a network namespace (needs root)")?;
    let nat = run(
        "ip",
        &[
            "netns",
            "exec",
            &probe,
            "iptables",
            "-w",
            "-t",
            "nat",
            "-A",
            "PREROUTING",
            "-p",
            "tcp",
            "-m",
            "statistic",
            "--mode",
            "nth",
            "--every",
            "2",
            "--packet",
            "0",
            "-j",
            "DNAT",
            "--to-destination",
            "10.0.0.1:1",
        ],
    );
    let _ = run("ip", &["netns", "del", &probe]);
    nat.context("iptables NAT with the statistic match in a namespace")?;
    if !Path::new("/proc/sys/net/ipv4/conf/all/route_localnet").exists() {
        bail!("no net.ipv4.conf.*.route_localnet sysctl");
    }
    Ok(())
}

/// For tests: `true` when the VM topology can run here. Otherwise prints why and returns
/// `false` (skip) — or panics when `KARMADA_E2E` is set.
pub fn supported_or_skip(test: &str) -> bool {
    match check_support() {
        Ok(()) => true,
        Err(e) if !e2e_required() => {
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: the VM topology needs root with network namespaces and iptables: {e:#}"
            );
            false
        }
        Err(e) => panic!("{test}: the VM topology cannot run here: {e:#}"),
    }
}

/// The undo log: shell commands, run newest first.
struct Undo {
    path: PathBuf,
    steps: Vec<String>,
}

impl Undo {
    fn push(&mut self, step: impl Into<String>) -> anyhow::Result<()> {
        self.steps.push(step.into());
        self.write()
    }

    fn write(&self) -> anyhow::Result<()> {
        let mut script = String::from(
            "#!/usr/bin/env bash\n# Removes a karmada-scheduler-rs VM topology (crates/testenv/src/vm); generated, newest step first.\n",
        );
        for step in self.steps.iter().rev() {
            script.push_str(&format!("{{ {step} ; }} >/dev/null 2>&1 || true\n"));
        }
        let tmp = self.path.with_extension("tmp");
        fs::write(&tmp, script)?;
        fs::rename(&tmp, &self.path)?;
        Ok(())
    }
}

/// Runs the undo script of a registry entry and removes the entry.
fn undo_entry(dir: &Path) -> anyhow::Result<()> {
    let script = dir.join("undo.sh");
    if script.exists() {
        let out = Command::new("bash")
            .arg(&script)
            .stdin(Stdio::null())
            .output()?;
        if !out.status.success() {
            bail!(
                "{} failed: {}",
                script.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    fs::remove_dir_all(dir).or_else(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Ok(())
        } else {
            Err(e)
        }
    })?;
    Ok(())
}

/// Who keeps a registry entry alive.
fn owner_alive(dir: &Path) -> bool {
    let Ok(owner) = fs::read_to_string(dir.join("owner")) else {
        // Being created right now (or a crash between mkdir and the owner file): give it a
        // minute.
        return fs::metadata(dir)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_none_or(|age| age < Duration::from_secs(60));
    };
    let owner = owner.trim();
    if let Some(pid) = owner.strip_prefix("pid ") {
        Path::new("/proc").join(pid).exists()
    } else if let Some(state) = owner.strip_prefix("state ") {
        Path::new(state).exists()
    } else {
        false
    }
}

/// Removes every registered topology whose owner is gone (a test process killed without
/// unwinding, or a state dir deleted). Returns the indexes removed.
pub fn remove_stale() -> anyhow::Result<Vec<u8>> {
    let mut removed = Vec::new();
    let Ok(entries) = fs::read_dir(registry_dir()) else {
        return Ok(removed);
    };
    for entry in entries.flatten() {
        let Some(index) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u8>().ok())
        else {
            continue;
        };
        if !owner_alive(&entry.path()) {
            undo_entry(&entry.path())?;
            removed.push(index);
        }
    }
    Ok(removed)
}

/// Removes the topology with this index (whoever owns it).
pub fn remove(index: u8) -> anyhow::Result<()> {
    undo_entry(&registry_dir().join(index.to_string()))
}

/// Which destinations a namespace can reach.
#[derive(Clone, Debug)]
pub enum Reach {
    /// The whole /24 (a `/24` address).
    Subnet,
    /// Only these hosts (a `/32` address and one host route each).
    Only(Vec<Ipv4Addr>),
}

/// A bridge, the namespaces on it and the NAT rules of the root namespace; removed on drop.
pub struct VmNet {
    index: u8,
    dir: PathBuf,
    undo: Undo,
    persistent: bool,
    torn_down: bool,
}

impl VmNet {
    /// A new network owned by this process: removed on drop, or by a watcher process as soon
    /// as this process is gone.
    pub fn create() -> anyhow::Result<Self> {
        let net = Self::reserve(&format!("pid {}", std::process::id()), false)?;
        let script = net.dir.join("undo.sh");
        let log = fs::File::create(net.dir.join("watcher.log"))?;
        let mut watcher = Command::new("setsid");
        watcher
            .args([
                "bash",
                "-c",
                r#"while kill -0 "$1" 2>/dev/null && [[ -e "$2" ]]; do sleep 1; done
                   if [[ -e "$2" ]]; then bash "$2"; rm -rf "$3"; fi"#,
                "karmada-vm-watcher",
            ])
            .arg(std::process::id().to_string())
            .arg(&script)
            .arg(&net.dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let mut child = watcher.spawn().context("starting the teardown watcher")?;
        // Reaped by a thread so that it does not linger as a zombie when it exits first.
        std::thread::spawn(move || child.wait());
        Ok(net)
    }

    /// A network that outlives this process (`hack/vm-topology-up.sh`): it stays until
    /// [`remove`] is called for its index or `state_dir` disappears and [`remove_stale`] runs.
    pub fn create_persistent(state_dir: &Path) -> anyhow::Result<Self> {
        Self::reserve(&format!("state {}", state_dir.display()), true)
    }

    fn reserve(owner: &str, persistent: bool) -> anyhow::Result<Self> {
        let base = registry_dir();
        fs::create_dir_all(&base)?;
        // Probe namespaces of [`check_support`] whose process died between its two steps.
        for line in run("ip", &["netns", "list"])?.lines() {
            let name = line.split_whitespace().next().unwrap_or_default();
            if let Some(pid) = name.strip_prefix("kvmprobe-")
                && !Path::new("/proc").join(pid).exists()
            {
                let _ = run("ip", &["netns", "del", name]);
            }
        }
        let addresses = run("ip", &["-4", "-o", "addr", "show"])?;
        let links = run("ip", &["-o", "link", "show"])?;
        let start = std::process::id() as usize;
        for k in 0..250usize {
            let index = ((start + k) % 250 + 2) as u8;
            let dir = base.join(index.to_string());
            if dir.exists() {
                if owner_alive(&dir) {
                    continue;
                }
                undo_entry(&dir)?;
            }
            match fs::create_dir(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e).context(format!("creating {}", dir.display())),
            }
            let net = format!(" {}.{}.{index}.", SUBNET_PREFIX[0], SUBNET_PREFIX[1]);
            let bridge = format!("kvm{index}br:");
            if addresses.contains(&net) || links.contains(&bridge) {
                fs::remove_dir(&dir).ok();
                continue;
            }
            fs::write(dir.join("owner"), format!("{owner}\n"))?;
            let mut this = Self {
                index,
                undo: Undo {
                    path: dir.join("undo.sh"),
                    steps: Vec::new(),
                },
                dir,
                persistent,
                torn_down: false,
            };
            this.undo.write()?;
            if let Err(e) = this.make_bridge() {
                this.teardown().ok();
                return Err(e);
            }
            return Ok(this);
        }
        bail!(
            "no free 10.234.x.0/24 for a VM topology (registry {})",
            base.display()
        )
    }

    fn make_bridge(&mut self) -> anyhow::Result<()> {
        let br = self.bridge();
        self.undo.push(format!("ip link del {br}"))?;
        run("ip", &["link", "add", &br, "type", "bridge"])?;
        let cidr = format!("{}/24", self.host_ip());
        run("ip", &["addr", "add", &cidr, "dev", &br])?;
        run("ip", &["link", "set", &br, "up"])?;
        // DNAT to 127.0.0.1 of packets arriving on the bridge.
        fs::write(format!("/proc/sys/net/ipv4/conf/{br}/route_localnet"), "1")
            .context("setting route_localnet on the bridge")?;
        let chain = self.chain();
        self.undo.push(format!("iptables -w -t nat -X {chain}"))?;
        run("iptables", &["-w", "-t", "nat", "-N", &chain])?;
        self.undo.push(format!("iptables -w -t nat -F {chain}"))?;
        let jump = self.jump_rule();
        self.undo.push(format!(
            "iptables -w -t nat -D PREROUTING {}",
            jump.join(" ")
        ))?;
        let mut args = vec!["-w", "-t", "nat", "-A", "PREROUTING"];
        args.extend(jump.iter().map(String::as_str));
        run("iptables", &args)?;
        Ok(())
    }

    fn jump_rule(&self) -> Vec<String> {
        vec![
            "-i".into(),
            self.bridge(),
            "-d".into(),
            format!("{}/32", self.host_ip()),
            "-m".into(),
            "comment".into(),
            "--comment".into(),
            format!("karmada-vm-topology-{}", self.index),
            "-j".into(),
            self.chain(),
        ]
    }

    /// The index `N` of `10.234.N.0/24` and of every name (`kvm<N>...`).
    pub fn index(&self) -> u8 {
        self.index
    }

    /// Prefix of every name of this topology (`kvm<N>`).
    pub fn prefix(&self) -> String {
        format!("kvm{}", self.index)
    }

    /// The bridge's name.
    pub fn bridge(&self) -> String {
        format!("kvm{}br", self.index)
    }

    fn chain(&self) -> String {
        format!("KVM{}", self.index)
    }

    /// `10.234.N.<host>`.
    pub fn ip(&self, host: u8) -> Ipv4Addr {
        Ipv4Addr::new(SUBNET_PREFIX[0], SUBNET_PREFIX[1], self.index, host)
    }

    /// The root namespace's address on the bridge.
    pub fn host_ip(&self) -> Ipv4Addr {
        self.ip(HOST)
    }

    /// The subjectAltNames the API servers' certificate needs for [`host_ip`](Self::host_ip)
    /// (for [`crate::TestEnvBuilder::apiserver_sans`] / `LOCAL_UP_APISERVER_SANS`).
    pub fn apiserver_sans(&self) -> Vec<String> {
        vec![format!("IP:{}", self.host_ip())]
    }

    /// The registry directory (`undo.sh`, `owner`, `watcher.log`).
    pub fn registry_entry(&self) -> &Path {
        &self.dir
    }

    /// Makes `host_ip():port` reach `127.0.0.1:port` of the root namespace.
    pub fn expose_host_port(&mut self, port: u16) -> anyhow::Result<()> {
        let port = port.to_string();
        let to = format!("127.0.0.1:{port}");
        run(
            "iptables",
            &[
                "-w",
                "-t",
                "nat",
                "-A",
                &self.chain(),
                "-p",
                "tcp",
                "--dport",
                &port,
                "-j",
                "DNAT",
                "--to-destination",
                &to,
            ],
        )?;
        Ok(())
    }

    /// A namespace `kvm<N>-<role>` on the bridge with address `.host`, loopback up, an empty
    /// `resolv.conf` and a `hosts` file naming only localhost.
    pub fn add_host(&mut self, role: &str, host: u8, reach: Reach) -> anyhow::Result<NetNs> {
        if role.len() > 7 || role.is_empty() {
            bail!("role {role:?}: 1 to 7 characters (interface names are limited to 15)");
        }
        let ns = format!("{}-{role}", self.prefix());
        let veth = format!("{}{role}", self.prefix());
        let peer = format!("{veth}p");
        self.undo.push(format!(
            "for p in $(ip netns pids {ns}); do kill -9 $p; done; ip netns del {ns}"
        ))?;
        run("ip", &["netns", "add", &ns])?;
        let etc = Path::new("/etc/netns").join(&ns);
        // `ip netns exec` bind-mounts the files of /etc/netns/<ns>; the directory itself goes
        // too when nothing else is in it.
        self.undo.push("rmdir /etc/netns")?;
        self.undo.push(format!("rm -rf {}", etc.display()))?;
        fs::create_dir_all(&etc)?;
        fs::write(
            etc.join("resolv.conf"),
            "# No DNS on this host (karmada-scheduler-rs VM topology).\n",
        )?;
        fs::write(etc.join("hosts"), "127.0.0.1 localhost\n::1 localhost\n")?;
        self.undo.push(format!("ip link del {veth}"))?;
        run(
            "ip",
            &["link", "add", &veth, "type", "veth", "peer", "name", &peer],
        )?;
        run("ip", &["link", "set", &peer, "netns", &ns])?;
        run("ip", &["-n", &ns, "link", "set", &peer, "name", "eth0"])?;
        run(
            "ip",
            &["link", "set", &veth, "master", &self.bridge(), "up"],
        )?;
        run("ip", &["-n", &ns, "link", "set", "lo", "up"])?;
        run("ip", &["-n", &ns, "link", "set", "eth0", "up"])?;
        let ip = self.ip(host);
        match &reach {
            Reach::Subnet => {
                run(
                    "ip",
                    &["-n", &ns, "addr", "add", &format!("{ip}/24"), "dev", "eth0"],
                )?;
            }
            Reach::Only(hosts) => {
                run(
                    "ip",
                    &["-n", &ns, "addr", "add", &format!("{ip}/32"), "dev", "eth0"],
                )?;
                for h in hosts {
                    run(
                        "ip",
                        &["-n", &ns, "route", "add", &format!("{h}/32"), "dev", "eth0"],
                    )?;
                }
            }
        }
        Ok(NetNs { name: ns, ip })
    }

    /// A balancer `kvm<N>-<role>` at `.host`, holding the VIP `.vip_host` and forwarding
    /// `VIP:port` to its backends (none yet; see [`Balancer::set_backends`]).
    pub fn add_balancer(
        &mut self,
        role: &str,
        host: u8,
        vip_host: u8,
        port: u16,
    ) -> anyhow::Result<Balancer> {
        let ns = self.add_host(role, host, Reach::Subnet)?;
        let vip = self.ip(vip_host);
        run(
            "ip",
            &[
                "-n",
                ns.name(),
                "addr",
                "add",
                &format!("{vip}/32"),
                "dev",
                "eth0",
            ],
        )?;
        ns.run(&[
            "sysctl",
            "-qw",
            "net.ipv4.ip_forward=1",
            "net.ipv4.conf.all.send_redirects=0",
            "net.ipv4.conf.eth0.send_redirects=0",
        ])?;
        let balancer = Balancer {
            ns,
            vip,
            port,
            pool: Arc::new(Mutex::new(Pool::default())),
        };
        balancer.render(&[])?;
        Ok(balancer)
    }

    /// Removes everything now (also done on drop, unless persistent).
    pub fn teardown(&mut self) -> anyhow::Result<()> {
        if self.torn_down {
            return Ok(());
        }
        self.torn_down = true;
        undo_entry(&self.dir)
    }
}

impl Drop for VmNet {
    fn drop(&mut self) {
        if !self.persistent
            && let Err(e) = self.teardown()
        {
            eprintln!("testenv::vm: teardown of {}: {e:#}", self.prefix());
        }
    }
}

/// A network namespace of a [`VmNet`].
#[derive(Clone, Debug)]
pub struct NetNs {
    name: String,
    ip: Ipv4Addr,
}

impl NetNs {
    /// `kvm<N>-<role>`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its address on the bridge.
    pub fn ip(&self) -> Ipv4Addr {
        self.ip
    }

    /// `ip netns exec <ns> <program>`, ready for more arguments.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name]).arg(program);
        c
    }

    /// Runs a command in the namespace; its stdout.
    pub fn run(&self, args: &[&str]) -> anyhow::Result<String> {
        let mut all = vec!["netns", "exec", self.name.as_str()];
        all.extend_from_slice(args);
        run("ip", &all)
    }

    /// Makes `<address>:port` reach `127.0.0.1:port` inside the namespace: the Go estimator
    /// the tests build listens on 127.0.0.1 only (`hack/build-tools.sh` patches upstream's
    /// `:<port>` so that the local environment never binds anything else); on a VM, upstream's
    /// listens on every address, which this restores for the namespace's own address.
    pub fn forward_to_loopback(&self, port: u16) -> anyhow::Result<()> {
        self.run(&["sysctl", "-qw", "net.ipv4.conf.eth0.route_localnet=1"])?;
        let port = port.to_string();
        let to = format!("127.0.0.1:{port}");
        self.run(&[
            "iptables",
            "-w",
            "-t",
            "nat",
            "-A",
            "PREROUTING",
            "-i",
            "eth0",
            "-p",
            "tcp",
            "--dport",
            &port,
            "-j",
            "DNAT",
            "--to-destination",
            &to,
        ])?;
        Ok(())
    }

    /// Starts `program args` in the namespace as part of the environment in `state_dir` (log
    /// `logs/<name>.log`, pid file `pids/<name>.pid`, so `hack/local-down.sh` stops it too; the
    /// arguments must mention the state dir), with `env` added to its environment. Killed
    /// when the handle is dropped.
    pub fn spawn(
        &self,
        state_dir: &Path,
        name: &str,
        program: &Path,
        args: &[String],
        env: &[(&str, &str)],
    ) -> anyhow::Result<GoProcess> {
        // `ip netns exec` execs the program: the pid is the program's. Its own process group:
        // a terminal's Ctrl-C goes to the test, whose teardown stops it.
        use std::os::unix::process::CommandExt as _;
        let mut cmd = self.command(program);
        cmd.args(args).envs(env.iter().copied()).process_group(0);
        GoProcess::start(cmd, state_dir, name)
            .with_context(|| format!("starting {} in {}", program.display(), self.name))
    }
}

impl GoProcess {
    /// Sets the addresses [`GoProcess::wait_healthy`] and [`GoProcess::metrics_address`] use.
    pub fn with_addresses(mut self, metrics: Option<String>, health: Option<String>) -> Self {
        self.metrics_address = metrics;
        self.health_address = health;
        self
    }
}

#[derive(Default)]
struct Pool {
    /// What the operator configured.
    configured: Vec<SocketAddrV4>,
    /// What passed the last health check (what the rules forward to).
    active: Vec<SocketAddrV4>,
}

/// An LVS-NAT stand-in: iptables DNAT of `VIP:port` to the backends, one backend per new
/// connection in turn (`statistic --mode nth`), MASQUERADE towards them.
#[derive(Clone)]
pub struct Balancer {
    ns: NetNs,
    vip: Ipv4Addr,
    port: u16,
    pool: Arc<Mutex<Pool>>,
}

impl Balancer {
    /// Its namespace.
    pub fn ns(&self) -> &NetNs {
        &self.ns
    }

    /// The VIP.
    pub fn vip(&self) -> Ipv4Addr {
        self.vip
    }

    /// The port the VIP listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `VIP:port`.
    pub fn address(&self) -> SocketAddrV4 {
        SocketAddrV4::new(self.vip, self.port)
    }

    /// Configures the real servers (all active until a health check says otherwise).
    pub fn set_backends(&self, backends: &[SocketAddrV4]) -> anyhow::Result<()> {
        self.render(backends)?;
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        pool.configured = backends.to_vec();
        pool.active = backends.to_vec();
        Ok(())
    }

    /// The backends connections currently go to.
    pub fn active(&self) -> Vec<SocketAddrV4> {
        self.pool
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .active
            .clone()
    }

    fn render(&self, backends: &[SocketAddrV4]) -> anyhow::Result<()> {
        let mut rules = String::from(
            "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n",
        );
        let n = backends.len();
        for (i, b) in backends.iter().enumerate() {
            let every = if i + 1 < n {
                format!("-m statistic --mode nth --every {} --packet 0 ", n - i)
            } else {
                String::new()
            };
            rules.push_str(&format!(
                "-A PREROUTING -d {}/32 -p tcp -m tcp --dport {} {every}-j DNAT --to-destination {b}\n",
                self.vip, self.port
            ));
        }
        rules.push_str("-A POSTROUTING -m conntrack --ctstate DNAT -j MASQUERADE\nCOMMIT\n");
        let mut child = self
            .ns
            .command("iptables-restore")
            .arg("-w")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        use std::io::Write as _;
        child
            .stdin
            .take()
            .ok_or_else(|| anyhow!("iptables-restore stdin"))?
            .write_all(rules.as_bytes())?;
        let out = child.wait_with_output()?;
        if !out.status.success() {
            bail!(
                "iptables-restore in {}: {}\n{rules}",
                self.ns.name,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    }

    /// One health check (as keepalived's `TCP_CHECK`): a TCP connect to every configured
    /// backend; the pool becomes those that accepted. Returns a line per change.
    pub async fn check_health(&self) -> anyhow::Result<Vec<String>> {
        let configured = self
            .pool
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .configured
            .clone();
        let mut alive = Vec::new();
        for b in &configured {
            let ok = tokio::time::timeout(
                Duration::from_millis(500),
                tokio::net::TcpStream::connect(*b),
            )
            .await
            .is_ok_and(|r| r.is_ok());
            if ok {
                alive.push(*b);
            }
        }
        let before = self.active();
        if alive == before {
            return Ok(Vec::new());
        }
        self.render(&alive)?;
        let mut changes = Vec::new();
        for b in before.iter().filter(|b| !alive.contains(b)) {
            changes.push(format!(
                "{}: {b} failed its health check, removed",
                self.ns.name
            ));
        }
        for b in alive.iter().filter(|b| !before.contains(b)) {
            changes.push(format!("{}: {b} healthy, added", self.ns.name));
        }
        self.pool.lock().unwrap_or_else(|e| e.into_inner()).active = alive;
        Ok(changes)
    }

    /// Health checks every `every` on a task (printing changes) until the handle is dropped.
    pub fn spawn_health_checker(&self, every: Duration) -> HealthChecker {
        let this = self.clone();
        let task = tokio::spawn(async move {
            loop {
                match this.check_health().await {
                    Ok(changes) => {
                        for c in changes {
                            eprintln!("[health check] {c}");
                        }
                    }
                    Err(e) => eprintln!("[health check] {}: {e:#}", this.ns.name),
                }
                tokio::time::sleep(every).await;
            }
        });
        HealthChecker { task }
    }

    /// Takes the balancer off the network (`up = false`: its interface goes down, so the VIP
    /// silently stops answering, as a retired or failed machine) or back on.
    pub fn set_link(&self, up: bool) -> anyhow::Result<()> {
        let state = if up { "up" } else { "down" };
        // Addresses (and the VIP) stay while the link is down; the /24 route comes back with it.
        run("ip", &["-n", &self.ns.name, "link", "set", "eth0", state])?;
        Ok(())
    }

    /// Its NAT rules with packet counters (`iptables -t nat -L -v -n -x`), for reports.
    pub fn rules(&self) -> anyhow::Result<String> {
        self.ns.run(&[
            "iptables",
            "-w",
            "-t",
            "nat",
            "-L",
            "PREROUTING",
            "-v",
            "-n",
            "-x",
        ])
    }
}

/// A running health checker; stopped on drop.
pub struct HealthChecker {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for HealthChecker {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Rewrites the server of a kubeconfig from `https://127.0.0.1:<port>` to `host:<port>`.
fn kubeconfig_via(from: &Path, to: &Path, host: Ipv4Addr) -> anyhow::Result<()> {
    let text = fs::read_to_string(from).with_context(|| format!("reading {}", from.display()))?;
    if !text.contains("server: https://127.0.0.1:") {
        bail!("{}: no server https://127.0.0.1:<port>", from.display());
    }
    fs::write(
        to,
        text.replace(
            "server: https://127.0.0.1:",
            &format!("server: https://{host}:"),
        ),
    )?;
    Ok(())
}

/// What `hack/vm-topology-up.sh` prints and `-down.sh` reads (`<state>/vm/topology.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TopologyInfo {
    pub index: u8,
    pub bridge: String,
    pub host_ip: Ipv4Addr,
    pub scheduler_host: String,
    pub scheduler_host_ip: Ipv4Addr,
    /// Kubeconfig of the Karmada API server through the bridge (for the scheduler host).
    pub kubeconfig: PathBuf,
    /// The member behind the VIPs.
    pub member: String,
    /// `(namespace, VIP:port)` of each balancer.
    pub balancers: Vec<(String, SocketAddrV4)>,
    /// `(namespace, address)` of each estimator replica.
    pub replicas: Vec<(String, SocketAddrV4)>,
    pub registry_entry: PathBuf,
}

/// One estimator replica of the member behind the VIPs.
struct Replica {
    ns: NetNs,
    process: Option<GoProcess>,
    /// Processes this replica has had; the `g`-th logs to `vm-<member>-estimator-r<i>-<g>.log`.
    generation: usize,
}

/// The standard layout (module docs) over a running control plane.
pub struct VmTopology {
    state_dir: PathBuf,
    estimator: PathBuf,
    member: String,
    member_kubeconfig: PathBuf,
    kubeconfig: PathBuf,
    scheduler_host: NetNs,
    balancers: Vec<Balancer>,
    replicas: Vec<Replica>,
    checkers: Vec<HealthChecker>,
    // Last: dropped after the processes in its namespaces are killed.
    net: VmNet,
}

impl VmTopology {
    /// Builds the layout on `net` for the control plane `info` (whose API server certificate
    /// includes [`VmNet::apiserver_sans`]): the first member's estimator is replaced by two
    /// replicas behind two balancers and its Service points at the first VIP; the other
    /// members' Services point at their estimators through the bridge address.
    pub async fn start(net: VmNet, info: &EnvInfo, tools_bin: &Path) -> anyhow::Result<Self> {
        let mut net = net;
        let member = info
            .members
            .first()
            .ok_or_else(|| anyhow!("the VM topology needs at least one member"))?
            .clone();
        let dir = info.state_dir.join("vm");
        fs::create_dir_all(&dir)?;
        // The root namespace's listeners the other hosts need.
        net.expose_host_port(info.karmada_apiserver_port)?;
        for m in &info.members {
            net.expose_host_port(m.apiserver_port)?;
            if m.name != member.name {
                net.expose_host_port(m.estimator_port)?;
            }
        }
        let host = net.host_ip();
        let kubeconfig = dir.join("karmada.kubeconfig");
        kubeconfig_via(&info.kubeconfig, &kubeconfig, host)?;
        let member_kubeconfig = dir.join(format!("{}.kubeconfig", member.name));
        kubeconfig_via(&member.kubeconfig, &member_kubeconfig, host)?;

        let vips: Vec<Ipv4Addr> = VIP_HOSTS.iter().map(|h| net.ip(*h)).collect();
        let mut reach = vec![host];
        reach.extend(&vips);
        let scheduler_host = net.add_host("sched", SCHEDULER_HOST, Reach::Only(reach))?;
        let mut replicas = Vec::new();
        for (i, h) in REPLICA_HOSTS.iter().enumerate() {
            let ns = net.add_host(&format!("r{}", i + 1), *h, Reach::Subnet)?;
            ns.forward_to_loopback(ESTIMATOR_PORT)?;
            replicas.push(Replica {
                ns,
                process: None,
                generation: 0,
            });
        }
        let backends: Vec<SocketAddrV4> = replicas
            .iter()
            .map(|r| SocketAddrV4::new(r.ns.ip(), ESTIMATOR_PORT))
            .collect();
        let mut balancers = Vec::new();
        for i in 0..2 {
            let lb = net.add_balancer(
                &format!("lb{}", i + 1),
                BALANCER_HOSTS[i],
                VIP_HOSTS[i],
                VIP_PORTS[i],
            )?;
            lb.set_backends(&backends)?;
            balancers.push(lb);
        }
        // Nothing but the replicas serves this member from now on.
        crate::faults::signal(member.estimator_pid, "KILL");

        let mut topology = Self {
            state_dir: info.state_dir.clone(),
            estimator: tools_bin.join("karmada-scheduler-estimator"),
            member: member.name.clone(),
            member_kubeconfig,
            kubeconfig,
            scheduler_host,
            balancers,
            replicas,
            checkers: Vec::new(),
            net,
        };
        topology.start_replicas(&[]).await?;

        let client = client_from_kubeconfig(&info.kubeconfig).await?;
        let lb = topology.balancers[0].address();
        set_estimator_service(&client, &member.name, &lb.ip().to_string(), lb.port(), None).await?;
        for m in info.members.iter().filter(|m| m.name != member.name) {
            set_estimator_service(&client, &m.name, &host.to_string(), m.estimator_port, None)
                .await?;
        }
        let description = topology.info();
        fs::write(
            dir.join("topology.json"),
            serde_json::to_vec_pretty(&description)?,
        )?;
        Ok(topology)
    }

    /// The description written to `<state>/vm/topology.json`.
    pub fn info(&self) -> TopologyInfo {
        TopologyInfo {
            index: self.net.index(),
            bridge: self.net.bridge(),
            host_ip: self.net.host_ip(),
            scheduler_host: self.scheduler_host.name().to_string(),
            scheduler_host_ip: self.scheduler_host.ip(),
            kubeconfig: self.kubeconfig.clone(),
            member: self.member.clone(),
            balancers: self
                .balancers
                .iter()
                .map(|b| (b.ns().name().to_string(), b.address()))
                .collect(),
            replicas: self
                .replicas
                .iter()
                .map(|r| {
                    (
                        r.ns.name().to_string(),
                        SocketAddrV4::new(r.ns.ip(), ESTIMATOR_PORT),
                    )
                })
                .collect(),
            registry_entry: self.net.registry_entry().to_path_buf(),
        }
    }

    /// The network (for more hosts or exposed ports).
    pub fn net(&mut self) -> &mut VmNet {
        &mut self.net
    }

    /// The member whose estimator is behind the VIPs.
    pub fn member(&self) -> &str {
        &self.member
    }

    /// Kubeconfig of the Karmada API server through the bridge address.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The scheduler host.
    pub fn scheduler_host(&self) -> &NetNs {
        &self.scheduler_host
    }

    /// Balancer `i` (0: `lb1`, the one the Service names at first; 1: `lb2`).
    pub fn balancer(&self, i: usize) -> &Balancer {
        &self.balancers[i]
    }

    /// Number of estimator replicas.
    pub fn replica_count(&self) -> usize {
        self.replicas.len()
    }

    /// Name of replica `i` (`r1`, `r2`).
    pub fn replica_name(&self, i: usize) -> String {
        format!("r{}", i + 1)
    }

    /// Health checks of both balancers every 300 ms until the topology is dropped.
    pub fn start_health_checks(&mut self) {
        let every = Duration::from_millis(300);
        self.checkers = self
            .balancers
            .iter()
            .map(|b| b.spawn_health_checker(every))
            .collect();
    }

    fn replica_process_name(&self, i: usize) -> String {
        format!(
            "vm-{}-estimator-{}-{}",
            self.member,
            self.replica_name(i),
            self.replicas[i].generation
        )
    }

    /// (Re)starts every replica with `extra` flags (e.g. [`crate::pki::estimator_server_flags`])
    /// and waits until they accept connections.
    pub async fn start_replicas(&mut self, extra: &[String]) -> anyhow::Result<()> {
        for i in 0..self.replicas.len() {
            self.start_replica(i, extra)?;
        }
        for i in 0..self.replicas.len() {
            self.wait_replica(i).await?;
        }
        Ok(())
    }

    /// (Re)starts replica `i` with `extra` flags; does not wait.
    pub fn start_replica(&mut self, i: usize, extra: &[String]) -> anyhow::Result<()> {
        self.kill_replica(i);
        self.replicas[i].generation += 1;
        let name = self.replica_process_name(i);
        let mut args = vec![
            format!("--kubeconfig={}", self.member_kubeconfig.display()),
            format!("--cluster-name={}", self.member),
            format!("--server-port={ESTIMATOR_PORT}"),
            "--health-probe-bind-address=127.0.0.1:10351".to_string(),
            "--metrics-bind-address=127.0.0.1:18080".to_string(),
            "--v=2".to_string(),
        ];
        args.extend(extra.iter().cloned());
        let p = self.replicas[i]
            .ns
            .spawn(&self.state_dir, &name, &self.estimator, &args, &[])?;
        self.replicas[i].process = Some(p);
        Ok(())
    }

    /// Waits until replica `i` accepts TCP connections on its gRPC port.
    pub async fn wait_replica(&mut self, i: usize) -> anyhow::Result<()> {
        let addr = SocketAddrV4::new(self.replicas[i].ns.ip(), ESTIMATOR_PORT);
        let name = self.replica_name(i);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(p) = self.replicas[i].process.as_mut()
                && let Some(status) = p.try_wait()?
            {
                bail!(
                    "estimator replica {name} exited ({status}):\n{}",
                    p.log_tail(20)
                );
            }
            if tokio::net::TcpStream::connect(addr).await.is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("estimator replica {name} not serving on {addr}");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// SIGKILLs replica `i` (its namespace stays).
    pub fn kill_replica(&mut self, i: usize) {
        if let Some(mut p) = self.replicas[i].process.take() {
            p.kill();
        }
    }

    /// Everything replica `i` logged, all its processes so far.
    pub fn replica_log(&self, i: usize) -> String {
        let mut text = String::new();
        for g in 1..=self.replicas[i].generation {
            let name = format!("vm-{}-estimator-{}-{g}", self.member, self.replica_name(i));
            text.push_str(
                &fs::read_to_string(self.state_dir.join("logs").join(format!("{name}.log")))
                    .unwrap_or_default(),
            );
        }
        text
    }

    /// Starts a program on the scheduler host (see [`NetNs::spawn`]).
    pub fn spawn_on_scheduler_host(
        &self,
        name: &str,
        program: &Path,
        args: &[String],
        env: &[(&str, &str)],
    ) -> anyhow::Result<GoProcess> {
        self.scheduler_host
            .spawn(&self.state_dir, name, program, args, env)
    }

    /// Removes the network now (also done on drop).
    pub fn teardown(mut self) -> anyhow::Result<()> {
        self.checkers.clear();
        for i in 0..self.replicas.len() {
            self.kill_replica(i);
        }
        self.net.teardown()
    }
}

/// `args` without these flags (both `--flag value` and `--flag=value`), e.g. to start another
/// instance of a process read with [`crate::faults::command_line`] on other ports.
pub fn without_flags(args: &[String], flags: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip_value = false;
    for a in args {
        if skip_value {
            skip_value = false;
            continue;
        }
        if flags.contains(&a.as_str()) {
            skip_value = true;
            continue;
        }
        if flags.iter().any(|f| a.starts_with(&format!("{f}="))) {
            continue;
        }
        out.push(a.clone());
    }
    out
}

/// Creates or updates the `ExternalName` estimator Service of `cluster` in `karmada-system`:
/// `externalName`, `port` [`SERVICE_PORT`] → `targetPort`, and the TLS server name annotation
/// of this project when given (removed when `None`).
pub async fn set_estimator_service(
    client: &kube::Client,
    cluster: &str,
    external_name: &str,
    target_port: u16,
    tls_server_name: Option<&str>,
) -> anyhow::Result<()> {
    let mut annotations = BTreeMap::new();
    if let Some(n) = tls_server_name {
        annotations.insert(
            "estimator.karmada-scheduler-rs.io/tls-server-name".to_string(),
            n.to_string(),
        );
    }
    apply_value(
        client,
        &json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": format!("karmada-scheduler-estimator-{cluster}"),
                         "namespace": "karmada-system", "labels": {"cluster": cluster},
                         "annotations": annotations},
            "spec": {"type": "ExternalName", "externalName": external_name,
                     "ports": [{"name": "grpc", "protocol": "TCP", "port": SERVICE_PORT,
                                "targetPort": target_port}]}
        }),
    )
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undo_runs_newest_first_and_tolerates_failures() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let out = dir.join("out");
        let mut undo = Undo {
            path: dir.join("undo.sh"),
            steps: Vec::new(),
        };
        undo.push(format!("echo older >> {}", out.display()))
            .unwrap();
        undo.push("false").unwrap();
        undo.push(format!("echo newer >> {}", out.display()))
            .unwrap();
        let script = fs::read_to_string(&undo.path).unwrap();
        assert!(script.find("newer").unwrap() < script.find("older").unwrap());
        let status = Command::new("bash").arg(&undo.path).status().unwrap();
        assert!(status.success());
        assert_eq!(fs::read_to_string(&out).unwrap(), "newer\nolder\n");
    }

    #[test]
    fn flags_are_removed_in_both_spellings() {
        let args: Vec<String> = ["--a", "1", "--b=2", "--c", "3", "--keep", "x"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            without_flags(&args, &["--a", "--b", "--c"]),
            ["--keep", "x"]
        );
    }

    #[test]
    fn kubeconfig_server_is_rewritten() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let from = dir.join("a");
        fs::write(
            &from,
            "clusters:\n- cluster:\n    server: https://127.0.0.1:6443\n",
        )
        .unwrap();
        kubeconfig_via(&from, &dir.join("b"), Ipv4Addr::new(10, 234, 7, 1)).unwrap();
        assert!(
            fs::read_to_string(dir.join("b"))
                .unwrap()
                .contains("server: https://10.234.7.1:6443")
        );
    }
}
