//! `vm-topology up|down|clean`: the VM topology of `testenv::vm` for people
//! (`hack/vm-topology-up.sh`, `hack/vm-topology-down.sh`).
//!
//! * `up [--state-dir DIR] [--members N]`: a control plane (`hack/local-up.sh`, N members,
//!   default 2) whose API server certificate names the bridge address, then the namespaces,
//!   the two balancers and the first member's two estimator replicas. Everything stays until
//!   `down`.
//! * `down [--state-dir DIR]`: removes the topology of that state dir, then the control plane.
//! * `clean`: removes every topology whose owner (test process or state dir) is gone.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context as _, bail};
use testenv::vm::{self, TopologyInfo, VmNet, VmTopology};
use testenv::{EnvInfo, Tools, repo_root};

fn usage() -> ! {
    eprintln!(
        "usage: vm-topology up [--state-dir DIR] [--members N] | down [--state-dir DIR] | clean"
    );
    std::process::exit(2)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let command = args.next().unwrap_or_else(|| usage());
    let mut state_dir = repo_root().join("_output/vm");
    let mut members = 2usize;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--state-dir" => state_dir = PathBuf::from(args.next().unwrap_or_else(|| usage())),
            "--members" => {
                members = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            _ => usage(),
        }
    }
    match command.as_str() {
        "up" => up(state_dir, members).await,
        "down" => down(state_dir),
        "clean" => {
            let removed = vm::remove_stale()?;
            eprintln!("removed stale topologies: {removed:?}");
            Ok(())
        }
        _ => usage(),
    }
}

async fn up(state_dir: PathBuf, members: usize) -> anyhow::Result<()> {
    if state_dir.join("vm/topology.json").exists() {
        bail!(
            "{} already has a VM topology; run hack/vm-topology-down.sh --state-dir {} first",
            state_dir.display(),
            state_dir.display()
        );
    }
    vm::check_support()?;
    let tools = Tools::ensure()?;
    std::fs::create_dir_all(&state_dir)?;
    let state_dir = state_dir.canonicalize()?;
    let net = VmNet::create_persistent(&state_dir)?;
    let status = Command::new(repo_root().join("hack/local-up.sh"))
        .arg("--state-dir")
        .arg(&state_dir)
        .args(["--members", &members.to_string(), "--no-build"])
        .env("KARMADA_TOOLS_BIN", tools.bin_dir())
        .env("LOCAL_UP_APISERVER_SANS", net.apiserver_sans().join(","))
        .status()
        .context("running hack/local-up.sh")?;
    if !status.success() {
        vm::remove(net.index())?;
        bail!("hack/local-up.sh failed ({status})");
    }
    let info: EnvInfo = serde_json::from_slice(&std::fs::read(state_dir.join("env.json"))?)?;
    let topology = match VmTopology::start(net, &info, tools.bin_dir()).await {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e:#}; removing what was made");
            down(state_dir)?;
            bail!("the VM topology could not be built");
        }
    };
    let t = topology.info();
    // Everything stays up after this process: the replicas run on, the network is persistent.
    std::mem::forget(topology);
    let sched = &t.scheduler_host;
    println!(
        "\nVM topology {} is up (state {}).\n\
         \x20 scheduler host: ip netns exec {sched} ...   ({}; routes to {} and the VIPs only; no DNS)\n\
         \x20 kubeconfig for it: {}",
        t.index,
        state_dir.display(),
        t.scheduler_host_ip,
        t.host_ip,
        t.kubeconfig.display()
    );
    for (ns, vip) in &t.balancers {
        println!("  balancer {ns}: VIP {vip}");
    }
    for (ns, addr) in &t.replicas {
        println!("  estimator replica of {}: {ns} at {addr}", t.member);
    }
    println!(
        "\n  try: ip netns exec {sched} target/debug/karmada-scheduler --kubeconfig={} \\\n         --leader-elect=false --enable-scheduler-estimator=true \\\n         --metrics-bind-address={ip}:8080 --health-probe-bind-address={ip}:10351",
        t.kubeconfig.display(),
        ip = t.scheduler_host_ip
    );
    println!(
        "  stop with: hack/vm-topology-down.sh --state-dir {}",
        state_dir.display()
    );
    Ok(())
}

fn down(state_dir: PathBuf) -> anyhow::Result<()> {
    let description = state_dir.join("vm/topology.json");
    match std::fs::read(&description) {
        Ok(bytes) => {
            let t: TopologyInfo = serde_json::from_slice(&bytes)?;
            vm::remove(t.index)?;
            eprintln!("removed VM topology {}", t.index);
        }
        Err(_) => eprintln!("no {}", description.display()),
    }
    let status = Command::new(repo_root().join("hack/local-down.sh"))
        .arg("--state-dir")
        .arg(&state_dir)
        .status()?;
    // A topology whose state dir is gone now is stale.
    vm::remove_stale()?;
    if !status.success() {
        bail!("hack/local-down.sh failed ({status})");
    }
    Ok(())
}
