//! Work that holds every thread it runs on (a binding whose division costs seconds of CPU)
//! must not cost the replica its Lease or its probes: on a real kube-apiserver, the lifecycle
//! runs a work that spins on more tasks than the process has cores, and meanwhile `/healthz`
//! answers at once and the Lease keeps being renewed by this replica.
//!
//! Skipped when the control-plane binaries are absent and KARMADA_E2E is unset (see
//! crates/testenv).

use std::sync::Arc;
use std::time::{Duration, Instant};

use component_base::cancel::CancellationToken;
use component_base::goparse::GoDuration;
use component_base::lifecycle::{Daemon, Settings};
use component_base::metrics::ComponentMetrics;
use component_base::options::CommonOptions;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use testenv::{TestEnv, tools_or_skip, wait_for};

const NS: &str = "kube-system";
const LEASE: &str = "busy-work";
/// How long the work holds its threads.
const BUSY: Duration = Duration::from_secs(8);

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// One `/healthz` answer (testenv's GET: 2 s to connect, 5 s to read) and how long it took.
async fn probe(port: u16) -> (bool, Duration) {
    let start = Instant::now();
    let ok = matches!(
        testenv::http_get(&format!("127.0.0.1:{port}"), "/healthz").await,
        Ok((200, _))
    );
    (ok, start.elapsed())
}

fn renewed(l: &Lease) -> Option<k8s_openapi::jiff::Timestamp> {
    l.spec
        .as_ref()
        .and_then(|s| s.renew_time.as_ref())
        .map(|t| t.0)
}

fn holder(l: &Lease) -> String {
    l.spec
        .as_ref()
        .and_then(|s| s.holder_identity.clone())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_work_keeps_the_lease_and_the_probes() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("busy_work_keeps_the_lease_and_the_probes") else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).members(0).start().await?;
    let client = env.client().await?;

    let mut common = CommonOptions::new("busy-work");
    common.kube.kubeconfig = env.kubeconfig().display().to_string();
    common.leader_election.leader_elect = true;
    common.leader_election.resource_name = LEASE.into();
    common.leader_election.resource_namespace = NS.into();
    common.leader_election.lease_duration = GoDuration::from_secs(3);
    common.leader_election.renew_deadline = GoDuration::from_secs(2);
    common.leader_election.retry_period = GoDuration::from_millis(500);
    let port = free_port();
    common.serving.health_probe_bind_address = format!("127.0.0.1:{port}");
    common.serving.metrics_bind_address = "0".into();
    let settings = Settings::new("busy-work test".into(), "busy", &common);

    let started = Arc::new(tokio::sync::Notify::new());
    let on_start = started.clone();
    let daemon = Daemon::new(
        settings,
        Arc::new(ComponentMetrics::new()),
        (),
        move |_, _client, _ready, _fence, stop| {
            let on_start = on_start.clone();
            async move {
                // Twice as many spinning tasks as the machine has cores, none yielding.
                let spinners = 2 * std::thread::available_parallelism().map_or(2, |n| n.get());
                let tasks: Vec<_> = (0..spinners)
                    .map(|_| {
                        tokio::spawn(async {
                            let until = Instant::now() + BUSY;
                            while Instant::now() < until {
                                std::hint::spin_loop();
                            }
                        })
                    })
                    .collect();
                on_start.notify_one();
                for t in tasks {
                    t.await?;
                }
                stop.cancelled().await;
                Ok(())
            }
        },
    );
    let stop = CancellationToken::new();
    let run = tokio::spawn(daemon.run_until(stop.clone()));

    tokio::time::timeout(Duration::from_secs(30), started.notified()).await?;
    // Measured from a thread and a runtime of its own, which the spinning work cannot hold.
    let kubeconfig = env.kubeconfig().to_path_buf();
    let watcher = std::thread::spawn(move || -> anyhow::Result<(usize, usize, Duration, usize)> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        rt.block_on(async move {
            let config = kube::Config::from_custom_kubeconfig(
                kube::config::Kubeconfig::read_from(&kubeconfig)?,
                &Default::default(),
            )
            .await?;
            let leases: Api<Lease> = Api::namespaced(kube::Client::try_from(config)?, NS);
            let first = leases.get(LEASE).await?;
            let (mut renewals, mut last) = (0, renewed(&first));
            let (mut answered, mut slowest, mut probes) = (0, Duration::ZERO, 0);
            let busy_until = Instant::now() + BUSY - Duration::from_secs(1);
            while Instant::now() < busy_until {
                let (ok, took) = probe(port).await;
                probes += 1;
                answered += usize::from(ok);
                slowest = slowest.max(took);
                let lease =
                    tokio::time::timeout(Duration::from_secs(2), leases.get(LEASE)).await??;
                anyhow::ensure!(holder(&lease) == holder(&first), "the Lease changed hands");
                if renewed(&lease) != last {
                    renewals += 1;
                    last = renewed(&lease);
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Ok((answered, probes, slowest, renewals))
        })
    });
    let (answered, probes, slowest, renewals) = tokio::task::spawn_blocking(move || watcher.join())
        .await?
        .expect("the measuring thread")?;
    println!(
        "while busy: {answered}/{probes} probes answered, slowest {slowest:?}; {renewals} Lease renewals"
    );
    assert_eq!(
        answered, probes,
        "every probe answered while the work was busy"
    );
    assert!(
        slowest < Duration::from_secs(1),
        "slowest probe {slowest:?}"
    );
    assert!(
        renewals >= 3,
        "the Lease was renewed {renewals} times in {BUSY:?}"
    );

    stop.cancel();
    let leases: Api<Lease> = Api::namespaced(client.clone(), NS);
    tokio::time::timeout(Duration::from_secs(20), run).await???;
    // Released on a clean stop.
    wait_for("the Lease released", Duration::from_secs(10), || async {
        Ok(holder(&leases.get(LEASE).await?).is_empty().then_some(()))
    })
    .await?;
    Ok(())
}
