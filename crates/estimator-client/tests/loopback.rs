//! The estimator client against real tonic estimator servers on loopback.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Pki, cluster, pull_cluster};
use estimator_client::{
    ConnectionCache, EstimatorOptions, FailurePolicy, InMemoryServiceSource, SchedulerEstimator,
};
use k8s_openapi::api::core::v1::Toleration;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use karmada_api::Cluster;
use karmada_api::work::{Component, NodeClaim, ObjectReference, ReplicaRequirements};
use scheduler_core::estimator::{Ask, EstimateRequest, Estimator};
use testenv::estimator::{Behaviour, FakeEstimator, Running, external_name_service};

fn deployment() -> ObjectReference {
    ObjectReference {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        namespace: "default".into(),
        name: "nginx".into(),
        ..Default::default()
    }
}

fn requirements() -> ReplicaRequirements {
    ReplicaRequirements {
        node_claim: Some(NodeClaim {
            hard_node_affinity: None,
            node_selector: [("disk".to_string(), "ssd".to_string())].into(),
            tolerations: vec![Toleration {
                key: Some("dedicated".into()),
                operator: Some("Equal".into()),
                value: Some("gpu".into()),
                effect: Some("NoSchedule".into()),
                toleration_seconds: None,
            }],
        }),
        resource_request: [("cpu".to_string(), Quantity("500m".into()))].into(),
        namespace: "default".into(),
        priority_class_name: "high".into(),
    }
}

struct Setup {
    source: Arc<InMemoryServiceSource>,
    estimator: SchedulerEstimator,
}

fn setup(options: EstimatorOptions, services: Vec<k8s_openapi::api::core::v1::Service>) -> Setup {
    let source = Arc::new(InMemoryServiceSource::with_objects(services, []));
    let cache = Arc::new(ConnectionCache::new(options, source.clone()));
    Setup {
        source,
        estimator: SchedulerEstimator::new(cache),
    }
}

async fn ask(
    estimator: &SchedulerEstimator,
    clusters: &[Cluster],
) -> Result<Vec<(String, i32)>, String> {
    let refs: Vec<&Cluster> = clusters.iter().collect();
    let resource = deployment();
    let reqs = requirements();
    let request = EstimateRequest {
        ask: Ask::Replicas,
        resource: &resource,
        replica_requirements: Some(&reqs),
        components: &[],
        namespace: "default",
        assumed: None,
    };
    estimator.estimate(&refs, request).await.map_err(|e| e.0)
}

#[tokio::test]
async fn plaintext_call_carries_the_request_and_metadata() {
    let fake = FakeEstimator::default().with("m1", Behaviour::Answer(7));
    let server = fake.serve().await.unwrap();
    let s = setup(
        EstimatorOptions::default(),
        vec![external_name_service("m1", "127.0.0.1", server.addr.port())],
    );
    let m1 = cluster("m1");
    s.estimator.cache().ensure(&m1).await.expect("connects");
    assert_eq!(
        ask(&s.estimator, &[m1]).await.unwrap(),
        [("m1".to_string(), 7)]
    );

    let seen = fake.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].cluster, "m1");
    assert_eq!(
        seen[0].object.as_deref(),
        Some("kind=Deployment, name=default/nginx")
    );
    let req = seen[0].replicas_request.clone().unwrap();
    let rr = req.replica_requirements.unwrap();
    assert_eq!(rr.namespace, "default");
    assert_eq!(rr.priority_class_name, "high");
    // Both forms of the resource request: typed (deprecated) and bytes.
    #[allow(deprecated)]
    let typed = rr
        .resource_request
        .get("cpu")
        .and_then(|q| q.string.clone());
    assert_eq!(typed.as_deref(), Some("500m"));
    assert_eq!(
        rr.resource_request_bytes.get("cpu").unwrap(),
        &[0x0a, 0x04, b'5', b'0', b'0', b'm']
    );
    let claim = rr.node_claim.unwrap();
    assert_eq!(
        claim.node_selector.get("disk").map(String::as_str),
        Some("ssd")
    );
    #[allow(deprecated)]
    let tolerations = claim.tolerations.clone();
    assert_eq!(tolerations.len(), 1);
    assert_eq!(claim.tolerations_bytes.len(), 1);
    assert!(claim.node_affinity_bytes.is_empty());
}

/// `SchedulingOvercommitProtection`: each cluster's request carries that cluster's assumed
/// workloads only, with their namespace, components and replicas.
#[tokio::test]
async fn each_cluster_gets_its_own_assumed_workloads() {
    let fake = FakeEstimator::answering(5);
    let server = fake.serve().await.unwrap();
    let port = server.addr.port();
    let s = setup(
        EstimatorOptions::default(),
        vec![
            external_name_service("m1", "127.0.0.1", port),
            external_name_service("m2", "127.0.0.1", port),
        ],
    );
    let (m1, m2) = (cluster("m1"), cluster("m2"));
    let assumed_web = scheduler_core::AssumedWorkload {
        namespace: "shop".into(),
        components: vec![Component {
            name: "web".into(),
            replicas: 3,
            replica_requirements: None,
        }],
    };
    let assumed: scheduler_core::AssumedByCluster = [("m1".to_string(), vec![assumed_web])]
        .into_iter()
        .collect();
    let resource = deployment();
    let reqs = requirements();
    let request = EstimateRequest {
        ask: Ask::Replicas,
        resource: &resource,
        replica_requirements: Some(&reqs),
        components: &[],
        namespace: "default",
        assumed: Some(&assumed),
    };
    let got = s.estimator.estimate(&[&m1, &m2], request).await.unwrap();
    assert_eq!(got, [("m1".to_string(), 5), ("m2".to_string(), 5)]);
    let mut seen = fake.seen();
    seen.sort_by(|a, b| a.cluster.cmp(&b.cluster));
    let sent = |i: usize| seen[i].replicas_request.clone().unwrap().assumed_workloads;
    let m1_sent = sent(0);
    assert_eq!(m1_sent.len(), 1);
    assert_eq!(m1_sent[0].namespace, "shop");
    assert_eq!(m1_sent[0].components[0].name, "web");
    assert_eq!(m1_sent[0].components[0].replicas, 3);
    assert!(sent(1).is_empty(), "m2 has no assumptions");
}

