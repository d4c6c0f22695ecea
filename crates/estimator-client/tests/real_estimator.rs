//! The client against the real Go `karmada-scheduler-estimator` of Karmada v1.18.2, started
//! by `crates/testenv` (a local control plane: etcd, Karmada kube-apiserver, members with fake
//! nodes and pods, one Go estimator per member published as an ExternalName Service).
//!
//! Skipped with a message when the Go binaries are absent and `KARMADA_E2E` is unset; fails
//! instead when `KARMADA_E2E=1` (as in CI).
//!
//! Checked here: the Services are found through the API server ([`KubeServiceSource`]), the
//! real server accepts our dial and requests, our answers equal the Go probe's (Karmada's own
//! client packages), the Kubernetes byte encodings we send are decoded by the Go server (a
//! node affinity nobody matches brings the answer to 0), component sets, and the error text of
//! a cluster-name mismatch.
//!
//! TLS: a second Go estimator of member1 serving mTLS (`--grpc-auth-cert-file`,
//! `--grpc-auth-key-file`, `--grpc-client-ca-file`) with a certificate for a DNS name only
//! (`testenv::pki`), dialled at 127.0.0.1: answered with the CA, our client certificate and
//! the server name; refused without the server name and with another CA, each with an error
//! saying why, and without a client certificate (the first call fails: with TLS 1.3 the
//! server's alert comes after the client's side of the handshake).
//!
//! Karmada v1.19: its estimator protocol reserves the typed `resourceRequest`, `nodeAffinity`
//! and `tolerations` fields and reads only their `*Bytes` twins; ours writes both. With
//! `KARMADA_ESTIMATOR_V1_19` naming a v1.19 estimator binary (built from the public source,
//! `go build ./cmd/scheduler-estimator`; nothing of it is in this repository), a second test runs
//! it for member1 with the v1.18.2 one's command line and compares their answers; without
//! it that test is skipped with a message.

use std::sync::Arc;

