//! Whoever edits an estimator Service or its EndpointSlices can steer the daemon's dials at
//! most to addresses an estimator can have, and to a bounded number of them.
//!
//! Real tonic estimators on loopback ([`testenv::estimator::FakeEstimator`]); the Services and slices are
//! held in memory as the API server would hand them over.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::cluster;
use estimator_client::resolver::MAX_ENDPOINTS;
use estimator_client::{
    ConnectionCache, EstimatorOptions, InMemoryServiceSource, SchedulerEstimator,
};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use karmada_api::Cluster;
use karmada_api::work::ObjectReference;
use scheduler_core::estimator::{Ask, EstimateRequest, Estimator};
use serde_json::json;
use testenv::estimator::{FakeEstimator, Running, external_name_service};

const NAME: &str = "karmada-scheduler-estimator-m1";

fn estimator(options: EstimatorOptions, source: Arc<InMemoryServiceSource>) -> SchedulerEstimator {
    SchedulerEstimator::new(Arc::new(ConnectionCache::new(options, source)))
}

async fn ask(
    estimator: &SchedulerEstimator,
    clusters: &[Cluster],
) -> Result<Vec<(String, i32)>, String> {
    let refs: Vec<&Cluster> = clusters.iter().collect();
    let resource = ObjectReference {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        namespace: "default".into(),
        name: "web".into(),
        ..Default::default()
    };
    let request = EstimateRequest {
        ask: Ask::Replicas,
        resource: &resource,
        replica_requirements: None,
        components: &[],
        namespace: "default",
        assumed: None,
    };
    estimator.estimate(&refs, request).await.map_err(|e| e.0)
}

fn headless() -> Service {
    serde_json::from_value(json!({
        "metadata": {"name": NAME, "namespace": "karmada-system"},
        "spec": {"clusterIP": "None", "ports": [{"name": "grpc", "port": 10352}]}
    }))
    .unwrap()
}

/// A slice of the headless Service with one port and these endpoints (JSON values).
fn slice(name: &str, port: u16, endpoints: serde_json::Value) -> EndpointSlice {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "karmada-system",
                     "labels": {"kubernetes.io/service-name": NAME}},
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": "grpc", "port": port}]
    }))
    .unwrap()
}

/// `0.0.0.0` as a destination reaches the local host on Linux: an `externalName` of
/// `0.0.0.0` would steer the dial to whatever listens here. It is refused with an error that
/// names the Service and the field, and the server sees no call; link-local (the cloud
/// metadata address) likewise. The same Service naming `127.0.0.1` is served.
#[tokio::test]
async fn an_external_name_no_estimator_can_have_is_never_dialled() {
    let fake = FakeEstimator::answering(5);
    let server: Running = fake.serve().await.unwrap();
    let port = server.addr.port();
    for host in ["0.0.0.0", "169.254.169.254", "::ffff:0.0.0.0"] {
        let source = Arc::new(InMemoryServiceSource::with_objects(
            [external_name_service("m1", host, port)],
            [],
        ));
        let e = estimator(EstimatorOptions::default(), source);
        let err = e
            .cache()
            .ensure(&cluster("m1"))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!(
                "estimator service \"karmada-system/{NAME}\" (port 10352): spec.externalName \"{host}\" cannot be an estimator's address ("
            )),
            "{err}"
        );
        assert!(ask(&e, &[cluster("m1")]).await.is_err());
        assert!(e.cache().connection("m1").is_none());
    }
    assert!(fake.seen().is_empty(), "a refused address was dialled");
    let source = Arc::new(InMemoryServiceSource::with_objects(
        [external_name_service("m1", "127.0.0.1", port)],
        [],
    ));
    let e = estimator(EstimatorOptions::default(), source);
    assert_eq!(
        ask(&e, &[cluster("m1")]).await.unwrap(),
        [("m1".to_string(), 5)]
    );
}

/// Endpoint conditions as kube-proxy reads them: the ready endpoint is called, not the
/// terminating one nor a refused address; once no endpoint is ready, the serving terminating
/// one is.
#[tokio::test]
async fn endpoint_conditions_and_refused_addresses_decide_who_is_called() {
    let ready = FakeEstimator::answering(1);
    let leaving = FakeEstimator::answering(2);
    let a = ready.serve().await.unwrap();
    let b = leaving.serve().await.unwrap();
    let source = Arc::new(InMemoryServiceSource::with_objects([headless()], []));
    source.upsert_endpoint_slice(slice(
        "a",
        a.addr.port(),
        json!([{"addresses": ["127.0.0.1"]},
               {"addresses": ["169.254.169.254"], "conditions": {"ready": true}}]),
    ));
    source.upsert_endpoint_slice(slice(
        "b",
        b.addr.port(),
        json!([{"addresses": ["127.0.0.1"],
                "conditions": {"ready": false, "serving": true, "terminating": true}}]),
    ));
    let e = estimator(EstimatorOptions::default(), source.clone());
    for _ in 0..4 {
        assert_eq!(
            ask(&e, &[cluster("m1")]).await.unwrap(),
            [("m1".to_string(), 1)]
        );
    }
    assert_eq!(ready.seen().len(), 4);
    assert!(
        leaving.seen().is_empty(),
        "a terminating endpoint was called"
    );
    let connected = e.cache().connection("m1").unwrap().addresses();
    assert_eq!(connected.len(), 1, "{connected:?}");

    // The ready endpoint goes: the serving terminating one takes over.
    let gone = slice(
        "a",
        a.addr.port(),
        json!([{"addresses": ["127.0.0.1"], "conditions": {"ready": false, "serving": false}}]),
    );
    source.upsert_endpoint_slice(gone.clone());
    assert!(e.cache().on_endpoint_slice_changed(&gone).await.unwrap());
    assert_eq!(
        ask(&e, &[cluster("m1")]).await.unwrap(),
        [("m1".to_string(), 2)]
    );
    assert_eq!(ready.seen().len(), 4);
}