#[tokio::test]
async fn component_sets_and_unschedulable_replicas() {
    let fake = FakeEstimator::answering(3);
    let server = fake.serve().await.unwrap();
    let s = setup(
        EstimatorOptions::default(),
        vec![external_name_service("m1", "127.0.0.1", server.addr.port())],
    );
    let m1 = cluster("m1");
    let resource = deployment();
    let components = vec![
        Component {
            name: "jobmanager".into(),
            replicas: 1,
            replica_requirements: None,
        },
        Component {
            name: "taskmanager".into(),
            replicas: 4,
            replica_requirements: None,
        },
    ];
    let request = EstimateRequest {
        ask: Ask::ComponentSets,
        resource: &resource,
        replica_requirements: None,
        components: &components,
        namespace: "default",
        assumed: None,
    };
    let got = s.estimator.estimate(&[&m1], request).await.unwrap();
    assert_eq!(got, [("m1".to_string(), 3)]);
    let seen = fake.seen();
    let sets = seen[0].sets_request.clone().unwrap();
    assert_eq!(sets.namespace, "default");
    assert_eq!(
        sets.components
            .iter()
            .map(|c| (c.name.as_str(), c.replicas))
            .collect::<Vec<_>>(),
        [("jobmanager", 1), ("taskmanager", 4)]
    );

    let got = s
        .estimator
        .get_unschedulable_replicas(&["m1".to_string()], &resource, Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(got, [("m1".to_string(), 3)]);
    assert_eq!(fake.seen()[1].method, "GetUnschedulableReplicas");
}

#[tokio::test]
async fn first_use_connects_without_ensure() {
    let server = FakeEstimator::answering(5).serve().await.unwrap();
    let s = setup(
        EstimatorOptions::default(),
        vec![external_name_service("m1", "127.0.0.1", server.addr.port())],
    );
    assert_eq!(
        ask(&s.estimator, &[cluster("m1")]).await.unwrap(),
        [("m1".to_string(), 5)]
    );
    assert!(s.estimator.cache().connection("m1").is_some());
}

#[tokio::test]
async fn ipv6_loopback_external_name() {
    let Ok(probe) = std::net::TcpListener::bind("[::1]:0") else {
        eprintln!("no IPv6 loopback here; skipping");
        return;
    };
    drop(probe);
    let server = FakeEstimator::answering(6)
        .serve_on("::1", 0, None)
        .await
        .unwrap();
    let s = setup(
        EstimatorOptions::default(),
        vec![external_name_service("m1", "::1", server.addr.port())],
    );
    assert_eq!(
        ask(&s.estimator, &[cluster("m1")]).await.unwrap(),
        [("m1".to_string(), 6)]
    );
    let target = s.estimator.cache().connection("m1").unwrap().target();
    assert_eq!(target, format!("[::1]:{}", server.addr.port()));
}

#[tokio::test]
async fn tls_with_ca_verifies_the_ip_of_the_target() {
    let pki = Pki::new(&["127.0.0.1", "estimator.test"]);
    let server = FakeEstimator::answering(11)
        .serve_on("127.0.0.1", 0, Some(pki.server_tls(false)))
        .await
        .unwrap();
    let options = EstimatorOptions {
        ca_file: Some(pki.ca_file.clone()),
        ..Default::default()
    };
    let s = setup(
        options,
        vec![external_name_service("m1", "127.0.0.1", server.addr.port())],
    );
    s.estimator
        .cache()
        .ensure(&cluster("m1"))
        .await
        .expect("TLS connects");
    assert_eq!(
        ask(&s.estimator, &[cluster("m1")]).await.unwrap(),
        [("m1".to_string(), 11)]
    );
}

#[tokio::test]
async fn plaintext_client_cannot_talk_to_a_tls_server() {
    let pki = Pki::new(&["127.0.0.1"]);
    let server = FakeEstimator::answering(1)
        .serve_on("127.0.0.1", 0, Some(pki.server_tls(false)))
        .await
        .unwrap();
    let s = setup(
        EstimatorOptions::default(),
        vec![external_name_service("m1", "127.0.0.1", server.addr.port())],
    );
    let ensured = s.estimator.cache().ensure(&cluster("m1")).await;
    let answered = ask(&s.estimator, &[cluster("m1")]).await;
    assert!(ensured.is_err() || answered.is_err());
}

#[tokio::test]
async fn mutual_tls_needs_both_cert_and_key() {
    let pki = Pki::new(&["127.0.0.1"]);
    let server = FakeEstimator::answering(12)
        .serve_on("127.0.0.1", 0, Some(pki.server_tls(true)))
        .await
        .unwrap();
    let services = || vec![external_name_service("m1", "127.0.0.1", server.addr.port())];

    let with_pair = EstimatorOptions {
        ca_file: Some(pki.ca_file.clone()),
        cert_file: Some(pki.client_cert_file.clone()),
        key_file: Some(pki.client_key_file.clone()),
        ..Default::default()
    };
    let s = setup(with_pair, services());
    assert_eq!(
        ask(&s.estimator, &[cluster("m1")]).await.unwrap(),
        [("m1".to_string(), 12)]
    );

    // Only the certificate: the reference presents none, and the server refuses.
    let cert_only = EstimatorOptions {
        ca_file: Some(pki.ca_file.clone()),
        cert_file: Some(pki.client_cert_file.clone()),
        ..Default::default()
    };
    let s = setup(cert_only, services());
    let err = ask(&s.estimator, &[cluster("m1")]).await.unwrap_err();
    assert!(err.contains("m1"), "{err}");
}

#[tokio::test]
async fn wrong_ca_is_rejected() {
    let pki = Pki::new(&["127.0.0.1"]);
    let other = Pki::new(&["127.0.0.1"]);
    let server = FakeEstimator::answering(1)
        .serve_on("127.0.0.1", 0, Some(pki.server_tls(false)))
        .await
        .unwrap();
    let options = EstimatorOptions {
        ca_file: Some(other.ca_file.clone()),
        ..Default::default()
    };
    let s = setup(
        options,
        vec![external_name_service("m1", "127.0.0.1", server.addr.port())],
    );
    let err = s
        .estimator
        .cache()
        .ensure(&cluster("m1"))
        .await
        .unwrap_err()
        .to_string();
    let prefix = format!("dial 127.0.0.1:{} error: ", server.addr.port());
    assert!(err.starts_with(&prefix), "{err}");
    assert!(err.to_lowercase().contains("certificate"), "{err}");
    assert_eq!(
        ask(&s.estimator, &[cluster("m1")]).await.unwrap_err(),
        "cluster m1 does not exist in estimator cache"
    );
}

#[tokio::test]
async fn skipped_verification_accepts_any_certificate() {
    // The certificate names neither the address nor anything we trust.
    let pki = Pki::new(&["somewhere.else"]);
    let server = FakeEstimator::answering(13)
        .serve_on("127.0.0.1", 0, Some(pki.server_tls(false)))
        .await
        .unwrap();
    let options = EstimatorOptions {
        insecure_skip_verify: true,
        ..Default::default()
    };
    let s = setup(
        options,
        vec![external_name_service("m1", "127.0.0.1", server.addr.port())],
    );
    assert_eq!(
        ask(&s.estimator, &[cluster("m1")]).await.unwrap(),
        [("m1".to_string(), 13)]
    );
}

#[tokio::test]
async fn server_name_override_verifies_a_dns_name_while_dialling_an_ip() {
    let pki = Pki::new(&["estimator.test"]);
    let server = FakeEstimator::answering(14)
        .serve_on("127.0.0.1", 0, Some(pki.server_tls(false)))
        .await
        .unwrap();
    let services = || vec![external_name_service("m1", "127.0.0.1", server.addr.port())];

    let without = EstimatorOptions {
        ca_file: Some(pki.ca_file.clone()),
        ..Default::default()
    };
    let s = setup(without, services());
    assert!(s.estimator.cache().ensure(&cluster("m1")).await.is_err());

    let with = EstimatorOptions {
        ca_file: Some(pki.ca_file.clone()),
        server_name: Some("estimator.test".into()),
        ..Default::default()
    };
    let s = setup(with, services());
    assert_eq!(
        ask(&s.estimator, &[cluster("m1")]).await.unwrap(),
        [("m1".to_string(), 14)]
    );
}

fn short_timeout(policy: FailurePolicy) -> EstimatorOptions {
    EstimatorOptions {
        timeout: Duration::from_millis(500),
        failure_policy: policy,
        ..Default::default()
    }
}

#[tokio::test]
async fn hung_estimator_fails_the_whole_answer_by_default() {
    let fake = FakeEstimator::default()
        .with("m1", Behaviour::Answer(7))
        .with("m2", Behaviour::Hang);
    let server = fake.serve().await.unwrap();
    let port = server.addr.port();
    let s = setup(
        short_timeout(FailurePolicy::FailAll),
        vec![
            external_name_service("m1", "127.0.0.1", port),
            external_name_service("m2", "127.0.0.1", port),
        ],
    );
    let err = ask(&s.estimator, &[cluster("m1"), cluster("m2")])
        .await
        .unwrap_err();
    assert_eq!(
        err,
        "gRPC request cluster(m2) estimator error when calling MaxAvailableReplicas: \
         rpc error: code = DeadlineExceeded desc = context deadline exceeded"
    );
}

#[tokio::test]
async fn hung_failed_and_missing_estimators_answer_no_opinion_in_fallback_mode() {
    let fake = FakeEstimator::default()
        .with("m1", Behaviour::Answer(7))
        .with("m2", Behaviour::Hang)
        .with("m3", Behaviour::Fail(tonic::Status::internal("boom")))
        .with("m5", Behaviour::Answer(9));
    let server = fake.serve().await.unwrap();
    let port = server.addr.port();
    let services = ["m1", "m2", "m3", "m5"]
        .map(|c| external_name_service(c, "127.0.0.1", port))
        .to_vec();
    // m4 has no Service: DNS fallback names that do not resolve.
    let s = setup(short_timeout(FailurePolicy::PerCluster), services.clone());
    let clusters = ["m1", "m2", "m3", "m4", "m5"].map(cluster);
    let got = ask(&s.estimator, &clusters).await.unwrap();
    assert_eq!(
        got,
        [("m1", 7), ("m2", -1), ("m3", -1), ("m4", -1), ("m5", 9)].map(|(c, n)| (c.to_string(), n))
    );

    // The same in the default mode: all errors aggregated in cluster order.
    let s2 = setup(short_timeout(FailurePolicy::FailAll), services);
    let err = ask(&s2.estimator, &clusters).await.unwrap_err();
    assert!(
        err.starts_with("[gRPC request cluster(m2) estimator error"),
        "{err}"
    );
    assert!(err.contains("gRPC request cluster(m3) estimator error when calling MaxAvailableReplicas: rpc error: code = Internal desc = boom"), "{err}");
    assert!(
        err.contains("cluster m4 does not exist in estimator cache"),
        "{err}"
    );
}

#[tokio::test]
async fn service_change_to_a_new_port_reaches_the_new_server() {
    let old = FakeEstimator::answering(1).serve().await.unwrap();
    let new = FakeEstimator::answering(2).serve().await.unwrap();
    let s = setup(
        EstimatorOptions::default(),
        vec![external_name_service("m1", "127.0.0.1", old.addr.port())],
    );
    let m1 = cluster("m1");
    s.estimator.cache().ensure(&m1).await.unwrap();
    assert_eq!(
        ask(&s.estimator, std::slice::from_ref(&m1)).await.unwrap(),
        [("m1".to_string(), 1)]
    );

    // An unrelated Service event changes nothing.
    assert!(
        !s.estimator
            .cache()
            .on_service_changed("karmada-system", "something-else")
            .await
            .unwrap()
    );
    // The same Service unchanged: no reconnect.
    let name = "karmada-scheduler-estimator-m1";
    assert!(
        !s.estimator
            .cache()
            .on_service_changed("karmada-system", name)
            .await
            .unwrap()
    );

    s.source
        .upsert_service(external_name_service("m1", "127.0.0.1", new.addr.port()));
    assert!(
        s.estimator
            .cache()
            .on_service_changed("karmada-system", name)
            .await
            .unwrap()
    );
    assert_eq!(
        ask(&s.estimator, &[m1]).await.unwrap(),
        [("m1".to_string(), 2)]
    );
}

/// The estimator restarts on the same address (a pod restarted behind the same VIP): the
/// connection it closed is dialled again by a later call, with no Service or Cluster event.
#[tokio::test]
async fn an_estimator_restarted_on_the_same_address_is_dialled_again() {
    let probe = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = probe.local_addr().unwrap().port();
    drop(probe);
    let mut first = FakeEstimator::answering(1)
        .serve_on("127.0.0.1", port, None)
        .await
        .unwrap();
    let s = setup(
        EstimatorOptions::default(),
        vec![external_name_service("m1", "127.0.0.1", port)],
    );
    let m1 = cluster("m1");
    s.estimator.cache().ensure(&m1).await.unwrap();
    assert_eq!(
        ask(&s.estimator, std::slice::from_ref(&m1)).await.unwrap(),
        [("m1".to_string(), 1)]
    );
    let before = s.estimator.cache().connection("m1").expect("connected");

    // Graceful stop: the server says GOAWAY and closes the connection.
    first.stop();
    // While nothing listens, calls fail as unavailable (the redial is refused) and the
    // cluster keeps its connection entry.
    let mut last = Ok(Vec::new());
    for _ in 0..100 {
        last = ask(&s.estimator, std::slice::from_ref(&m1)).await;
        if last
            .as_ref()
            .is_err_and(|e| e.contains("code = Unavailable"))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let refused = last.expect_err("calls fail once the estimator is gone");
    assert!(refused.contains("code = Unavailable"), "{refused}");

    let _second = FakeEstimator::answering(2)
        .serve_on("127.0.0.1", port, None)
        .await
        .unwrap();
    assert_eq!(
        ask(&s.estimator, std::slice::from_ref(&m1)).await.unwrap(),
        [("m1".to_string(), 2)],
        "the next call dials the restarted estimator"
    );
    let after = s.estimator.cache().connection("m1").expect("connected");
    assert!(
        Arc::ptr_eq(&before, &after),
        "the same cache entry redialled its own address"
    );
}

/// A headless Service with hand-made endpoints: editing only the EndpointSlice moves the
/// calls (what the daemon does on an EndpointSlice watch event).
#[tokio::test]
async fn endpoint_slice_change_of_a_headless_service_reaches_the_new_server() {
    let old = FakeEstimator::answering(1).serve().await.unwrap();
    let new = FakeEstimator::answering(2).serve().await.unwrap();
    let name = "karmada-scheduler-estimator-m1";
    let headless: k8s_openapi::api::core::v1::Service = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "karmada-system"},
        "spec": {"clusterIP": "None", "ports": [{"name": "grpc", "port": 10352}]}
    }))
    .unwrap();
    let slice = |port: u16| -> k8s_openapi::api::discovery::v1::EndpointSlice {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("{name}-manual"), "namespace": "karmada-system",
                         "labels": {"kubernetes.io/service-name": name}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["127.0.0.1"]}],
            "ports": [{"name": "grpc", "port": port}]
        }))
        .unwrap()
    };
    let s = setup(EstimatorOptions::default(), vec![headless]);
    s.source.upsert_endpoint_slice(slice(old.addr.port()));
    let m1 = cluster("m1");
    s.estimator.cache().ensure(&m1).await.unwrap();
    assert_eq!(
        ask(&s.estimator, std::slice::from_ref(&m1)).await.unwrap(),
        [("m1".to_string(), 1)]
    );

    let moved = slice(new.addr.port());
    s.source.upsert_endpoint_slice(moved.clone());
    assert!(
        s.estimator
            .cache()
            .on_endpoint_slice_changed(&moved)
            .await
            .unwrap()
    );
    assert_eq!(
        ask(&s.estimator, &[m1]).await.unwrap(),
        [("m1".to_string(), 2)]
    );
}

