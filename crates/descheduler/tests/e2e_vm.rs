//! The descheduler in the VM deployment (docs/deploy-vm.md): run on a "scheduler host"
//! network namespace without DNS, reaching member1's real Go estimators only through an
//! LVS-style VIP (two replicas behind iptables DNAT) and member2's through the API server
//! host's bridge address (`testenv::vm`). Ours and the Go karmada-descheduler v1.18.2 run in
//! turn on twin namespaces and must give back the same replicas; then member1's Service moves
//! to a second balancer and the first is retired while each runs: ours follows (asserted),
//! what Go does is reported. Last, the replicas serve mTLS with a certificate for a DNS name
//! and ours, with the reference's TLS flags and `--scheduler-estimator-tls-server-name`,
//! still gets its answers through the VIP.
//!
//! Needs root (namespaces, iptables); skipped like the other end-to-end tests when the Go
//! binaries are absent and KARMADA_E2E is unset (fails instead under KARMADA_E2E).

use std::io::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::bail;
use karmada_api::work::ResourceBinding;
use kube::api::Api;
use serde_json::json;
use testenv::pki;
use testenv::vm::{self, VmNet, VmTopology, set_estimator_service};
use testenv::workload::{PodState, deployment_with_pods};
use testenv::{GoProcess, TestEnv, apply_value, tools_or_skip};

const OVERALL: Duration = Duration::from_secs(240);
const AGGREGATED: &str = r#"{"replicaScheduling":{"replicaSchedulingType":"Divided","replicaDivisionPreference":"Aggregated"}}"#;
const OLD: PodState = PodState::UnschedulableFor(Duration::from_secs(600));

fn say(text: &str) {
    let _ = writeln!(std::io::stderr(), "{text}");
}

/// The binding `ns/web` (the namespace and member workloads exist): `clusters` are (cluster,
/// assigned, ready, unschedulable Pods in that member).
async fn case(env: &TestEnv, ns: &str, clusters: &[(&str, i32, i32, usize)]) -> anyhow::Result<()> {
    let client = env.client().await?;
    let spec: Vec<_> = clusters
        .iter()
        .map(|(c, n, _, _)| json!({"name": c, "replicas": n}))
        .collect();
    let status: Vec<_> = clusters
        .iter()
        .map(|(c, _, ready, _)| {
            json!({"clusterName": c, "applied": true,
            "status": {"replicas": ready, "readyReplicas": ready, "availableReplicas": ready}})
        })
        .collect();
    let total: i32 = clusters.iter().map(|(_, n, _, _)| n).sum();
    apply_value(
        &client,
        &json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "web", "namespace": ns,
                         "annotations": {"policy.karmada.io/applied-placement": AGGREGATED}},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment",
                                  "namespace": ns, "name": "web"},
                     "replicas": total, "clusters": spec},
            "status": {"aggregatedStatus": status}
        }),
    )
    .await?;
    Ok(())
}

/// `spec.clusters` replicas of `ns/web`.
async fn replicas(env: &TestEnv, ns: &str) -> anyhow::Result<Vec<i32>> {
    let api: Api<ResourceBinding> = Api::namespaced(env.client().await?, ns);
    Ok(api
        .get("web")
        .await?
        .spec
        .clusters
        .iter()
        .map(|c| c.replicas)
        .collect())
}

