//! Test support of the client's tests, over `testenv` (the fake estimator, the estimator
//! Services, the certificates): clusters, and one test's certificates in memory and on disk.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use karmada_api::Cluster;
use karmada_api::cluster::ClusterSpec;
use testenv::estimator::ServerTls;

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

/// Certificates of one test ([`testenv::pki`]): a CA, a server certificate for
/// `127.0.0.1`, `::1` and `estimator.test` (or other names), and a client certificate, all
/// written to a fresh directory.
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

impl Pki {
    /// A PKI whose server certificate names `server_names`.
    pub fn new(server_names: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let pki = testenv::pki::Pki::unprefixed(dir.path(), "estimator test CA").unwrap();
        let server = pki.server("server", server_names).unwrap();
        let client = pki.client("client", "karmada-scheduler").unwrap();
        let read = |p: &Path| std::fs::read_to_string(p).unwrap();
        Self {
            ca_pem: read(pki.ca_file()),
            server_cert_pem: read(&server.cert),
            server_key_pem: read(&server.key),
            ca_file: pki.ca_file().to_path_buf(),
            client_cert_file: client.cert,
            client_key_file: client.key,
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