#[tokio::test]
async fn cluster_delete_drops_the_connection() {
    let server = FakeEstimator::answering(4).serve().await.unwrap();
    let s = setup(
        EstimatorOptions::default(),
        vec![external_name_service("m1", "127.0.0.1", server.addr.port())],
    );
    s.estimator.cache().ensure(&cluster("m1")).await.unwrap();
    assert_eq!(s.estimator.cache().clusters(), ["m1"]);
    s.estimator.cache().on_cluster_deleted("m1");
    assert!(s.estimator.cache().connection("m1").is_none());
    assert!(s.estimator.cache().clusters().is_empty());
}

#[tokio::test]
async fn pull_clusters_get_no_connection_with_the_pull_mode_flag() {
    let server = FakeEstimator::answering(4).serve().await.unwrap();
    let port = server.addr.port();
    let options = EstimatorOptions {
        disable_in_pull_mode: true,
        ..Default::default()
    };
    let s = setup(
        options,
        vec![
            external_name_service("p1", "127.0.0.1", port),
            external_name_service("m1", "127.0.0.1", port),
        ],
    );
    let p1 = pull_cluster("p1");
    s.estimator.cache().ensure(&p1).await.unwrap();
    assert!(s.estimator.cache().connection("p1").is_none());
    // Asked anyway, it fails the whole answer.
    let err = ask(&s.estimator, &[cluster("m1"), p1]).await.unwrap_err();
    assert_eq!(err, "cluster p1 does not exist in estimator cache");

    // Without the flag Pull clusters are served like the others.
    let s = setup(
        EstimatorOptions::default(),
        vec![external_name_service("p1", "127.0.0.1", port)],
    );
    assert_eq!(
        ask(&s.estimator, &[pull_cluster("p1")]).await.unwrap(),
        [("p1".to_string(), 4)]
    );
}

