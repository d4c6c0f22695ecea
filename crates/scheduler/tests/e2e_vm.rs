//! The VM deployment for real (docs/deploy-vm.md): no kube-proxy, no cluster DNS, the
//! estimators behind an LVS-style VIP. Built by `testenv::vm`: network namespaces on a bridge
//! of their own, a "scheduler host" namespace with an empty resolv.conf and routes to the
//! Karmada API server and the VIPs only, two balancers (iptables DNAT, one backend per new
//! connection in turn, with a keepalived-like TCP health check) in front of two replicas of
//! member1's real Go karmada-scheduler-estimator v1.18.2, each in its own namespace. member2's
//! estimator stays on the API server host, reached through its bridge address.
//!
//! This scheduler and the Go karmada-scheduler v1.18.2 run side by side on the scheduler host
//! (`ip netns exec`), each on twin bindings, through:
//!
//! 1. the VIP: member1's Cluster claims far more resources than its nodes have, so only the
//!    estimator's answer gives the expected split (and the replicas' logs name the bindings);
//! 2. one replica killed: the balancer drops it, the other one answers;
//! 3. an `ExternalName` holding a DNS name on this DNS-less host: a clear error naming the
//!    Service and the name, no per-binding wait, the general estimate as the reference;
//! 4. the Service moved to the second balancer and the first one retired;
//! 5. estimator mTLS with certificates for DNS names (not the VIP), verified through
//!    `--scheduler-estimator-tls-server-name` and the Service annotation (allowed by
//!    `--scheduler-estimator-tls-name-annotation`); a wrong CA refused.
//!
//! Go's outcome is asserted where the reference's behaviour is what the step is about (1-3)
//! and only reported where the step tests our additions (4-5). Both are printed side by side.
//!
//! Needs root (namespaces, iptables); skipped like the other end-to-end tests when the Go
//! binaries are absent and KARMADA_E2E is unset, and when namespaces are unavailable (fails
//! instead under KARMADA_E2E).

mod common;

use std::fmt;
use std::io::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};
use testenv::pki;
use testenv::vm::{self, VmNet, VmTopology, set_estimator_service};
use testenv::{GoProcess, TestEnv, fixtures, free_port, tools_or_skip};

use common::{cluster_api, log_of, rb_api, scheduled_condition};

/// The whole test, control plane included.
const OVERALL: Duration = Duration::from_secs(300);
/// One binding's wait for a decision.
const DECISION: Duration = Duration::from_secs(40);

/// member1's Cluster claims this much (its two nodes really have 2 CPUs / 4 Gi each).
const INFLATED: (&str, &str) = ("64", "256Gi");
/// What the estimators answer for 500m / 256Mi per replica: member1 3 + 3, member2 7 + 7.
const BY_ESTIMATORS: &[(&str, i64)] = &[("member1", 6), ("member2", 14)];

