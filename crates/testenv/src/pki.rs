//! Certificates for estimator mutual TLS, made with rcgen: a CA, server certificates for DNS
//! names (what an operator issues for an estimator reached through a VIP), client
//! certificates, and the one certificate for both ends that Karmada's chart mounts
//! ([`crate::EstimatorPki`]), written as PEM files. The one place the tests make certificates.

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
    /// Prepended to every file name (`<name>-`, or nothing for the chart's layout).
    prefix: String,
    ca: CertifiedIssuer<'static, KeyPair>,
    ca_file: PathBuf,
}

impl Pki {
    /// A new CA called `name` (its common name `<name> CA`); files go to `dir` as
    /// `<name>-ca.crt`, `<name>-<cert>.crt` and `.key`.
    pub fn new(dir: &Path, name: &str) -> anyhow::Result<Self> {
        Self::create(dir, &format!("{name} CA"), format!("{name}-"))
    }

    /// A new CA with this common name whose files carry no prefix: `ca.crt`, `<cert>.crt`,
    /// `<cert>.key` (the layout of the Secret Karmada's chart mounts at `/etc/karmada/pki`).
    pub fn unprefixed(dir: &Path, common_name: &str) -> anyhow::Result<Self> {
        Self::create(dir, common_name, String::new())
    }

    fn create(dir: &Path, common_name: &str, prefix: String) -> anyhow::Result<Self> {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        let ca = CertifiedIssuer::self_signed(params, KeyPair::generate()?)?;
        let ca_file = dir.join(format!("{prefix}ca.crt"));
        fs::write(&ca_file, ca.pem())?;
        Ok(Self {
            dir: dir.to_path_buf(),
            prefix,
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
        let common_name = dns_names.first().copied().unwrap_or(file);
        self.issue(
            file,
            common_name,
            dns_names,
            vec![ExtendedKeyUsagePurpose::ServerAuth],
        )
    }

    /// A client certificate (`clientAuth`) with this common name.
    pub fn client(&self, file: &str, common_name: &str) -> anyhow::Result<CertFiles> {
        self.issue(
            file,
            common_name,
            &[],
            vec![ExtendedKeyUsagePurpose::ClientAuth],
        )
    }

    /// One certificate for both ends (`serverAuth` and `clientAuth`) with this common name,
    /// naming `names` (DNS names or IP addresses), as Karmada's chart issues one for the
    /// estimators and their clients.
    pub fn server_and_client(
        &self,
        file: &str,
        common_name: &str,
        names: &[&str],
    ) -> anyhow::Result<CertFiles> {
        self.issue(
            file,
            common_name,
            names,
            vec![
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
        )
    }

    fn issue(
        &self,
        file: &str,
        common_name: &str,
        names: &[&str],
        usages: Vec<ExtendedKeyUsagePurpose>,
    ) -> anyhow::Result<CertFiles> {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let mut params = CertificateParams::new(names)?;
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.extended_key_usages = usages;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.ca)?;
        let files = CertFiles {
            cert: self.dir.join(format!("{}{file}.crt", self.prefix)),
            key: self.dir.join(format!("{}{file}.key", self.prefix)),
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
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let pki = Pki::new(dir, "est").unwrap();
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
    }
}