#[tokio::test]
async fn headless_service_balances_over_ready_endpoints() {
    use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
    use k8s_openapi::api::discovery::v1::{Endpoint, EndpointPort, EndpointSlice};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    let a = FakeEstimator::answering(1);
    let b = FakeEstimator::answering(1);
    // Both listen on the same port on two loopback addresses, as endpoints of one Service do.
    let sa = a.serve().await.unwrap();
    let port = sa.addr.port();
    let Ok(listener) = tokio::net::TcpListener::bind(("127.0.0.2", port)).await else {
        eprintln!("127.0.0.2:{port} not bindable here; skipping");
        return;
    };
    drop(listener);
    let _sb = b.serve_on("127.0.0.2", port, None).await.unwrap();

    let name = "karmada-scheduler-estimator-m1";
    let service = Service {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("karmada-system".into()),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            ports: Some(vec![ServicePort {
                name: Some("grpc".into()),
                port: 10352,
                ..Default::default()
            }]),
            ..Default::default()
        }),
        status: None,
    };
    let slice = EndpointSlice {
        address_type: "IPv4".into(),
        metadata: ObjectMeta {
            name: Some(format!("{name}-x")),
            namespace: Some("karmada-system".into()),
            labels: Some([("kubernetes.io/service-name".to_string(), name.to_string())].into()),
            ..Default::default()
        },
        ports: Some(vec![EndpointPort {
            name: Some("grpc".into()),
            port: Some(i32::from(port)),
            ..Default::default()
        }]),
        endpoints: vec![
            Endpoint {
                addresses: vec!["127.0.0.1".into()],
                ..Default::default()
            },
            Endpoint {
                addresses: vec!["127.0.0.2".into()],
                ..Default::default()
            },
        ],
    };
    let source = Arc::new(InMemoryServiceSource::with_objects([service], [slice]));
    let cache = Arc::new(ConnectionCache::new(EstimatorOptions::default(), source));
    let estimator = SchedulerEstimator::new(cache);
    for _ in 0..4 {
        assert_eq!(
            ask(&estimator, &[cluster("m1")]).await.unwrap(),
            [("m1".to_string(), 1)]
        );
    }
    assert_eq!(a.seen().len(), 2);
    assert_eq!(b.seen().len(), 2);
}

