//! Test support: a real tonic estimator server on loopback with canned answers, ExternalName
//! Services pointing at it, clusters, bindings and certificates made with rcgen.

#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use estimator_client::pb::messages as pb;
use estimator_client::pb::{EstimatorServer, EstimatorService};
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use karmada_api::Cluster;
use karmada_api::cluster::ClusterSpec;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Identity, Server, ServerTlsConfig};
use tonic::{Request, Response, Status};

/// What the fake answers for one cluster name.
#[derive(Clone, Debug)]
pub enum Behaviour {
    /// Answer this number.
    Answer(i32),
    /// Answer this number after this long.
    AnswerAfter(i32, std::time::Duration),
    /// Never answer.
    Hang,
    /// Fail with this status.
    Fail(Status),
}

/// What the fake saw of one call.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: &'static str,
    pub cluster: String,
    pub object: Option<String>,
    pub replicas_request: Option<pb::MaxAvailableReplicasRequest>,
    pub sets_request: Option<pb::MaxAvailableComponentSetsRequest>,
}

/// A canned estimator; one server can play many clusters (the name is in the request).
#[derive(Clone, Default)]
pub struct FakeEstimator {
    behaviours: Arc<Mutex<HashMap<String, Behaviour>>>,
    /// Answer for clusters without a behaviour; `None` fails them like a real estimator
    /// whose `--cluster-name` differs.
    default: Option<i32>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl FakeEstimator {
    /// Answers `answer` for every cluster.
    pub fn answering(answer: i32) -> Self {
        Self {
            default: Some(answer),
            ..Self::default()
        }
    }

    /// Sets the behaviour for one cluster.
    pub fn with(self, cluster: &str, behaviour: Behaviour) -> Self {
        self.behaviours
            .lock()
            .unwrap()
            .insert(cluster.to_string(), behaviour);
        self
    }

    /// Calls seen so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    async fn answer(&self, cluster: &str) -> Result<i32, Status> {
        let behaviour = self.behaviours.lock().unwrap().get(cluster).cloned();
        match behaviour {
            Some(Behaviour::Answer(n)) => Ok(n),
            Some(Behaviour::AnswerAfter(n, after)) => {
                tokio::time::sleep(after).await;
                Ok(n)
            }
            Some(Behaviour::Hang) => std::future::pending().await,
            Some(Behaviour::Fail(status)) => Err(status),
            None => self.default.ok_or_else(|| {
                Status::internal(format!(
                    "cluster name mismatch: this estimator does not serve {cluster}"
                ))
            }),
        }
    }

    fn record<T>(&self, method: &'static str, cluster: &str, request: &Request<T>) -> Seen {
        let object = request
            .metadata()
            .get("object")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        Seen {
            method,
            cluster: cluster.to_string(),
            object,
            replicas_request: None,
            sets_request: None,
        }
    }
}

#[tonic::async_trait]
impl EstimatorService for FakeEstimator {
    async fn max_available_replicas(
        &self,
        request: Request<pb::MaxAvailableReplicasRequest>,
    ) -> Result<Response<pb::MaxAvailableReplicasResponse>, Status> {
        let cluster = request.get_ref().cluster.clone();
        let mut seen = self.record("MaxAvailableReplicas", &cluster, &request);
        seen.replicas_request = Some(request.into_inner());
        self.seen.lock().unwrap().push(seen);
        let max_replicas = self.answer(&cluster).await?;
        Ok(Response::new(pb::MaxAvailableReplicasResponse {
            max_replicas,
        }))
    }

    async fn max_available_component_sets(
        &self,
        request: Request<pb::MaxAvailableComponentSetsRequest>,
    ) -> Result<Response<pb::MaxAvailableComponentSetsResponse>, Status> {
        let cluster = request.get_ref().cluster.clone();
        let mut seen = self.record("MaxAvailableComponentSets", &cluster, &request);
        seen.sets_request = Some(request.into_inner());
        self.seen.lock().unwrap().push(seen);
        let max_sets = self.answer(&cluster).await?;
        Ok(Response::new(pb::MaxAvailableComponentSetsResponse {
            max_sets,
        }))
    }

    async fn get_unschedulable_replicas(
        &self,
        request: Request<pb::UnschedulableReplicasRequest>,
    ) -> Result<Response<pb::UnschedulableReplicasResponse>, Status> {
        let cluster = request.get_ref().cluster.clone();
        let seen = self.record("GetUnschedulableReplicas", &cluster, &request);
        self.seen.lock().unwrap().push(seen);
        let unschedulable_replicas = self.answer(&cluster).await?;
        Ok(Response::new(pb::UnschedulableReplicasResponse {
            unschedulable_replicas,
        }))
    }
}