/// However many endpoints the slices list, at most MAX_ENDPOINTS are dialled: the first in
/// address order, the same whatever order the slices come in; the others see no call.
#[tokio::test]
async fn endpoints_dialled_per_service_are_capped() {
    let n = MAX_ENDPOINTS + 4;
    let mut servers = Vec::new();
    for i in 0..n {
        let fake = FakeEstimator::answering(i32::try_from(i).unwrap());
        let running = fake.serve().await.unwrap();
        servers.push((fake, running));
    }
    let mut by_port: Vec<u16> = servers.iter().map(|(_, r)| r.addr.port()).collect();
    by_port.sort_unstable();
    let source = Arc::new(InMemoryServiceSource::with_objects([headless()], []));
    for (i, (_, running)) in servers.iter().enumerate().rev() {
        source.upsert_endpoint_slice(slice(
            &format!("s{i:02}"),
            running.addr.port(),
            json!([{"addresses": ["127.0.0.1"]}]),
        ));
    }
    let e = estimator(EstimatorOptions::default(), source);
    for _ in 0..(2 * n) {
        ask(&e, &[cluster("m1")]).await.unwrap();
    }
    let connected: Vec<u16> = e
        .cache()
        .connection("m1")
        .unwrap()
        .addresses()
        .iter()
        .map(|a| a.port())
        .collect();
    assert_eq!(connected, by_port[..MAX_ENDPOINTS]);
    for (fake, running) in &servers {
        let dialled = connected.contains(&running.addr.port());
        assert_eq!(
            !fake.seen().is_empty(),
            dialled,
            "port {}",
            running.addr.port()
        );
    }
}

/// The TLS server name annotation is honoured only with
/// `--scheduler-estimator-tls-name-annotation`: off (the default), the estimator's
/// certificate is verified against the host dialled.
#[tokio::test]
async fn the_tls_server_name_annotation_needs_the_operator_flag() {
    let pki = common::Pki::new(&["estimator-m1.test"]);
    let server = FakeEstimator::answering(9)
        .serve_on("127.0.0.1", 0, Some(pki.server_tls(false)))
        .await
        .unwrap();
    let mut svc = external_name_service("m1", "127.0.0.1", server.addr.port());
    svc.metadata.annotations = Some(
        [(
            estimator_client::resolver::TLS_SERVER_NAME_ANNOTATION.to_string(),
            "estimator-m1.test".to_string(),
        )]
        .into(),
    );
    let options = |allowed: bool| EstimatorOptions {
        ca_file: Some(pki.ca_file.clone()),
        tls_server_name_annotation: allowed,
        ..Default::default()
    };
    let source = Arc::new(InMemoryServiceSource::with_objects([svc], []));
    let off = estimator(options(false), source.clone());
    let err = off
        .cache()
        .ensure(&cluster("m1"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("not valid for name \"127.0.0.1\""), "{err}");
    let on = estimator(options(true), source);
    assert_eq!(
        ask(&on, &[cluster("m1")]).await.unwrap(),
        [("m1".to_string(), 9)]
    );
}

/// Log lines of the current thread (these tests run on one).
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Log {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// The cluster exists before its Service: the first warning is about the DNS fallback. When
/// the Service arrives with a DNS name that does not resolve, a second warning names the
/// Service, the `externalName` value and why it failed; a retry of the same failure adds none.
#[tokio::test]
async fn a_late_service_gets_its_own_warning() {
    let log = Log::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let source = Arc::new(InMemoryServiceSource::new());
    let options = EstimatorOptions {
        connect_timeout: Duration::from_secs(2),
        ..Default::default()
    };
    let e = estimator(options, source.clone());
    assert!(e.cache().ensure(&cluster("m1")).await.is_err());
    let first = log.text();
    assert_eq!(
        first.matches("Failed to connect to the estimator").count(),
        1,
        "{first}"
    );
    assert!(
        first.contains(&format!("{NAME}.karmada-system.svc.cluster.local")),
        "{first}"
    );

    // `.invalid` never resolves (RFC 2606).
    let host = "estimator-m1.invalid";
    source.upsert_service(external_name_service("m1", host, 9443));
    assert!(
        e.cache()
            .on_service_changed("karmada-system", NAME)
            .await
            .is_err()
    );
    let text = log.text();
    let second = text
        .lines()
        .filter(|l| l.contains("Failed to connect to the estimator"))
        .nth(1)
        .unwrap_or_else(|| panic!("no warning about the late Service:\n{text}"));
    assert!(
        second.contains(&format!("service=\"karmada-system/{NAME}\"")),
        "{second}"
    );
    assert!(second.contains("origin=spec.externalName"), "{second}");
    assert!(
        second.contains(&format!("addresses=\"{host}:9443\"")),
        "{second}"
    );
    assert!(
        second.contains(&format!("cannot resolve the host name \"{host}\"")),
        "{second}"
    );

    // The same failure again: no new line.
    assert!(
        e.cache()
            .on_service_changed("karmada-system", NAME)
            .await
            .is_err()
    );
    assert_eq!(
        log.text()
            .matches("Failed to connect to the estimator")
            .count(),
        2
    );
}
