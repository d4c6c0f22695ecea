//! The descheduler end to end, on the local control plane with the real Go estimators of
//! Karmada v1.18.2 behind `ExternalName` Services: member Deployments whose Pods are
//! unschedulable (written by hand: the members run no kubelet or scheduler), bindings that
//! assign more replicas than are ready, and the Go karmada-descheduler v1.18.2 and ours run in
//! turn on identical objects (twins). Both must write the same `spec.clusters` and record the
//! same Events, and those must be what the reference's rules say. Then member1's estimator
//! moves to another port that only its Service names, and ours follows it.
//!
//! Skipped when the Go binaries are absent and KARMADA_E2E is unset (see crates/testenv).

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Event;
use karmada_api::work::ResourceBinding;
use kube::api::{Api, ListParams};
use serde_json::{Value, json};
use testenv::faults::StoppedEstimator;
use testenv::helm::helm_or_skip;
use testenv::rbac::{self, Daemon, Identity};
use testenv::workload::{PodState, deployment_with_pods};
use testenv::{GoProcess, TestEnv, apply_value, free_port, http_get, tools_or_skip, wait_for};

const AGGREGATED: &str = r#"{"replicaScheduling":{"replicaSchedulingType":"Divided","replicaDivisionPreference":"Aggregated"}}"#;
const DYNAMIC: &str = r#"{"replicaScheduling":{"replicaSchedulingType":"Divided","replicaDivisionPreference":"Weighted","weightPreference":{"dynamicWeight":"AvailableReplicas"}}}"#;
const STATIC: &str = r#"{"replicaScheduling":{"replicaSchedulingType":"Divided","replicaDivisionPreference":"Weighted","weightPreference":{"staticWeightList":[{"targetCluster":{"clusterNames":["member1"]},"weight":1}]}}}"#;

const OLD: PodState = PodState::UnschedulableFor(Duration::from_secs(600));
const RECENT: PodState = PodState::UnschedulableFor(Duration::from_secs(5));

/// The member workloads of one namespace: `web` has 3 long-unschedulable Pods in member1 and
/// 2 recently unschedulable ones in member2; `api` has 4 long-unschedulable Pods in member1.
async fn members(env: &TestEnv, ns: &str) -> anyhow::Result<()> {
    let m1 = env.member_client("member1").await?;
    let m2 = env.member_client("member2").await?;
    deployment_with_pods(&m1, ns, "web", &[OLD, OLD, OLD, PodState::Scheduled]).await?;
    deployment_with_pods(&m2, ns, "web", &[RECENT, RECENT]).await?;
    deployment_with_pods(&m1, ns, "api", &[OLD, OLD, OLD, OLD]).await?;
    Ok(())
}

/// One binding: its name, workload, placement, `spec.clusters` and ready replicas per cluster
/// (`None`: the cluster reports no status).
struct Case {
    name: &'static str,
    workload: &'static str,
    placement: &'static str,
    clusters: &'static [(&'static str, i32, Option<i32>)],
    /// `spec.clusters` replicas the reference's rules give.
    want: &'static [i32],
    /// The success message, when the binding is descheduled.
    message: Option<&'static str>,
}

const CASES: &[Case] = &[
    // member1: 5 assigned, 2 ready, 3 unschedulable → 2; member2: its Pods are unschedulable
    // for less than the threshold → unchanged.
    Case {
        name: "web-deployment",
        workload: "web",
        placement: AGGREGATED,
        clusters: &[("member1", 5, Some(2)), ("member2", 3, Some(1))],
        want: &[2, 3],
        message: Some(
            "Binding has been descheduled, 3 replica(s) in cluster(member1), 3 total descheduled replica(s)",
        ),
    },
    // No status from member1 (ready unknown): all 4 unschedulable replicas go.
    Case {
        name: "api-deployment",
        workload: "api",
        placement: DYNAMIC,
        clusters: &[("member1", 4, None)],
        want: &[0],
        message: Some(
            "Binding has been descheduled, 4 replica(s) in cluster(member1), 4 total descheduled replica(s)",
        ),
    },
    // Static weights: not looked at.
    Case {
        name: "static-deployment",
        workload: "web",
        placement: STATIC,
        clusters: &[("member1", 5, Some(2))],
        want: &[5],
        message: None,
    },
    // Everything ready: nothing asked.
    Case {
        name: "ready-deployment",
        workload: "web",
        placement: AGGREGATED,
        clusters: &[("member1", 1, Some(1))],
        want: &[1],
        message: None,
    },
    // The workload does not exist in member2: that estimator fails, so nothing is given back,
    // not even member1's unschedulable replicas.
    Case {
        name: "missing-deployment",
        workload: "web-missing",
        placement: AGGREGATED,
        clusters: &[("member1", 5, Some(2)), ("member2", 2, Some(0))],
        want: &[5, 2],
        message: None,
    },
];