/// A running server; stops when dropped.
pub struct Running {
    pub addr: SocketAddr,
    _stop: oneshot::Sender<()>,
}

/// TLS of a test server.
pub struct ServerTls {
    pub cert_pem: String,
    pub key_pem: String,
    /// Require client certificates signed by this CA.
    pub client_ca_pem: Option<String>,
}

/// Starts `fake` on `host:0` (loopback).
pub async fn serve(fake: FakeEstimator, host: &str, tls: Option<ServerTls>) -> Running {
    let listener = TcpListener::bind((host, 0)).await.expect("bind loopback");
    let addr = listener.local_addr().unwrap();
    let incoming = TcpIncoming::from(listener);
    let mut builder = Server::builder();
    if let Some(tls) = tls {
        let mut config =
            ServerTlsConfig::new().identity(Identity::from_pem(tls.cert_pem, tls.key_pem));
        if let Some(ca) = tls.client_ca_pem {
            config = config.client_ca_root(tonic::transport::Certificate::from_pem(ca));
        }
        builder = builder.tls_config(config).expect("server tls");
    }
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = builder
            .serve_with_incoming_shutdown(EstimatorServer::new(fake), incoming, async {
                let _ = stopped.await;
            })
            .await;
    });
    Running { addr, _stop: stop }
}

/// The ExternalName Service `karmada-system/karmada-scheduler-estimator-<cluster>` pointing
/// at `host:target_port` (port entry 10352).
pub fn external_name_service(cluster: &str, host: &str, target_port: u16) -> Service {
    Service {
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
                target_port: Some(IntOrString::Int(i32::from(target_port))),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        status: None,
    }
}

/// A Push cluster.
pub fn cluster(name: &str) -> Cluster {
    Cluster::new(
        name,
        ClusterSpec {
            sync_mode: "Push".into(),
            ..Default::default()
        },
    )
}

/// A Pull cluster.
pub fn pull_cluster(name: &str) -> Cluster {
    Cluster::new(
        name,
        ClusterSpec {
            sync_mode: "Pull".into(),
            ..Default::default()
        },
    )
}

/// Certificates of one test: a CA, a server certificate for `127.0.0.1`, `::1` and
/// `estimator.test` (or other names), and a client certificate, all written to a fresh
/// directory.
pub struct Pki {
    /// Holds the files; removed on drop.
    _dir: tempfile::TempDir,
    pub ca_pem: String,
    pub server_cert_pem: String,
    pub server_key_pem: String,
    pub ca_file: PathBuf,
    pub client_cert_file: PathBuf,
    pub client_key_file: PathBuf,
}

fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path
}

impl Pki {
    /// A PKI whose server certificate names `server_names`.
    pub fn new(server_names: &[&str]) -> Self {
        use rcgen::{
            BasicConstraints, CertificateParams, CertifiedIssuer, ExtendedKeyUsagePurpose, IsCa,
            KeyPair, KeyUsagePurpose,
        };
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "estimator test CA");
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();

        let names: Vec<String> = server_names.iter().map(|s| s.to_string()).collect();
        let mut server_params = CertificateParams::new(names).unwrap();
        server_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let server_key = KeyPair::generate().unwrap();
        let server_cert = server_params.signed_by(&server_key, &ca).unwrap();

        let mut client_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        client_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "karmada-scheduler");
        client_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let client_key = KeyPair::generate().unwrap();
        let client_cert = client_params.signed_by(&client_key, &ca).unwrap();

        let dir = tempfile::tempdir().unwrap();
        let ca_pem = ca.pem();
        Self {
            ca_file: write(dir.path(), "ca.crt", &ca_pem),
            client_cert_file: write(dir.path(), "client.crt", &client_cert.pem()),
            client_key_file: write(dir.path(), "client.key", &client_key.serialize_pem()),
            ca_pem,
            server_cert_pem: server_cert.pem(),
            server_key_pem: server_key.serialize_pem(),
            _dir: dir,
        }
    }

    /// Server TLS settings, optionally requiring client certificates of this CA.
    pub fn server_tls(&self, require_client_cert: bool) -> ServerTls {
        ServerTls {
            cert_pem: self.server_cert_pem.clone(),
            key_pem: self.server_key_pem.clone(),
            client_ca_pem: require_client_cert.then(|| self.ca_pem.clone()),
        }
    }
}