use estimator_client::{
    ConnectionCache, EstimatorOptions, InMemoryServiceSource, KubeServiceSource, SchedulerEstimator,
};
use k8s_openapi::api::core::v1::{
    NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Service, Toleration,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use karmada_api::Cluster;
use karmada_api::work::{
    Component, ComponentReplicaRequirements, NodeClaim, ObjectReference, ReplicaRequirements,
};
use kube::api::{Api, ListParams};
use scheduler_core::estimator::{Ask, EstimateRequest, Estimator};
use testenv::pki::{self, Pki};
use testenv::vm::without_flags;
use testenv::{TestEnv, free_port, tools_or_skip};

fn probe_resource() -> ObjectReference {
    ObjectReference {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        namespace: "default".into(),
        name: "probe".into(),
        ..Default::default()
    }
}

fn requirements(node_claim: Option<NodeClaim>) -> ReplicaRequirements {
    ReplicaRequirements {
        node_claim,
        resource_request: [
            ("cpu".to_string(), Quantity("500m".into())),
            ("memory".to_string(), Quantity("512Mi".into())),
        ]
        .into(),
        namespace: "default".into(),
        priority_class_name: String::new(),
    }
}

async fn replicas(
    estimator: &SchedulerEstimator,
    clusters: &[&Cluster],
    reqs: &ReplicaRequirements,
) -> Result<Vec<(String, i32)>, String> {
    let resource = probe_resource();
    let request = EstimateRequest {
        ask: Ask::Replicas,
        resource: &resource,
        replica_requirements: Some(reqs),
        components: &[],
        namespace: "default",
        assumed: None,
    };
    estimator.estimate(clusters, request).await.map_err(|e| e.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_go_estimator_answers_like_its_own_client() {
    let Some(tools) = tools_or_skip("estimator_client_real_estimator") else {
        return;
    };
    let env = TestEnv::builder()
        .tools(tools.clone())
        .members(2)
        .start()
        .await
        .expect("control plane");
    let client = env.client().await.expect("karmada client");

    let cache = Arc::new(ConnectionCache::new(
        EstimatorOptions::default(),
        Arc::new(KubeServiceSource::new(client.clone())),
    ));
    let estimator = SchedulerEstimator::new(cache.clone());
    let clusters = Api::<Cluster>::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("clusters")
        .items;
    assert_eq!(clusters.len(), 2);
    let _ = cache.ensure_all(&clusters).await;
    for c in &clusters {
        let name = c.metadata.name.as_deref().unwrap();
        let member = env.member(name).expect("member info");
        let connection = cache
            .connection(name)
            .unwrap_or_else(|| panic!("{name} connected"));
        assert_eq!(connection.target(), member.estimator_address);
    }
    let refs: Vec<&Cluster> = clusters.iter().collect();

    // Same answers as the Go probe (Karmada's own pb/service packages).
    let got = replicas(&estimator, &refs, &requirements(None))
        .await
        .expect("answers");
    for (name, n) in &got {
        let member = env.member(name).unwrap();
        let want = tools
            .estimator_max_available_replicas(
                &member.estimator_address,
                name,
                &[("cpu", "500m"), ("memory", "512Mi")],
                &[],
            )
            .expect("probe");
        assert_eq!(*n, want, "cluster {name}");
        assert!(*n > 0, "the fake nodes have room: {got:?}");
    }

    // Our NodeSelector bytes are decoded by the Go server: an affinity no node matches
    // leaves no room; a toleration (bytes too) does not break decoding.
    let claim = unmatched_claim(vec![dedicated_toleration()]);
    let none = replicas(&estimator, &refs, &requirements(Some(claim)))
        .await
        .expect("answers");
    assert!(none.iter().all(|(_, n)| *n == 0), "{none:?}");

    // Component sets: one set of 2 x (500m, 512Mi) can never exceed the replica count / 2.
    let sets = worker_sets(&estimator, &refs)
        .await
        .expect("component sets");
    for ((name, s), (_, r)) in sets.iter().zip(&got) {
        assert!(
            *s <= r / 2 && *s >= 0,
            "cluster {name}: {s} sets vs {r} replicas"
        );
    }

    // A cluster whose Service points at another cluster's estimator: the Go server refuses
    // the name, and the error reads like the reference's.
    let services: Api<Service> = Api::namespaced(client.clone(), "karmada-system");
    let mut svc = services
        .get("karmada-scheduler-estimator-member1")
        .await
        .expect("service");
    svc.metadata.name = Some("karmada-scheduler-estimator-impostor".into());
    let cache = Arc::new(ConnectionCache::new(
        EstimatorOptions::default(),
        Arc::new(InMemoryServiceSource::with_objects([svc], [])),
    ));
    let impostor = Cluster::new("impostor", karmada_api::cluster::ClusterSpec::default());
    let err = replicas(
        &SchedulerEstimator::new(cache),
        &[&impostor],
        &requirements(None),
    )
    .await
    .unwrap_err();
    assert!(
        err.starts_with("gRPC request cluster(impostor) estimator error when calling MaxAvailableReplicas: rpc error: code = "),
        "{err}"
    );

    // mTLS against the real Go estimator.
    let member1 = clusters
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some("member1"))
        .expect("member1");
    let plain = got
        .iter()
        .find(|(n, _)| n == "member1")
        .map(|(_, n)| *n)
        .expect("member1 answered");
    let dir = env.state_dir().join("tls");
    let ca = Pki::new(&dir, "estimators").expect("CA");
    let server_name = "estimator-member1.test";
    let server = ca.server("member1", &[server_name]).expect("server cert");
    let client_pair = ca
        .client("scheduler", "karmada-scheduler")
        .expect("client cert");
    let other = Pki::new(&dir, "other").expect("other CA");
    let (mut tls_estimator, port) = second_estimator(
        &env,
        "member1-estimator-tls",
        None,
        &pki::estimator_server_flags(&server, ca.ca_file()),
    )
    .await;
    let svc = service_on_port(&services, port).await;
    let tls_options =
        |ca_file: &std::path::Path, name: Option<&str>, with_cert: bool| EstimatorOptions {
            ca_file: Some(ca_file.to_path_buf()),
            cert_file: with_cert.then(|| client_pair.cert.clone()),
            key_file: with_cert.then(|| client_pair.key.clone()),
            server_name: name.map(str::to_string),
            ..Default::default()
        };
    let over_tls = |options: EstimatorOptions| {
        let svc = svc.clone();
        async move {
            let cache = Arc::new(ConnectionCache::new(
                options,
                Arc::new(InMemoryServiceSource::with_objects([svc], [])),
            ));
            let dial = cache.ensure(member1).await.map_err(|e| e.to_string());
            let answer = replicas(
                &SchedulerEstimator::new(cache),
                &[member1],
                &requirements(None),
            )
            .await;
            (dial, answer)
        }
    };
    let (dial, answer) = over_tls(tls_options(ca.ca_file(), Some(server_name), true)).await;
    assert_eq!(dial, Ok(()));
    assert_eq!(
        answer.expect("answer over mTLS"),
        [("member1".to_string(), plain)],
        "the same answer as over plaintext"
    );
    assert!(
        std::fs::read_to_string(tls_estimator.log_path())
            .unwrap_or_default()
            .contains("name=default/probe)"),
        "the TLS estimator answered"
    );
    // The certificate names a DNS name, the address dialled is 127.0.0.1.
    let (dial, _) = over_tls(tls_options(ca.ca_file(), None, true)).await;
    let err = dial.expect_err("no server name");
    assert!(
        err.starts_with(&format!("dial 127.0.0.1:{port} error: "))
            && err.contains("certificate not valid for name \"127.0.0.1\""),
        "{err}"
    );
    let (dial, _) = over_tls(tls_options(other.ca_file(), Some(server_name), true)).await;
    let err = dial.expect_err("another CA");
    assert!(err.contains("UnknownIssuer"), "{err}");
    // No client certificate: the estimator requires one. TLS 1.3 reports that after the
    // client's side of the handshake, so the connection or the first call fails.
    let (dial, answer) = over_tls(tls_options(ca.ca_file(), Some(server_name), false)).await;
    let refused = match (dial, answer) {
        (Err(e), _) => e,
        (Ok(()), Err(e)) => e,
        (Ok(()), Ok(a)) => panic!("answered without a client certificate: {a:?}"),
    };
    println!("without a client certificate: {refused}");
    assert!(
        refused.to_lowercase().contains("certificate") || refused.contains("member1"),
        "{refused}"
    );
    tls_estimator.kill();
}

/// Another estimator for member1: the program of the running one (or `program`) with its
/// command line and `extra`, on a free port; returned once it listens, with that port.
async fn second_estimator(
    env: &TestEnv,
    name: &str,
    program: Option<&std::path::Path>,
    extra: &[String],
) -> (testenv::GoProcess, u16) {
    let info = env.member("member1").expect("member1 info");
    let (running, args) = testenv::faults::command_line(info.estimator_pid).expect("cmdline");
    let port = free_port();
    let mut args = without_flags(
        &args,
        &[
            "--server-port",
            "--health-probe-bind-address",
            "--metrics-bind-address",
        ],
    );
    args.extend([
        format!("--server-port={port}"),
        format!("--health-probe-bind-address=127.0.0.1:{}", free_port()),
        format!("--metrics-bind-address=127.0.0.1:{}", free_port()),
    ]);
    args.extend(extra.iter().cloned());
    let program = program.map_or(running, std::path::Path::to_path_buf);
    let mut process = env
        .spawn_process(name, &program, &args)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        if let Ok(Some(status)) = process.try_wait() {
            panic!("{name} exited ({status}):\n{}", process.log_tail(20));
        }
        assert!(std::time::Instant::now() < deadline, "{name} not listening");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    (process, port)
}

/// member1's estimator Service, pointed at `port`.
async fn service_on_port(services: &Api<Service>, port: u16) -> Service {
    let mut svc = services
        .get("karmada-scheduler-estimator-member1")
        .await
        .expect("service");
    if let Some(p) = svc
        .spec
        .as_mut()
        .and_then(|s| s.ports.as_mut())
        .and_then(|p| p.first_mut())
    {
        p.target_port = Some(IntOrString::Int(i32::from(port)));
    }
    svc
}

/// member1's answers through `cache`: replicas, replicas under a node affinity nobody
/// matches, replicas with a toleration, component sets of 2 replicas.
async fn member1_answers(cache: Arc<ConnectionCache>, member1: &Cluster) -> [i32; 4] {
    let estimator = SchedulerEstimator::new(cache);
    let one = |r: Result<Vec<(String, i32)>, String>| r.expect("answer")[0].1;
    let plain = one(replicas(&estimator, &[member1], &requirements(None)).await);
    let none = one(replicas(
        &estimator,
        &[member1],
        &requirements(Some(unmatched_claim(Vec::new()))),
    )
    .await);
    let tolerated = one(replicas(
        &estimator,
        &[member1],
        &requirements(Some(NodeClaim {
            tolerations: vec![dedicated_toleration()],
            ..Default::default()
        })),
    )
    .await);
    let sets = one(worker_sets(&estimator, &[member1]).await);
    [plain, none, tolerated, sets]
}

/// A claim whose required node affinity no node matches.
fn unmatched_claim(tolerations: Vec<Toleration>) -> NodeClaim {
    NodeClaim {
        hard_node_affinity: Some(NodeSelector {
            node_selector_terms: vec![NodeSelectorTerm {
                match_expressions: Some(vec![NodeSelectorRequirement {
                    key: "estimator-client.test/no-such-label".into(),
                    operator: "In".into(),
                    values: Some(vec!["x".into()]),
                }]),
                match_fields: None,
            }],
        }),
        node_selector: Default::default(),
        tolerations,
    }
}

fn dedicated_toleration() -> Toleration {
    Toleration {
        key: Some("dedicated".into()),
        operator: Some("Exists".into()),
        effect: Some("NoSchedule".into()),
        ..Default::default()
    }
}

/// Sets of [`worker_components`] per cluster.
async fn worker_sets(
    estimator: &SchedulerEstimator,
    clusters: &[&Cluster],
) -> Result<Vec<(String, i32)>, String> {
    let resource = probe_resource();
    let components = worker_components();
    let request = EstimateRequest {
        ask: Ask::ComponentSets,
        resource: &resource,
        replica_requirements: None,
        components: &components,
        namespace: "default",
        assumed: None,
    };
    estimator.estimate(clusters, request).await.map_err(|e| e.0)
}

/// One component of 2 replicas of (500m, 512Mi).
fn worker_components() -> Vec<Component> {
    vec![Component {
        name: "worker".into(),
        replicas: 2,
        replica_requirements: Some(ComponentReplicaRequirements {
            node_claim: None,
            resource_request: requirements(None).resource_request,
            priority_class_name: String::new(),
        }),
    }]
}

/// A v1.19 estimator (`KARMADA_ESTIMATOR_V1_19`) answers our requests as the v1.18.2 one:
/// plain, under a node affinity nobody matches (0, so it decoded our `nodeAffinityBytes`),
/// with a toleration, and component sets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1_19_estimator_answers_as_the_v1_18_one() {
    let Some(v1_19) = std::env::var_os("KARMADA_ESTIMATOR_V1_19") else {
        eprintln!("KARMADA_ESTIMATOR_V1_19 not set; skipping the v1.19 estimator comparison");
        return;
    };
    let Some(tools) = tools_or_skip("estimator_client_v1_19_estimator") else {
        return;
    };
    let env = TestEnv::builder()
        .tools(tools)
        .members(1)
        .start()
        .await
        .expect("control plane");
    let client = env.client().await.expect("karmada client");
    let clusters = Api::<Cluster>::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("clusters")
        .items;
    let member1 = &clusters[0];
    let cache = Arc::new(ConnectionCache::new(
        EstimatorOptions::default(),
        Arc::new(KubeServiceSource::new(client.clone())),
    ));
    let _ = cache.ensure_all(&clusters).await;
    let old = member1_answers(cache, member1).await;
    assert!(old[0] > 0 && old[1] == 0 && old[2] > 0, "v1.18.2: {old:?}");

    let (mut estimator, port) = second_estimator(
        &env,
        "member1-estimator-v1.19",
        Some(std::path::Path::new(&v1_19)),
        &[],
    )
    .await;
    let services: Api<Service> = Api::namespaced(client.clone(), "karmada-system");
    let svc = service_on_port(&services, port).await;
    let cache = Arc::new(ConnectionCache::new(
        EstimatorOptions::default(),
        Arc::new(InMemoryServiceSource::with_objects([svc], [])),
    ));
    cache
        .ensure(member1)
        .await
        .expect("dial the v1.19 estimator");
    let new = member1_answers(cache, member1).await;
    assert!(
        std::fs::read_to_string(estimator.log_path())
            .unwrap_or_default()
            .contains("name=default/probe)"),
        "the v1.19 estimator answered:\n{}",
        estimator.log_tail(20)
    );
    assert_eq!(
        new, old,
        "v1.19 vs v1.18.2: replicas, unmatched, tolerated, sets"
    );
    println!("v1.18.2 and v1.19 estimators answer {new:?}");
    estimator.kill();
}