async fn bindings(env: &TestEnv, ns: &str) -> anyhow::Result<()> {
    let client = env.client().await?;
    apply_value(
        &client,
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
    )
    .await?;
    for case in CASES {
        let clusters: Vec<Value> = case
            .clusters
            .iter()
            .map(|(c, r, _)| json!({"name": c, "replicas": r}))
            .collect();
        let status: Vec<Value> = case
            .clusters
            .iter()
            .filter_map(|(c, _, ready)| {
                ready.map(|r| {
                    json!({"clusterName": c, "applied": true, "health": "Unhealthy",
                           "status": {"replicas": r, "readyReplicas": r, "availableReplicas": r}})
                })
            })
            .collect();
        let total: i32 = case.clusters.iter().map(|(_, r, _)| r).sum();
        let mut rb = json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": case.name, "namespace": ns,
                         "annotations": {"policy.karmada.io/applied-placement": case.placement}},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": ns,
                                  "name": case.workload},
                     "replicas": total, "clusters": clusters}
        });
        if !status.is_empty() {
            rb["status"] = json!({"aggregatedStatus": status});
        }
        apply_value(&client, &rb).await?;
    }
    Ok(())
}

fn replicas(rb: &ResourceBinding) -> Vec<i32> {
    rb.spec.clusters.iter().map(|c| c.replicas).collect()
}

/// One recorded event: (involved kind, involved name, type, reason, message).
type Recorded = (String, String, String, String, String);

/// What one descheduler wrote: every binding's replicas, the events, the process and its
/// metrics address.
type Run = (
    Vec<(String, Vec<i32>)>,
    BTreeSet<Recorded>,
    GoProcess,
    String,
);

/// The descheduler's events in `ns`.
async fn events(env: &TestEnv, ns: &str) -> anyhow::Result<BTreeSet<Recorded>> {
    let api: Api<Event> = Api::namespaced(env.client().await?, ns);
    Ok(api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|e| {
            e.source.as_ref().and_then(|s| s.component.as_deref()) == Some("karmada-descheduler")
        })
        .map(|e| {
            (
                e.involved_object.kind.unwrap_or_default(),
                e.involved_object.name.unwrap_or_default(),
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.message.unwrap_or_default(),
            )
        })
        .collect())
}

fn expected_events() -> BTreeSet<Recorded> {
    CASES
        .iter()
        .filter_map(|c| c.message.map(|m| (c, m)))
        .flat_map(|(c, m)| {
            [("ResourceBinding", c.name), ("Deployment", c.workload)].map(|(kind, name)| {
                (
                    kind.to_string(),
                    name.to_string(),
                    "Normal".to_string(),
                    "DescheduleBindingSucceed".to_string(),
                    m.to_string(),
                )
            })
        })
        .collect()
}

/// How a descheduler is run: the reference with the admin kubeconfig and no leader election;
/// ours with the token of the chart's ServiceAccount, bound to the chart's RBAC only
/// (`testenv::rbac`), and leader election on the Lease `karmada-descheduler`.
enum As<'a> {
    Admin,
    Chart(&'a Identity),
}

fn spawn(
    env: &TestEnv,
    name: &str,
    program: &Path,
    who: &As,
    metrics: &str,
) -> anyhow::Result<GoProcess> {
    let (kubeconfig, leader_elect) = match who {
        As::Admin => (env.kubeconfig(), false),
        As::Chart(id) => (id.kubeconfig.as_path(), true),
    };
    let args = vec![
        format!("--kubeconfig={}", kubeconfig.display()),
        format!("--leader-elect={leader_elect}"),
        "--descheduling-interval=2s".to_string(),
        "--unschedulable-threshold=1m".to_string(),
        format!("--metrics-bind-address={metrics}"),
        format!("--health-probe-bind-address=127.0.0.1:{}", free_port()),
        "--v=4".to_string(),
    ];
    env.spawn_process(name, program, &args)
}