fn dynamic(clusters: &[&str]) -> Value {
    json!({
        "clusterAffinity": {"clusterNames": clusters},
        "replicaScheduling": {"replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {"dynamicWeight": "AvailableReplicas"}}
    })
}

/// What a scheduler decided for one binding.
#[derive(Clone, Debug)]
struct Outcome {
    placement: Vec<(String, i64)>,
    scheduled: bool,
    message: String,
    took: Duration,
}

impl Outcome {
    fn replicas_in(&self, cluster: &str) -> i64 {
        self.placement
            .iter()
            .find(|(c, _)| c == cluster)
            .map_or(0, |(_, n)| *n)
    }

    fn is(&self, want: &[(&str, i64)]) -> bool {
        self.scheduled
            && self.placement.len() == want.len()
            && want.iter().all(|(c, n)| self.replicas_in(c) == *n)
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.scheduled {
            let p: Vec<String> = self
                .placement
                .iter()
                .map(|(c, n)| format!("{c}:{n}"))
                .collect();
            write!(f, "{} ({:.1}s)", p.join(" "), self.took.as_secs_f64())
        } else {
            write!(f, "not scheduled: {}", self.message)
        }
    }
}

async fn create(env: &TestEnv, name: &str, clusters: &[&str], scheduler: &str) -> Instant {
    let b = fixtures::binding(name, 20, dynamic(clusters), scheduler);
    env.apply_json(&b).await.expect("create binding");
    Instant::now()
}

async fn outcome(
    rbs: &Api<DynamicObject>,
    name: &str,
    created: Instant,
) -> anyhow::Result<Outcome> {
    loop {
        let rb = rbs.get(name).await?;
        if let Some(c) = scheduled_condition(&rb) {
            let placement = rb
                .data
                .pointer("/spec/clusters")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|c| {
                            (
                                c["name"].as_str().unwrap_or_default().to_string(),
                                c["replicas"].as_i64().unwrap_or(0),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            return Ok(Outcome {
                placement,
                scheduled: c["status"] == "True",
                message: format!(
                    "{}: {}",
                    c["reason"].as_str().unwrap_or_default(),
                    c["message"].as_str().unwrap_or_default()
                ),
                took: created.elapsed(),
            });
        }
        if created.elapsed() > DECISION {
            bail!("{name}: no Scheduled condition after {DECISION:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The schedulers on the scheduler host.
struct Schedulers {
    ours: GoProcess,
    go: GoProcess,
}

fn ours_path() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_karmada-scheduler"))
}

async fn start_on_host(
    topo: &VmTopology,
    name: &str,
    program: &Path,
    ports: (u16, u16),
    extra: &[String],
    env: &[(&str, &str)],
) -> anyhow::Result<GoProcess> {
    let ip = topo.scheduler_host().ip();
    let metrics = format!("{ip}:{}", ports.0);
    let health = format!("{ip}:{}", ports.1);
    let mut args = vec![
        format!("--kubeconfig={}", topo.kubeconfig().display()),
        "--leader-elect=false".to_string(),
        "--enable-scheduler-estimator=true".to_string(),
        format!("--metrics-bind-address={metrics}"),
        format!("--health-probe-bind-address={health}"),
    ];
    args.extend(extra.iter().cloned());
    let mut p = topo
        .spawn_on_scheduler_host(name, program, &args, env)?
        .with_addresses(Some(metrics), Some(health));
    p.wait_healthy(Duration::from_secs(60)).await?;
    Ok(p)
}

impl Schedulers {
    async fn start(
        topo: &VmTopology,
        tag: &str,
        ours_extra: &[String],
        go_extra: &[String],
        go_bin: &Path,
    ) -> anyhow::Result<Self> {
        let mut go_args = vec!["--scheduler-name=go-scheduler".to_string()];
        go_args.extend(go_extra.iter().cloned());
        // Ours decides as the Go v1.18.2 twin.
        let ours_extra: Vec<String> = ours_extra
            .iter()
            .cloned()
            .chain(testenv::AS_V1_18_2.iter().map(|s| s.to_string()))
            .collect();
        let ours_extra = ours_extra.as_slice();
        // grpc-go's own warnings (why a dial failed) go to the log too.
        let go = start_on_host(
            topo,
            &format!("vm-go-scheduler-{tag}"),
            go_bin,
            (18090, 18091),
            &go_args,
            &[("GRPC_GO_LOG_SEVERITY_LEVEL", "warning")],
        )
        .await?;
        let ours = start_on_host(
            topo,
            &format!("vm-rs-scheduler-{tag}"),
            ours_path(),
            (18080, 18081),
            ours_extra,
            &[],
        )
        .await?;
        Ok(Self { ours, go })
    }

    fn stop(mut self) {
        self.ours.kill();
        self.go.kill();
    }
}

/// Creates twins `<name>-rs` / `<name>-go` and waits for both decisions.
async fn twins(
    env: &TestEnv,
    rbs: &Api<DynamicObject>,
    name: &str,
    clusters: &[&str],
) -> anyhow::Result<(Outcome, Outcome)> {
    let rs = format!("{name}-rs");
    let go = format!("{name}-go");
    let t_rs = create(env, &rs, clusters, "default-scheduler").await;
    let t_go = create(env, &go, clusters, "go-scheduler").await;
    let o_rs = outcome(rbs, &rs, t_rs).await?;
    let o_go = outcome(rbs, &go, t_go).await?;
    Ok((o_rs, o_go))
}

/// Which replicas' logs name the binding (`name=default/<binding>` of an answered request).
fn served_by(topo: &VmTopology, binding: &str) -> Vec<String> {
    let needle = format!("name=default/{binding})");
    (0..topo.replica_count())
        .filter(|i| {
            topo.replica_log(*i).lines().any(|l| {
                l.contains(&needle) && l.contains("Finish calculating cluster available replicas")
            })
        })
        .map(|i| topo.replica_name(i))
        .collect()
}

/// Lines of a log containing every one of `needles`.
fn lines_with(log: &str, needles: &[&str]) -> Vec<String> {
    log.lines()
        .filter(|l| needles.iter().all(|n| l.contains(n)))
        .map(str::to_string)
        .collect()
}

/// A log's error lines about `cluster` (events excluded), the last `n`.
fn errors_about(log: &str, cluster: &str, n: usize) -> Vec<String> {
    let mut v: Vec<String> = log
        .lines()
        .filter(|l| l.contains(cluster) && !l.contains("Event occurred"))
        .filter(|l| {
            ["rror", "ailed", "x509", "deadline"]
                .iter()
                .any(|w| l.contains(w))
        })
        .map(|l| l.chars().take(400).collect())
        .collect();
    v.drain(..v.len().saturating_sub(n));
    v
}

/// Straight to stderr: visible even when libtest captures the test's output.
fn say(text: &str) {
    let _ = writeln!(std::io::stderr(), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedulers_reach_estimators_through_an_lvs_vip_without_dns() {
    let test = "schedulers_reach_estimators_through_an_lvs_vip_without_dns";
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
    say(&format!(
        "[vm] control plane and topology up in {:.0}s: scheduler host {} ({}), VIPs {} and {}",
        started.elapsed().as_secs_f64(),
        topo.scheduler_host().name(),
        topo.scheduler_host().ip(),
        topo.balancer(0).address(),
        topo.balancer(1).address()
    ));
    let client = env.client().await?;
    let clusters = cluster_api(&env).await?;
    // The general estimate alone would put most replicas on member1.
    clusters
        .patch_status(
            "member1",
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {"resourceSummary": {"allocatable": {
                "cpu": INFLATED.0, "memory": INFLATED.1}}}})),
        )
        .await?;
    let rbs = rb_api(&env).await?;
    let go_bin = tools.bin("karmada-scheduler");
    let mut report: Vec<(String, String, String)> = Vec::new();

    let scheds = Schedulers::start(&topo, "plain", &[], &[], &go_bin).await?;

    // 1. Through the VIP.
    let (rs, go) = twins(&env, &rbs, "vip", &["member1", "member2"]).await?;
    report.push(("1 through the VIP".into(), rs.to_string(), go.to_string()));
    let served_rs = served_by(&topo, "vip-rs");
    let served_go = served_by(&topo, "vip-go");
    say(&format!(
        "[vm] vip-rs answered by {served_rs:?}, vip-go answered by {served_go:?}"
    ));
    assert!(rs.is(BY_ESTIMATORS), "ours through the VIP: {rs}");
    assert!(go.is(BY_ESTIMATORS), "Go through the VIP: {go}");
    assert!(!served_rs.is_empty(), "no replica served our binding");
    assert!(!served_go.is_empty(), "no replica served Go's binding");

    // 2. The replica that served ours is killed; the health check takes it out.
    let victim = if served_rs.contains(&topo.replica_name(1)) {
        1
    } else {
        0
    };
    let survivor = 1 - victim;
    let victim_addr = topo.info().replicas[victim].1;
    topo.kill_replica(victim);
    let killed_at = Instant::now();
    while topo.balancer(0).active().contains(&victim_addr) {
        if killed_at.elapsed() > Duration::from_secs(10) {
            bail!("the health check did not remove {victim_addr}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    say(&format!(
        "[vm] killed {} ({victim_addr}); out of the pool after {:.1}s",
        topo.replica_name(victim),
        killed_at.elapsed().as_secs_f64()
    ));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (rs, go) = twins(&env, &rbs, "killed", &["member1", "member2"]).await?;
    report.push((
        format!("2 {} killed", topo.replica_name(victim)),
        rs.to_string(),
        go.to_string(),
    ));
    assert!(rs.is(BY_ESTIMATORS), "ours with one replica killed: {rs}");
    assert!(go.is(BY_ESTIMATORS), "Go with one replica killed: {go}");
    for b in ["killed-rs", "killed-go"] {
        assert_eq!(
            served_by(&topo, b),
            [topo.replica_name(survivor)],
            "{b} answered by the surviving replica"
        );
    }
    topo.start_replica(victim, &[])?;
    topo.wait_replica(victim).await?;

    // 3. An ExternalName holding a DNS name, on a host without DNS.
    let dns_name = "estimator.vm-dns.example.internal";
    set_estimator_service(&client, "vm-dns", dns_name, 10352, None).await?;
    env.apply_json(&fixtures::extra_cluster(
        "vm-dns",
        "8",
        json!({"vm": "dns"}),
        json!([]),
    ))
    .await?;
    let dns_cluster_at = Instant::now();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (rs, go) = twins(&env, &rbs, "dns", &["member1", "vm-dns"]).await?;
    report.push(("3 DNS name, no DNS".into(), rs.to_string(), go.to_string()));
    // More bindings right after: none waits for a dial.
    let mut batch = Vec::new();
    for i in 1..=3 {
        let name = format!("dns-more-{i}-rs");
        batch.push((
            name.clone(),
            create(&env, &name, &["member1", "vm-dns"], "default-scheduler").await,
        ));
    }
    let mut batch_times = Vec::new();
    for (name, t) in &batch {
        let o = outcome(&rbs, name, *t).await?;
        assert!(o.scheduled, "{name}: {o}");
        batch_times.push(o.took);
    }
    // The reference gives up a dial after 5 s: its error is logged by then.
    tokio::time::sleep(Duration::from_secs(6).saturating_sub(dns_cluster_at.elapsed())).await;
    let ours_log = log_of(&scheds.ours);
    let service = "karmada-system/karmada-scheduler-estimator-vm-dns";
    let our_error = lines_with(&ours_log, &[service, dns_name]);
    let go_error = errors_about(&log_of(&scheds.go), "vm-dns", 2);
    say(&format!(
        "[vm] ours on the DNS name: {:?}\n[vm] Go on the DNS name: {:?}\n[vm] three more bindings took {batch_times:?}",
        our_error.first(),
        go_error
    ));
    assert!(
        rs.scheduled && rs.replicas_in("member1") > 6,
        "ours must fall back to the general estimate for every cluster: {rs}"
    );
    assert!(
        rs.took < Duration::from_secs(5),
        "ours took {:?} with an unresolvable estimator",
        rs.took
    );
    assert!(
        batch_times.iter().all(|t| *t < Duration::from_secs(3)),
        "bindings waited on the unresolvable estimator: {batch_times:?}"
    );
    assert_eq!(
        rs.placement, go.placement,
        "the reference also schedules with the general estimate: ours {rs}, Go {go}"
    );
    assert!(
        !our_error.is_empty(),
        "our log names neither {service} nor {dns_name}:\n{}",
        scheds.ours.log_tail(30)
    );
    clusters.delete("vm-dns", &Default::default()).await?;

    // 4. The Service moves to the second balancer; the first is retired.
    let lb2 = topo.balancer(1).address();
    set_estimator_service(&client, "member1", &lb2.ip().to_string(), lb2.port(), None).await?;
    let moved_at = Instant::now();
    let target = lb2.to_string();
    while lines_with(&log_of(&scheds.ours), &["established", "member1", &target]).is_empty() {
        if moved_at.elapsed() > Duration::from_secs(20) {
            bail!(
                "ours did not connect to {lb2} after the Service change:\n{}",
                scheds.ours.log_tail(30)
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    say(&format!(
        "[vm] ours connected to {lb2} {:.1}s after the Service change",
        moved_at.elapsed().as_secs_f64()
    ));
    topo.balancer(0).set_link(false)?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (rs, go) = twins(&env, &rbs, "moved", &["member1", "member2"]).await?;
    report.push((
        "4 VIP moved to lb2, lb1 retired".into(),
        rs.to_string(),
        go.to_string(),
    ));
    say(&format!(
        "[vm] Go after the move: {:?}",
        errors_about(&log_of(&scheds.go), "member1", 2)
    ));
    assert!(rs.is(BY_ESTIMATORS), "ours after the move: {rs}");
    assert!(!served_by(&topo, "moved-rs").is_empty());
    scheds.stop();

    // 5. mTLS: certificates for DNS names, reached through the VIP and the bridge address.
    let pki_dir = env.state_dir().join("vm/pki");
    let ca = pki::Pki::new(&pki_dir, "estimators")?;
    let m1_name = "estimator.member1.vm.test";
    let m2_name = "estimator.member2.vm.test";
    let server1 = ca.server("member1", &[m1_name])?;
    let server2 = ca.server("member2", &[m2_name])?;
    let client_cert = ca.client("scheduler", "karmada-scheduler")?;
    let wrong = pki::Pki::new(&pki_dir, "other")?;
    topo.start_replicas(&pki::estimator_server_flags(&server1, ca.ca_file()))
        .await?;
    // member2: a TLS estimator on the API server host, on a new port.
    let m2 = env.member("member2").context("member2")?.clone();
    let (program, args) = testenv::faults::command_line(m2.estimator_pid)?;
    let port = free_port();
    let mut tls_args = vm::without_flags(
        &args,
        &[
            "--server-port",
            "--health-probe-bind-address",
            "--metrics-bind-address",
        ],
    );
    tls_args.extend([
        format!("--server-port={port}"),
        format!("--health-probe-bind-address=127.0.0.1:{}", free_port()),
        format!("--metrics-bind-address=127.0.0.1:{}", free_port()),
    ]);
    tls_args.extend(pki::estimator_server_flags(&server2, ca.ca_file()));
    let mut m2_tls = env.spawn_process("vm-member2-estimator-tls", &program, &tls_args)?;
    topo.net().expose_host_port(port)?;
    let host = topo.info().host_ip;
    wait_port(&mut m2_tls, port).await?;
    set_estimator_service(&client, "member2", &host.to_string(), port, Some(m2_name)).await?;

    let mut ours_tls = pki::estimator_client_flags(ca.ca_file(), &client_cert);
    ours_tls.push(format!("--scheduler-estimator-tls-server-name={m1_name}"));
    // member2's Service names its certificate's name in the annotation: allowed explicitly.
    ours_tls.push("--scheduler-estimator-tls-name-annotation=true".to_string());
    let go_tls = pki::estimator_client_flags(ca.ca_file(), &client_cert);
    let scheds = Schedulers::start(&topo, "tls", &ours_tls, &go_tls, &go_bin).await?;
    let (rs, go) = twins(&env, &rbs, "tls", &["member1", "member2"]).await?;
    report.push((
        "5 mTLS, DNS-name certs".into(),
        rs.to_string(),
        go.to_string(),
    ));
    let go_log = log_of(&scheds.go);
    say(&format!(
        "[vm] tls-rs answered by {:?}; Go over TLS: {:?}; grpc-go says: {:?}",
        served_by(&topo, "tls-rs"),
        errors_about(&go_log, "member1", 1),
        lines_with(&go_log, &["handshake"]).first()
    ));
    assert!(rs.is(BY_ESTIMATORS), "ours over mTLS: {rs}");
    assert!(!served_by(&topo, "tls-rs").is_empty());
    assert!(
        std::fs::read_to_string(m2_tls.log_path())?.contains("name=default/tls-rs)"),
        "member2's TLS estimator did not answer ours"
    );
    scheds.stop();

    // A CA that did not sign the estimators' certificates.
    let ours_wrong = {
        let mut f = pki::estimator_client_flags(wrong.ca_file(), &client_cert);
        f.push(format!("--scheduler-estimator-tls-server-name={m1_name}"));
        f
    };
    let mut ours = start_on_host(
        &topo,
        "vm-rs-scheduler-wrong-ca",
        ours_path(),
        (18080, 18081),
        &ours_wrong,
        &[],
    )
    .await?;
    let t = create(
        &env,
        "wrong-ca-rs",
        &["member1", "member2"],
        "default-scheduler",
    )
    .await;
    let wrong_ca = outcome(&rbs, "wrong-ca-rs", t).await?;
    report.push((
        "5b wrong CA (ours only)".into(),
        wrong_ca.to_string(),
        "-".into(),
    ));
    let refused = lines_with(&log_of(&ours), &["member1", "Failed to connect"]);
    say(&format!("[vm] ours with a wrong CA: {:?}", refused.first()));
    assert!(
        wrong_ca.scheduled && wrong_ca.replicas_in("member1") > 6,
        "with a wrong CA the estimators' answers must be refused: {wrong_ca}"
    );
    assert!(
        refused
            .first()
            .is_some_and(|l| l.to_lowercase().contains("certificate")),
        "no clear certificate error in our log:\n{}",
        ours.log_tail(30)
    );
    ours.kill();

    let mut table = format!(
        "\n[vm] {:<34} | {:<36} | Go karmada-scheduler v1.18.2\n",
        "step", "ours"
    );
    for (step, o, g) in &report {
        table.push_str(&format!("[vm] {step:<34} | {o:<36} | {g}\n"));
    }
    table.push_str(&format!(
        "[vm] (estimators' answers: member1:6 member2:14; general estimate alone: member1 gets most)\n[vm] total {:.0}s",
        started.elapsed().as_secs_f64()
    ));
    say(&table);
    drop(m2_tls);
    topo.teardown()?;
    env.stop();
    Ok(())
}

async fn wait_port(p: &mut GoProcess, port: u16) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = p.try_wait()? {
            bail!("{} exited ({status}):\n{}", p.name(), p.log_tail(20));
        }
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{} not listening on {port}", p.name());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