#[tokio::test]
async fn metrics_are_per_cluster() {
    let server = FakeEstimator::default()
        .with("m1", Behaviour::Answer(1))
        .serve()
        .await
        .unwrap();
    let s = setup(
        EstimatorOptions::default(),
        vec![external_name_service("m1", "127.0.0.1", server.addr.port())],
    );
    let mut registry = prometheus_client::registry::Registry::default();
    s.estimator.cache().register_metrics(&mut registry);
    ask(&s.estimator, &[cluster("m1")]).await.unwrap();
    let _ = ask(&s.estimator, &[cluster("gone")]).await;
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(text.contains(
        r#"karmada_scheduler_estimator_client_requests_total{cluster="m1",method="MaxAvailableReplicas",result="success"} 1"#
    ), "{text}");
    assert!(text.contains(
        r#"karmada_scheduler_estimator_client_requests_total{cluster="gone",method="MaxAvailableReplicas",result="no_connection"} 1"#
    ), "{text}");
    assert!(
        text.contains(r#"karmada_scheduler_estimator_client_connected{cluster="m1"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(
            r#"karmada_scheduler_estimator_client_dials_total{cluster="m1",result="success"} 1"#
        ),
        "{text}"
    );
    assert!(
        text.contains("karmada_scheduler_estimator_client_request_duration_seconds_bucket"),
        "{text}"
    );

    s.estimator.cache().on_cluster_deleted("m1");
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(!text.contains(r#"cluster="m1""#), "{text}");
}

#[tokio::test]
async fn a_hanging_first_dial_costs_one_timeout_then_backs_off() {
    // Accepts TCP and never answers the TLS handshake.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let _held = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let options = EstimatorOptions {
        insecure_skip_verify: true,
        timeout: Duration::from_millis(200),
        connect_timeout: Duration::from_millis(500),
        failure_policy: FailurePolicy::PerCluster,
        ..Default::default()
    };
    let s = setup(
        options,
        vec![external_name_service("m1", "127.0.0.1", port)],
    );
    let mut registry = prometheus_client::registry::Registry::default();
    s.estimator.cache().register_metrics(&mut registry);

    assert_eq!(
        ask(&s.estimator, &[cluster("m1")]).await.unwrap(),
        [("m1".to_string(), -1)]
    );
    // The dial goes on after the fan-out gave up, and records its failure.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(
        ask(&s.estimator, &[cluster("m1")]).await.unwrap(),
        [("m1".to_string(), -1)]
    );
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(
        text.contains(
            r#"karmada_scheduler_estimator_client_dials_total{cluster="m1",result="error"} 1"#
        ),
        "{text}"
    );
    // A Cluster event still dials (the sync merges and backs off events per cluster), and
    // fails with the reason.
    let err = s
        .estimator
        .cache()
        .ensure(&cluster("m1"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!("dial 127.0.0.1:{port} error: timeout")),
        "{err}"
    );
}

