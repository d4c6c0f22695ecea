//! TODO(testenv): the client against the real Go `karmada-scheduler-estimator` (v1.18.2).
//!
//! Not done yet: it needs the control-plane environment that `crates/testenv` will provide (a
//! member cluster with nodes and an estimator started with `--cluster-name`). Until then this
//! test is ignored and, even when run, does nothing unless pointed at an estimator:
//!
//! ```text
//! ESTIMATOR_CLIENT_REAL_ADDR=127.0.0.1:10352 ESTIMATOR_CLIENT_REAL_CLUSTER=member1 \
//!   cargo test -p estimator-client --test real_estimator -- --ignored
//! ```
//!
//! What the finished test should check (with testenv): plaintext and TLS dialling of the real
//! server (grpc-go enforces ALPN h2 and TLS 1.3 on its side), that `MaxAvailableReplicas`
//! and `MaxAvailableComponentSets` with node claims, tolerations and resource requests give
//! the numbers the Go estimator computes for the member's nodes (both the typed and the
//! `*Bytes` fields are read by v1.18 servers; a v1.17 server reads only the typed ones), the
//! `object` metadata in the estimator's log, and the error text for a wrong cluster name.

use std::sync::Arc;

use estimator_client::{
    ConnectionCache, EstimatorOptions, InMemoryServiceSource, SchedulerEstimator,
};
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use karmada_api::Cluster;
use karmada_api::cluster::ClusterSpec;
use karmada_api::work::ObjectReference;
use scheduler_core::estimator::{EstimateRequest, Estimator};

#[tokio::test]
#[ignore = "needs a real karmada-scheduler-estimator (crates/testenv); see the module docs"]
async fn answers_from_the_real_go_estimator() {
    let Ok(addr) = std::env::var("ESTIMATOR_CLIENT_REAL_ADDR") else {
        eprintln!("ESTIMATOR_CLIENT_REAL_ADDR is not set; nothing to test");
        return;
    };
    let cluster =
        std::env::var("ESTIMATOR_CLIENT_REAL_CLUSTER").unwrap_or_else(|_| "member1".into());
    let (host, port) = addr
        .rsplit_once(':')
        .expect("ESTIMATOR_CLIENT_REAL_ADDR is host:port");
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let service = Service {
        metadata: ObjectMeta {
            name: Some(format!("karmada-scheduler-estimator-{cluster}")),
            namespace: Some("karmada-system".into()),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            type_: Some("ExternalName".into()),
            external_name: Some(host.into()),
            ports: Some(vec![ServicePort {
                port: 10352,
                target_port: Some(IntOrString::Int(port.parse().expect("numeric port"))),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        status: None,
    };
    let source = Arc::new(InMemoryServiceSource::with_objects([service], []));
    let cache = Arc::new(ConnectionCache::new(EstimatorOptions::default(), source));
    let estimator = SchedulerEstimator::new(cache);
    let member = Cluster::new(
        &cluster,
        ClusterSpec {
            sync_mode: "Push".into(),
            ..Default::default()
        },
    );
    let resource = ObjectReference {
        kind: "Deployment".into(),
        namespace: "default".into(),
        name: "probe".into(),
        ..Default::default()
    };
    let request = EstimateRequest {
        resource: &resource,
        replica_requirements: None,
        components: &[],
        namespace: "default",
    };
    let got = estimator
        .max_available_replicas(&[&member], request)
        .await
        .expect("the estimator answers");
    assert_eq!(got.len(), 1);
    assert!(got[0].1 >= 0, "{got:?}");
}