/// Waits until `ns/web` has `want` (`Ok(true)`), or `patience` passes (`Ok(false)`).
async fn wait_replicas(
    env: &TestEnv,
    ns: &str,
    want: &[i32],
    patience: Duration,
    p: &mut GoProcess,
) -> anyhow::Result<(bool, Vec<i32>)> {
    let start = Instant::now();
    loop {
        if let Some(status) = p.try_wait()? {
            bail!("{} exited ({status}):\n{}", p.name(), p.log_tail(30));
        }
        let got = replicas(env, ns).await?;
        if got == want {
            return Ok((true, got));
        }
        if start.elapsed() > patience {
            return Ok((false, got));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

async fn start(
    topo: &VmTopology,
    name: &str,
    program: &Path,
    extra: &[String],
) -> anyhow::Result<GoProcess> {
    let ip = topo.scheduler_host().ip();
    let metrics = format!("{ip}:18100");
    let health = format!("{ip}:18101");
    let mut args = vec![
        format!("--kubeconfig={}", topo.kubeconfig().display()),
        "--leader-elect=false".to_string(),
        "--descheduling-interval=2s".to_string(),
        "--unschedulable-threshold=1m".to_string(),
        format!("--metrics-bind-address={metrics}"),
        format!("--health-probe-bind-address={health}"),
        "--v=4".to_string(),
    ];
    args.extend(extra.iter().cloned());
    let mut p = topo
        .spawn_on_scheduler_host(name, program, &args, &[])?
        .with_addresses(Some(metrics), Some(health));
    p.wait_healthy(Duration::from_secs(60)).await?;
    Ok(p)
}

/// Which replicas answered an unschedulable-replicas request for `ns/web`.
fn served_by(topo: &VmTopology, ns: &str) -> Vec<String> {
    let needle = format!("name={ns}/web)");
    (0..topo.replica_count())
        .filter(|i| {
            topo.replica_log(*i).lines().any(|l| {
                l.contains(&needle) && l.contains("Finish detecting cluster unschedulable replicas")
            })
        })
        .map(|i| topo.replica_name(i))
        .collect()
}

async fn point_member1(
    env: &TestEnv,
    topo: &VmTopology,
    lb: usize,
) -> anyhow::Result<std::net::SocketAddrV4> {
    let a = topo.balancer(lb).address();
    set_estimator_service(
        &env.client().await?,
        topo.member(),
        &a.ip().to_string(),
        a.port(),
        None,
    )
    .await?;
    Ok(a)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn descheduler_reaches_estimators_through_an_lvs_vip_without_dns() {
    let test = "descheduler_reaches_estimators_through_an_lvs_vip_without_dns";
    let Some(tools) = tools_or_skip(test) else {
        return;
    };
    if !vm::supported_or_skip(test) {
        return;
    }
    match tokio::time::timeout(OVERALL, run(tools)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => panic!("{e:#}"),
        Err(_) => panic!("{test}: not done after {OVERALL:?}"),
    }
}

/// member1: 5 assigned, 2 ready, 3 Pods unschedulable for 10 min → 2; member2: 3 assigned,
/// 1 ready, 2 unschedulable → 1.
const TWIN: &[(&str, i32, i32, usize)] = &[("member1", 5, 2, 3), ("member2", 3, 1, 2)];
const TWIN_WANT: &[i32] = &[2, 1];
/// After the move: member1 only, 3 assigned, 1 ready, 2 unschedulable → 1.
const MOVED: &[(&str, i32, i32, usize)] = &[("member1", 3, 1, 2)];
const MOVED_WANT: &[i32] = &[1];

async fn run(tools: testenv::Tools) -> anyhow::Result<()> {
    let started = Instant::now();
    let net = VmNet::create()?;
    let env = TestEnv::builder()
        .tools(tools.clone())
        .members(2)
        .apiserver_sans(&net.apiserver_sans())
        .start()
        .await?;
    let mut topo = VmTopology::start(net, env.info(), tools.bin_dir()).await?;
    topo.start_health_checks();
    for (ns, clusters) in [
        ("vm-rs", TWIN),
        ("vm-go", TWIN),
        ("moved-rs", MOVED),
        ("moved-go", MOVED),
        ("tls-rs", MOVED),
    ] {
        // Members only; the bindings come when their descheduler runs.
        let client = env.client().await?;
        apply_value(
            &client,
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )
        .await?;
        for (cluster, _, _, unschedulable) in clusters {
            let member = env.member_client(cluster).await?;
            let mut pods = vec![OLD; *unschedulable];
            pods.push(PodState::Scheduled);
            deployment_with_pods(&member, ns, "web", &pods).await?;
        }
    }
    let mut report: Vec<(String, String, String)> = Vec::new();

    // Ours: through lb1, then moved to lb2 while running, lb1 retired.
    let ours_bin = Path::new(env!("CARGO_BIN_EXE_karmada-descheduler"));
    let mut ours = start(&topo, "vm-rs-descheduler", ours_bin, &[]).await?;
    case(&env, "vm-rs", TWIN).await?;
    let (ok, rs_twin) =
        wait_replicas(&env, "vm-rs", TWIN_WANT, Duration::from_secs(40), &mut ours).await?;
    assert!(
        ok,
        "ours through the VIP wrote {rs_twin:?}:\n{}",
        ours.log_tail(30)
    );
    let rs_served = served_by(&topo, "vm-rs");
    assert!(!rs_served.is_empty(), "no replica answered ours");
    let lb2 = point_member1(&env, &topo, 1).await?;
    let moved_at = Instant::now();
    let needle = lb2.to_string();
    while !std::fs::read_to_string(ours.log_path())?
        .lines()
        .any(|l| l.contains("established") && l.contains("member1") && l.contains(&needle))
    {
        if moved_at.elapsed() > Duration::from_secs(20) {
            bail!(
                "ours did not connect to {lb2} after the Service change:\n{}",
                ours.log_tail(30)
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    topo.balancer(0).set_link(false)?;
    case(&env, "moved-rs", MOVED).await?;
    let (ok, rs_moved) = wait_replicas(
        &env,
        "moved-rs",
        MOVED_WANT,
        Duration::from_secs(30),
        &mut ours,
    )
    .await?;
    assert!(
        ok,
        "ours after the move wrote {rs_moved:?}:\n{}",
        ours.log_tail(30)
    );
    assert!(!served_by(&topo, "moved-rs").is_empty());
    ours.kill();

    // Go: the same, lb1 back and named again first.
    topo.balancer(0).set_link(true)?;
    point_member1(&env, &topo, 0).await?;
    let go_bin = tools.bin("karmada-descheduler");
    let mut go = start(&topo, "vm-go-descheduler", &go_bin, &[]).await?;
    case(&env, "vm-go", TWIN).await?;
    let (ok, go_twin) =
        wait_replicas(&env, "vm-go", TWIN_WANT, Duration::from_secs(40), &mut go).await?;
    assert!(
        ok,
        "Go through the VIP wrote {go_twin:?}:\n{}",
        go.log_tail(30)
    );
    let go_served = served_by(&topo, "vm-go");
    assert!(!go_served.is_empty(), "no replica answered Go");
    point_member1(&env, &topo, 1).await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    topo.balancer(0).set_link(false)?;
    case(&env, "moved-go", MOVED).await?;
    // Several passes (2 s apart, 3 s estimator timeout each).
    let (_, go_moved) = wait_replicas(
        &env,
        "moved-go",
        MOVED_WANT,
        Duration::from_secs(15),
        &mut go,
    )
    .await?;
    let go_errors: Vec<String> = std::fs::read_to_string(go.log_path())?
        .lines()
        .filter(|l| l.contains("member1") && (l.contains("rror") || l.contains("ailed")))
        .map(|l| l.chars().take(300).collect())
        .collect();
    go.kill();

    // Ours over mTLS: the replicas' certificate names a DNS name, not the VIP (lb2 now).
    let pki_dir = env.state_dir().join("vm/pki");
    let ca = pki::Pki::new(&pki_dir, "estimators")?;
    let server_name = "estimator.member1.vm.test";
    let server = ca.server("member1", &[server_name])?;
    let client_cert = ca.client("descheduler", "karmada-descheduler")?;
    topo.start_replicas(&pki::estimator_server_flags(&server, ca.ca_file()))
        .await?;
    let mut tls = pki::estimator_client_flags(ca.ca_file(), &client_cert);
    tls.push(format!(
        "--scheduler-estimator-tls-server-name={server_name}"
    ));
    let mut ours = start(&topo, "vm-rs-descheduler-tls", ours_bin, &tls).await?;
    case(&env, "tls-rs", MOVED).await?;
    let (ok, rs_tls) = wait_replicas(
        &env,
        "tls-rs",
        MOVED_WANT,
        Duration::from_secs(30),
        &mut ours,
    )
    .await?;
    assert!(
        ok,
        "ours over mTLS wrote {rs_tls:?}:\n{}",
        ours.log_tail(30)
    );
    let tls_served = served_by(&topo, "tls-rs");
    assert!(!tls_served.is_empty(), "no replica answered ours over mTLS");
    ours.kill();

    report.push((
        "through the VIP (5+3 -> 2+1)".into(),
        format!("{rs_twin:?} answered by {rs_served:?}"),
        format!("{go_twin:?} answered by {go_served:?}"),
    ));
    report.push((
        "VIP moved to lb2, lb1 retired (3 -> 1)".into(),
        format!("{rs_moved:?}"),
        format!("{go_moved:?}"),
    ));
    report.push((
        "mTLS, DNS-name certificate (3 -> 1)".into(),
        format!("{rs_tls:?} answered by {tls_served:?}"),
        "-".into(),
    ));
    let mut table = format!(
        "\n[vm] {:<40} | {:<32} | Go karmada-descheduler v1.18.2\n",
        "step", "ours"
    );
    for (step, o, g) in &report {
        table.push_str(&format!("[vm] {step:<40} | {o:<32} | {g}\n"));
    }
    table.push_str(&format!(
        "[vm] Go's member1 errors after the move: {:?}\n[vm] total {:.0}s",
        go_errors.iter().rev().take(2).collect::<Vec<_>>(),
        started.elapsed().as_secs_f64()
    ));
    say(&table);
    assert_eq!(
        rs_twin, go_twin,
        "same replicas given back as the Go descheduler"
    );
    topo.teardown()?;
    env.stop();
    Ok(())
}