/// The Service annotation names the TLS server name of one estimator, over the option, when
/// the operator allows it (tests/hostile_service.rs: not otherwise).
#[tokio::test]
async fn a_service_annotation_names_the_tls_server_of_its_estimator() {
    let pki = Pki::new(&["estimator-m1.test"]);
    let server = FakeEstimator::answering(15)
        .serve_on("127.0.0.1", 0, Some(pki.server_tls(false)))
        .await
        .unwrap();
    let annotated = |name: Option<&str>| {
        let mut svc = external_name_service("m1", "127.0.0.1", server.addr.port());
        if let Some(name) = name {
            svc.metadata.annotations = Some(
                [(
                    estimator_client::resolver::TLS_SERVER_NAME_ANNOTATION.to_string(),
                    name.to_string(),
                )]
                .into(),
            );
        }
        vec![svc]
    };
    // The option names another estimator's certificate: verification fails...
    let options = EstimatorOptions {
        ca_file: Some(pki.ca_file.clone()),
        server_name: Some("estimator-other.test".into()),
        tls_server_name_annotation: true,
        ..Default::default()
    };
    let s = setup(options.clone(), annotated(None));
    let err = s
        .estimator
        .cache()
        .ensure(&cluster("m1"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("127.0.0.1"), "{err}");
    // ...and the Service's own annotation wins over it.
    let s = setup(options, annotated(Some("estimator-m1.test")));
    assert_eq!(
        ask(&s.estimator, &[cluster("m1")]).await.unwrap(),
        [("m1".to_string(), 15)]
    );
}

/// With endpoint routing, a ClusterIP Service whose cluster IP leads nowhere is reached
/// through the ready endpoint of its EndpointSlice.
#[tokio::test]
async fn endpoint_routing_dials_a_cluster_ip_services_endpoints() {
    use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
    use k8s_openapi::api::discovery::v1::{
        Endpoint, EndpointConditions, EndpointPort, EndpointSlice,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    let live = FakeEstimator::answering(16).serve().await.unwrap();
    // A loopback address where nothing listens stands for a virtual IP no kube-proxy serves.
    let nowhere = "127.0.0.3";
    let name = "karmada-scheduler-estimator-m1";
    let service = Service {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("karmada-system".into()),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".into()),
            cluster_ip: Some(nowhere.into()),
            ports: Some(vec![ServicePort {
                name: Some("grpc".into()),
                port: 10352,
                target_port: Some(
                    k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(i32::from(
                        live.addr.port(),
                    )),
                ),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        status: None,
    };
    let slice = |ready: bool| EndpointSlice {
        address_type: "IPv4".into(),
        metadata: ObjectMeta {
            name: Some(format!("{name}-x")),
            namespace: Some("karmada-system".into()),
            labels: Some([("kubernetes.io/service-name".to_string(), name.to_string())].into()),
            ..Default::default()
        },
        ports: Some(vec![EndpointPort {
            name: Some("grpc".into()),
            port: Some(i32::from(live.addr.port())),
            ..Default::default()
        }]),
        endpoints: vec![Endpoint {
            addresses: vec!["127.0.0.1".into()],
            conditions: Some(EndpointConditions {
                ready: Some(ready),
                ..Default::default()
            }),
            ..Default::default()
        }],
    };
    let cache_with = |routing: bool, ready: bool| {
        let source = Arc::new(InMemoryServiceSource::with_objects(
            [service.clone()],
            [slice(ready)],
        ));
        let options = EstimatorOptions {
            endpoint_routing: routing,
            connect_timeout: Duration::from_secs(2),
            ..Default::default()
        };
        Arc::new(ConnectionCache::new(options, source))
    };
    // (Without routing the cluster IP is dialled, then cluster DNS names: the resolver's unit
    // tests check that list; dialling it here would ask DNS, off loopback.)
    let on = SchedulerEstimator::new(cache_with(true, true));
    assert_eq!(
        ask(&on, &[cluster("m1")]).await.unwrap(),
        [("m1".to_string(), 16)]
    );
    // No ready endpoint: an error naming the Service, the port and what is wrong.
    let none = cache_with(true, false);
    let err = none.ensure(&cluster("m1")).await.unwrap_err().to_string();
    assert!(
        err.contains(name) && err.contains("10352") && err.contains("endpoint routing"),
        "{err}"
    );
}

/// The estimator codec starts from small buffers: a request far larger than them (and than
/// the point where a large encode yields) still arrives whole.
#[tokio::test]
async fn a_request_much_larger_than_the_codec_buffers_arrives_whole() {
    let fake = FakeEstimator::default().with("m1", Behaviour::Answer(3));
    let server = fake.serve().await.unwrap();
    let s = setup(
        EstimatorOptions::default(),
        vec![external_name_service("m1", "127.0.0.1", server.addr.port())],
    );
    let mut reqs = requirements();
    let selector: std::collections::BTreeMap<String, String> = (0..2000)
        .map(|i| {
            (
                format!("label-{i:05}"),
                format!("value-{i:05}-{}", "x".repeat(24)),
            )
        })
        .collect();
    reqs.node_claim.as_mut().unwrap().node_selector = selector.clone();
    let resource = deployment();
    let m1 = cluster("m1");
    let answer = s
        .estimator
        .estimate(
            &[&m1],
            EstimateRequest {
                ask: Ask::Replicas,
                resource: &resource,
                replica_requirements: Some(&reqs),
                components: &[],
                namespace: "default",
                assumed: None,
            },
        )
        .await
        .map_err(|e| e.0)
        .unwrap();
    assert_eq!(answer, [("m1".to_string(), 3)]);
    let seen = fake.seen();
    let claim = seen[0]
        .replicas_request
        .clone()
        .unwrap()
        .replica_requirements
        .unwrap()
        .node_claim
        .unwrap();
    assert_eq!(claim.node_selector.len(), 2000);
    assert_eq!(
        claim
            .node_selector
            .into_iter()
            .collect::<std::collections::BTreeMap<_, _>>(),
        selector
    );
    assert!(
        estimator_client::codec::BUFFER_SIZE * 100 < selector.len() * 40,
        "the request must dwarf the codec's buffers"
    );
}

/// With two call slots, a fan-out to six clusters sends them two at a time and still gets
/// every answer, in the order of the clusters.
#[tokio::test]
async fn calls_beyond_the_slots_wait_and_are_answered_in_order() {
    let mut fake = FakeEstimator::default();
    for (i, name) in ["m1", "m2", "m3", "m4", "m5", "m6"].iter().enumerate() {
        fake = fake.with(name, Behaviour::Answer(10 + i as i32));
    }
    let server = fake.serve().await.unwrap();
    let port = server.addr.port();
    let names = ["m1", "m2", "m3", "m4", "m5", "m6"];
    let source = Arc::new(InMemoryServiceSource::with_objects(
        names
            .iter()
            .map(|n| external_name_service(n, "127.0.0.1", port))
            .collect::<Vec<_>>(),
        [],
    ));
    let cache = Arc::new(ConnectionCache::new(EstimatorOptions::default(), source));
    let estimator = SchedulerEstimator::with_call_slots(cache, 2);
    let clusters: Vec<Cluster> = names.iter().map(|n| cluster(n)).collect();
    let answers = ask(&estimator, &clusters).await.unwrap();
    let want: Vec<(String, i32)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.to_string(), 10 + i as i32))
        .collect();
    assert_eq!(answers, want);
    assert_eq!(fake.seen().len(), 6);
}

/// `fake` serving every one of `names` on one loopback port, and an estimator with two call
/// slots and the short timeout; the server stops when the first value is dropped.
async fn two_slots(
    fake: &FakeEstimator,
    names: &[&str],
    policy: FailurePolicy,
) -> (Running, SchedulerEstimator) {
    let server = fake.serve().await.unwrap();
    let port = server.addr.port();
    let source = Arc::new(InMemoryServiceSource::with_objects(
        names
            .iter()
            .map(|n| external_name_service(n, "127.0.0.1", port))
            .collect::<Vec<_>>(),
        [],
    ));
    let cache = Arc::new(ConnectionCache::new(short_timeout(policy), source));
    (server, SchedulerEstimator::with_call_slots(cache, 2))
}

/// Fan-outs take slots in turn and a call waiting for another fan-out's slot gets the whole
/// timeout from its start: with two slots, a fan-out queued behind one whose calls take
/// 300 ms of its 500 ms still gets its whole 500 ms, so both are answered, one after the
/// other. (Counted from the first fan-out's start, the second's calls would have had 200 ms
/// for 300 ms of work.)
#[tokio::test]
async fn a_fan_out_waiting_behind_another_gets_its_whole_timeout() {
    let slow = Duration::from_millis(300);
    let names = ["m1", "m2", "m3", "m4"];
    let mut fake = FakeEstimator::default();
    for (i, name) in names.iter().enumerate() {
        fake = fake.with(name, Behaviour::AnswerAfter(i as i32, slow));
    }
    let (_server, estimator) = two_slots(&fake, &names, FailurePolicy::FailAll).await;
    let first = [cluster("m1"), cluster("m2")];
    let second = [cluster("m3"), cluster("m4")];
    let started = std::time::Instant::now();
    let (a, b) = tokio::join!(ask(&estimator, &first), ask(&estimator, &second));
    let took = started.elapsed();
    assert_eq!(a.unwrap(), [("m1".to_string(), 0), ("m2".to_string(), 1)]);
    assert_eq!(b.unwrap(), [("m3".to_string(), 2), ("m4".to_string(), 3)]);
    // One after the other: the second was not sent until the first was answered.
    assert!(took >= 2 * slow, "took {took:?}");
    let order: Vec<String> = fake.seen().iter().map(|s| s.cluster.clone()).collect();
    assert_eq!(order.len(), 4, "sent {order:?}");
    assert!(
        order[..2].iter().all(|c| c == "m1" || c == "m2"),
        "sent {order:?}"
    );
}

/// A fan-out queued behind one with a hung call starts on the slots the other's answered
/// calls give back, instead of waiting for every slot to be free: with two slots, the second
/// fan-out is answered while the first still waits for its hung cluster. (Admitted whole, it
/// would wait for the hung call's 500 ms timeout.) Each answer is its own cluster's.
#[tokio::test]
async fn a_fan_out_starts_on_the_slots_another_gives_back() {
    let names = ["m1", "m2", "m3", "m4"];
    let fake = FakeEstimator::default()
        .with("m1", Behaviour::Hang)
        .with("m2", Behaviour::Answer(2))
        .with("m3", Behaviour::Answer(3))
        .with("m4", Behaviour::Answer(4));
    let (_server, estimator) = two_slots(&fake, &names, FailurePolicy::PerCluster).await;
    let first = [cluster("m1"), cluster("m2")];
    let second = [cluster("m3"), cluster("m4")];
    let started = std::time::Instant::now();
    let first_done = async {
        let answer = ask(&estimator, &first).await;
        (answer, started.elapsed())
    };
    let second_done = async {
        let answer = ask(&estimator, &second).await;
        (answer, started.elapsed())
    };
    let ((a, a_took), (b, b_took)) = tokio::join!(first_done, second_done);
    assert_eq!(a.unwrap(), [("m1".to_string(), -1), ("m2".to_string(), 2)]);
    assert_eq!(b.unwrap(), [("m3".to_string(), 3), ("m4".to_string(), 4)]);
    assert!(
        a_took >= Duration::from_millis(500),
        "first took {a_took:?}"
    );
    assert!(
        b_took < Duration::from_millis(400),
        "second took {b_took:?}, first {a_took:?}"
    );
}

/// With every slot taken by hung calls until the deadline, a waiting cluster is never sent
/// and fails as timed out, at the fan-out's one deadline; with the default slots it is sent
/// and answered.
#[tokio::test]
async fn a_call_waiting_for_a_slot_past_the_deadline_times_out_unsent() {
    let fake = FakeEstimator::default()
        .with("m1", Behaviour::Hang)
        .with("m2", Behaviour::Hang)
        .with("m3", Behaviour::Answer(5));
    let server = fake.serve().await.unwrap();
    let port = server.addr.port();
    let services = || {
        ["m1", "m2", "m3"]
            .iter()
            .map(|n| external_name_service(n, "127.0.0.1", port))
            .collect::<Vec<_>>()
    };
    let clusters = [cluster("m1"), cluster("m2"), cluster("m3")];
    let cache = |services| {
        Arc::new(ConnectionCache::new(
            short_timeout(FailurePolicy::PerCluster),
            Arc::new(InMemoryServiceSource::with_objects(services, [])),
        ))
    };

    let bounded = SchedulerEstimator::with_call_slots(cache(services()), 2);
    let started = std::time::Instant::now();
    let answers = ask(&bounded, &clusters).await.unwrap();
    let took = started.elapsed();
    assert_eq!(
        answers,
        [
            ("m1".to_string(), -1),
            ("m2".to_string(), -1),
            ("m3".to_string(), -1)
        ]
    );
    assert!(took < Duration::from_millis(1500), "took {took:?}");
    let sent: Vec<String> = fake.seen().iter().map(|s| s.cluster.clone()).collect();
    assert!(!sent.contains(&"m3".to_string()), "m3 was sent: {sent:?}");

    let unbounded = SchedulerEstimator::new(cache(services()));
    let answers = ask(&unbounded, &clusters).await.unwrap();
    assert_eq!(answers[2], ("m3".to_string(), 5));
}
