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
//! TODO(testenv): TLS against the Go estimator (needs testenv to start one with
//! `--cert-file`/`--key-file`); covered against tonic servers in `tests/loopback.rs` for now.

use std::sync::Arc;

use estimator_client::{
    ConnectionCache, EstimatorOptions, InMemoryServiceSource, KubeServiceSource, SchedulerEstimator,
};
use k8s_openapi::api::core::v1::{
    NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Service, Toleration,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use karmada_api::Cluster;
use karmada_api::work::{
    Component, ComponentReplicaRequirements, NodeClaim, ObjectReference, ReplicaRequirements,
};
use kube::api::{Api, ListParams};
use scheduler_core::estimator::{EstimateRequest, Estimator};
use testenv::{TestEnv, tools_or_skip};

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
        resource: &resource,
        replica_requirements: Some(reqs),
        components: &[],
        namespace: "default",
        assumed: None,
    };
    estimator
        .max_available_replicas(clusters, request)
        .await
        .map_err(|e| e.0)
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
    cache.ensure_all(&clusters).await;
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
    let claim = NodeClaim {
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
        tolerations: vec![Toleration {
            key: Some("dedicated".into()),
            operator: Some("Exists".into()),
            effect: Some("NoSchedule".into()),
            ..Default::default()
        }],
    };
    let none = replicas(&estimator, &refs, &requirements(Some(claim)))
        .await
        .expect("answers");
    assert!(none.iter().all(|(_, n)| *n == 0), "{none:?}");

    // Component sets: one set of 2 x (500m, 512Mi) can never exceed the replica count / 2.
    let resource = probe_resource();
    let components = vec![Component {
        name: "worker".into(),
        replicas: 2,
        replica_requirements: Some(ComponentReplicaRequirements {
            node_claim: None,
            resource_request: requirements(None).resource_request,
            priority_class_name: String::new(),
        }),
    }];
    let request = EstimateRequest {
        resource: &resource,
        replica_requirements: None,
        components: &components,
        namespace: "default",
        assumed: None,
    };
    let sets = estimator
        .max_available_component_sets(&refs, request)
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
}