/// The chart's descheduler identity for release `release` (its ServiceAccount's token), with
/// `take_away` (API group, resource, verb) taken from its roles when given.
async fn chart_identity(
    env: &TestEnv,
    helm: &Path,
    release: &str,
    take_away: Option<(&str, &str, &str)>,
) -> anyhow::Result<Identity> {
    let mut docs = rbac::chart_rbac(helm, Daemon::Descheduler, release, &[]);
    if let Some((group, resource, verb)) = take_away {
        rbac::without_verb(&mut docs, group, resource, verb)?;
    }
    rbac::service_account_kubeconfig(env, &docs).await
}

/// Runs a descheduler until the namespace's bindings and events are what the rules say (and
/// stay so for a few more passes); returns what it wrote and the still running process.
async fn run_one(
    env: &TestEnv,
    name: &str,
    program: &Path,
    ns: &str,
    who: &As<'_>,
) -> anyhow::Result<Run> {
    let metrics = format!("127.0.0.1:{}", free_port());
    let mut process = spawn(env, name, program, who, &metrics)?;
    let api: Api<ResourceBinding> = Api::namespaced(env.client().await?, ns);
    let want = expected_events();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    loop {
        if let Ok(Some(status)) = process.try_wait() {
            anyhow::bail!("{name} exited ({status}):\n{}", process.log_tail(30));
        }
        if events(env, ns).await?.len() >= want.len() {
            break;
        }
        if tokio::time::Instant::now() > deadline {
            anyhow::bail!(
                "{name} did not deschedule {ns} within 90s; events {:?}\n{name} log:\n{}",
                events(env, ns).await?,
                process.log_tail(60)
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // A few more passes: nothing else is written.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let mut written = Vec::new();
    for case in CASES {
        written.push((case.name.to_string(), replicas(&api.get(case.name).await?)));
    }
    let got = events(env, ns).await?;
    Ok((written, got, process, metrics))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn descheduler_matches_the_reference_with_real_estimators() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("descheduler_matches_the_reference_with_real_estimators")
    else {
        return Ok(());
    };
    let Some(helm) = helm_or_skip("descheduler_matches_the_reference_with_real_estimators") else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).members(2).start().await?;
    for ns in ["twin-go", "twin-rs"] {
        members(&env, ns).await?;
    }
    let want: Vec<(String, Vec<i32>)> = CASES
        .iter()
        .map(|c| (c.name.to_string(), c.want.to_vec()))
        .collect();

    // The reference first, alone with its bindings.
    bindings(&env, "twin-go").await?;
    let go_bin = env.tools().bin("karmada-descheduler");
    let (go_written, go_events, mut go, _) =
        run_one(&env, "go-descheduler", &go_bin, "twin-go", &As::Admin).await?;
    go.kill();

    // Then ours, on an identical copy, with the chart's RBAC only.
    bindings(&env, "twin-rs").await?;
    let ours = Path::new(env!("CARGO_BIN_EXE_karmada-descheduler"));
    let id = chart_identity(&env, &helm, "ksrs", None).await?;
    let (rs_written, rs_events, mut rs, _) =
        run_one(&env, "rs-descheduler", ours, "twin-rs", &As::Chart(&id)).await?;
    // It led (its Lease), and nothing it asked for was refused.
    let leases: Api<Lease> = Api::namespaced(env.client().await?, "karmada-system");
    let holder = leases
        .get("karmada-descheduler")
        .await?
        .spec
        .and_then(|s| s.holder_identity);
    assert!(
        holder.is_some(),
        "the Lease karmada-descheduler has no holder"
    );
    let log = std::fs::read_to_string(rs.log_path())?;
    assert!(!log.contains("forbidden"), "{log}");

    assert_eq!(go_written, want, "the Go descheduler follows the rules");
    assert_eq!(
        rs_written, go_written,
        "same spec.clusters as the Go descheduler"
    );
    assert_eq!(go_events, expected_events(), "the Go descheduler's events");
    assert_eq!(rs_events, go_events, "same events as the Go descheduler");
    // A cluster left with no replicas stays in spec.clusters, without a replicas field.
    let api: Api<kube::api::DynamicObject> = Api::namespaced_with(
        env.client().await?,
        "twin-rs",
        &kube::api::ApiResource::erase::<ResourceBinding>(&()),
    );
    let raw = api.get("api-deployment").await?;
    assert_eq!(raw.data["spec"]["clusters"], json!([{"name": "member1"}]));

    // member1's estimator moves (a VIP pointed at another backend): only the targetPort of its
    // ExternalName Service says so. Ours, still running, asks the new address.
    let stopped = StoppedEstimator::kill(&env, "member1")?;
    let (_moved, _port) = stopped.start_moved(&env).await?;
    let m1 = env.member_client("member1").await?;
    deployment_with_pods(&m1, "moved", "web", &[OLD, OLD]).await?;
    let client = env.client().await?;
    apply_value(
        &client,
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "moved"}}),
    )
    .await?;
    apply_value(
        &client,
        &json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "web-deployment", "namespace": "moved",
                         "annotations": {"policy.karmada.io/applied-placement": AGGREGATED}},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment",
                                  "namespace": "moved", "name": "web"},
                     "replicas": 3, "clusters": [{"name": "member1", "replicas": 3}]},
            "status": {"aggregatedStatus": [{"clusterName": "member1",
                                             "status": {"readyReplicas": 1}}]}
        }),
    )
    .await?;
    let moved: Api<ResourceBinding> = Api::namespaced(client, "moved");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        if replicas(&moved.get("web-deployment").await?) == [1] {
            break;
        }
        if tokio::time::Instant::now() > deadline {
            anyhow::bail!(
                "ours did not follow the moved estimator:\n{}",
                rs.log_tail(40)
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    rs.kill();
    env.stop();
    Ok(())
}

/// Ours with the chart's RBAC less `create` on events: it deschedules exactly as with the full
/// role, writes no Event, says once which permission is missing (verb, resource, namespace,
/// identity) however many Events were refused, and counts each refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn descheduler_without_events_create_still_deschedules() -> anyhow::Result<()> {
    const TEST: &str = "descheduler_without_events_create_still_deschedules";
    let Some(tools) = tools_or_skip(TEST) else {
        return Ok(());
    };
    let Some(helm) = helm_or_skip(TEST) else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).members(2).start().await?;
    let ns = "noevents";
    members(&env, ns).await?;
    bindings(&env, ns).await?;
    let id = chart_identity(&env, &helm, "noevents", Some(("", "events", "create"))).await?;
    let metrics = format!("127.0.0.1:{}", free_port());
    let ours = Path::new(env!("CARGO_BIN_EXE_karmada-descheduler"));
    let started = std::time::Instant::now();
    let process = spawn(&env, "rs-descheduler", ours, &As::Chart(&id), &metrics)?;
    let api: Api<ResourceBinding> = Api::namespaced(env.client().await?, ns);
    let want: Vec<(String, Vec<i32>)> = CASES
        .iter()
        .map(|c| (c.name.to_string(), c.want.to_vec()))
        .collect();
    let explain = |e: anyhow::Error| anyhow::anyhow!("{e:#}\n{}", process.log_tail(40));
    wait_for(
        "the bindings descheduled",
        Duration::from_secs(90),
        || async {
            let mut written = Vec::new();
            for case in CASES {
                written.push((case.name.to_string(), replicas(&api.get(case.name).await?)));
            }
            Ok((written == want).then_some(()))
        },
    )
    .await
    .map_err(explain)?;
    let line = format!(
        "forbidden: \"{}\" may not create resource \"events\" in API group \"\" in the namespace \"{ns}\"",
        id.user
    );
    let log = wait_for("the forbidden warning", Duration::from_secs(30), || async {
        let log = std::fs::read_to_string(process.log_path())?;
        Ok(log.contains(&line).then_some(log))
    })
    .await
    .map_err(explain)?;
    println!(
        "the warning: {}",
        log.lines().find(|l| l.contains(&line)).unwrap_or_default()
    );
    // One warning per minute at most, whatever the number of refusals.
    let minutes = started.elapsed().as_secs() / 60;
    let warnings = log.matches(&line).count() as u64;
    assert!(
        (1..=1 + minutes).contains(&warnings),
        "{warnings} warnings in {minutes} whole minutes:\n{log}"
    );
    // Two descheduled bindings, an Event on each and on its workload.
    let series = "karmada_descheduler_forbidden_requests_total{group=\"\",resource=\"events\",verb=\"create\"}";
    let (_, body) = http_get(&metrics, "/metrics").await?;
    let refused: f64 = body
        .lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0.0);
    assert!(refused >= 4.0, "{series} = {refused}\n{body}");
    assert_eq!(events(&env, ns).await?, BTreeSet::new(), "no Event written");
    env.stop();
    Ok(())
}
