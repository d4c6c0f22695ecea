//! Certificates for estimator mTLS in the VM topology, made with rcgen: a CA, server
//! certificates for DNS names (what an operator issues for an estimator reached through a VIP)
//! and client certificates, written as PEM files.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

/// A certificate and its key, as PEM files.
#[derive(Clone, Debug)]
pub struct CertFiles {
    /// The certificate.
    pub cert: PathBuf,
    /// Its private key (PKCS#8).
    pub key: PathBuf,
}

/// A certificate authority whose certificates are written to one directory.
pub struct Pki {
    dir: PathBuf,
    name: String,
    ca: CertifiedIssuer<'static, KeyPair>,
    ca_file: PathBuf,
}

impl Pki {
    /// A new CA called `name` (its common name too); files go to `dir` as `<name>-ca.crt`,
    /// `<name>-<cert>.crt` and `.key`.
    pub fn new(dir: &Path, name: &str) -> anyhow::Result<Self> {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params
            .distinguished_name
            .push(DnType::CommonName, format!("{name} CA"));
        let ca = CertifiedIssuer::self_signed(params, KeyPair::generate()?)?;
        let ca_file = dir.join(format!("{name}-ca.crt"));
        fs::write(&ca_file, ca.pem())?;
        Ok(Self {
            dir: dir.to_path_buf(),
            name: name.to_string(),
            ca,
            ca_file,
        })
    }

    /// The CA certificate (what `--scheduler-estimator-ca-file` and
    /// `--grpc-client-ca-file` take).
    pub fn ca_file(&self) -> &Path {
        &self.ca_file
    }

    /// A server certificate (`serverAuth`) for these DNS names and nothing else.
    pub fn server(&self, file: &str, dns_names: &[&str]) -> anyhow::Result<CertFiles> {
        let names: Vec<String> = dns_names.iter().map(|s| s.to_string()).collect();
        let mut params = CertificateParams::new(names)?;
        params.distinguished_name.push(
            DnType::CommonName,
            dns_names.first().copied().unwrap_or(file),
        );
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        self.issue(file, params)
    }

    /// A client certificate (`clientAuth`) with this common name.
    pub fn client(&self, file: &str, common_name: &str) -> anyhow::Result<CertFiles> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        self.issue(file, params)
    }

    fn issue(&self, file: &str, params: CertificateParams) -> anyhow::Result<CertFiles> {
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.ca)?;
        let files = CertFiles {
            cert: self.dir.join(format!("{}-{file}.crt", self.name)),
            key: self.dir.join(format!("{}-{file}.key", self.name)),
        };
        fs::write(&files.cert, cert.pem())?;
        fs::write(&files.key, key.serialize_pem())?;
        Ok(files)
    }
}

/// The flags of the Go `karmada-scheduler-estimator` serving mTLS with `server` and requiring
/// client certificates of `client_ca`.
pub fn estimator_server_flags(server: &CertFiles, client_ca: &Path) -> Vec<String> {
    vec![
        format!("--grpc-auth-cert-file={}", server.cert.display()),
        format!("--grpc-auth-key-file={}", server.key.display()),
        format!("--grpc-client-ca-file={}", client_ca.display()),
    ]
}

/// The reference's client flags of karmada-scheduler and karmada-descheduler: trust `ca`,
/// present `client`.
pub fn estimator_client_flags(ca: &Path, client: &CertFiles) -> Vec<String> {
    vec![
        format!("--scheduler-estimator-ca-file={}", ca.display()),
        format!("--scheduler-estimator-cert-file={}", client.cert.display()),
        format!("--scheduler-estimator-key-file={}", client.key.display()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_ca_and_certificates() {
        let dir = std::env::temp_dir().join(format!("testenv-pki-{}", std::process::id()));
        let pki = Pki::new(&dir, "est").unwrap();
        let server = pki.server("server", &["estimator.test"]).unwrap();
        let client = pki.client("client", "karmada-scheduler").unwrap();
        for f in [pki.ca_file(), &server.cert, &client.cert] {
            assert!(
                fs::read_to_string(f)
                    .unwrap()
                    .starts_with("-----BEGIN CERTIFICATE-----")
            );
        }
        assert!(
            fs::read_to_string(&server.key)
                .unwrap()
                .contains("PRIVATE KEY")
        );
        assert_eq!(
            estimator_client_flags(pki.ca_file(), &client)[0],
            format!(
                "--scheduler-estimator-ca-file={}",
                dir.join("est-ca.crt").display()
            )
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
