//! Transport security, decided exactly as the reference decides it.
//!
//! * Neither a CA file nor `--insecure-skip-estimator-verify` → plaintext; a client
//!   certificate and key are then ignored, as upstream does.
//! * Otherwise TLS. The CA file (when given) is the only trust root; skipping verification
//!   accepts any server certificate (handshake signatures are still checked). The client
//!   certificate is presented only when both the certificate and the key file are set.
//! * The server is verified against the host part of the address being dialled (a DNS name
//!   or an IP address, matched against the certificate's SANs), like grpc-go does. Our
//!   extension `server_name` overrides that name, for estimators reached through an IP (an
//!   LVS VIP) whose certificate only names a DNS name.
//! * ALPN offers `h2` only: grpc-go servers reject TLS clients that do not.
//!
//! Files are read on every dial, so rotated certificates are picked up by the next
//! connection, as with the reference.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::options::EstimatorOptions;

/// TLS settings could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read or parsed.
    #[error("read {what} {path}: {reason}")]
    File {
        /// Which flag's file.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The CA file holds no certificate.
    #[error("failed to append ca certs: no certificate found in {0}")]
    NoCaCertificate(PathBuf),
    /// rustls refused the configuration (for instance a key that does not match).
    #[error("tls configuration: {0}")]
    Config(String),
    /// The host (or override) is not a valid TLS server name.
    #[error("invalid TLS server name {0:?}")]
    ServerName(String),
}

/// Whether the options ask for TLS at all.
pub fn enabled(options: &EstimatorOptions) -> bool {
    options.ca_file.is_some() || options.insecure_skip_verify
}

/// The rustls client configuration for the options, or `None` for plaintext.
pub fn client_config(options: &EstimatorOptions) -> Result<Option<Arc<ClientConfig>>, TlsError> {
    if !enabled(options) {
        return Ok(None);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?;
    let builder = if options.insecure_skip_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyServerCert { provider }))
    } else {
        let mut roots = RootCertStore::empty();
        if let Some(ca) = &options.ca_file {
            let certs = read_certs("CA file", ca)?;
            if certs.is_empty() {
                return Err(TlsError::NoCaCertificate(ca.clone()));
            }
            for cert in certs {
                roots.add(cert).map_err(|e| file_error("CA file", ca, e))?;
            }
        }
        builder.with_root_certificates(roots)
    };
    let mut config = match (&options.cert_file, &options.key_file) {
        (Some(cert), Some(key)) => {
            let chain = read_certs("certificate file", cert)?;
            let key =
                PrivateKeyDer::from_pem_file(key).map_err(|e| file_error("key file", key, e))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| TlsError::Config(e.to_string()))?
        }
        _ => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Some(Arc::new(config)))
}

/// The name the server certificate is checked against: the override when set, else `host`.
pub fn server_name(
    host: &str,
    server_name_override: Option<&str>,
) -> Result<ServerName<'static>, TlsError> {
    let name = server_name_override.unwrap_or(host);
    ServerName::try_from(name.to_string()).map_err(|_| TlsError::ServerName(name.to_string()))
}

fn read_certs(what: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    CertificateDer::pem_file_iter(path)
        .map_err(|e| file_error(what, path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_error(what, path, e))
}

fn file_error(what: &'static str, path: &Path, reason: impl std::fmt::Display) -> TlsError {
    TlsError::File {
        what,
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

/// `--insecure-skip-estimator-verify`: any certificate, any name. Signatures over the
/// handshake are still verified with the certificate's key, so the peer must hold it.
#[derive(Debug)]
struct AcceptAnyServerCert {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for AcceptAnyServerCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plaintext_unless_ca_or_skip_verify() {
        let mut o = EstimatorOptions {
            cert_file: Some("/nonexistent/cert".into()),
            key_file: Some("/nonexistent/key".into()),
            ..Default::default()
        };
        // Cert and key alone are ignored, as upstream: no error although the files are absent.
        assert!(client_config(&o).unwrap().is_none());
        o.insecure_skip_verify = true;
        // Now TLS is on, and the client pair is loaded (and fails to read).
        let err = client_config(&o).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("read certificate file /nonexistent/cert"),
            "{err}"
        );
    }

    #[test]
    fn skip_verify_offers_h2() {
        let o = EstimatorOptions {
            insecure_skip_verify: true,
            ..Default::default()
        };
        let config = client_config(&o).unwrap().unwrap();
        assert_eq!(config.alpn_protocols, vec![b"h2".to_vec()]);
    }

    #[test]
    fn missing_ca_file_is_an_error_naming_it() {
        let o = EstimatorOptions {
            ca_file: Some("/nonexistent/ca.crt".into()),
            ..Default::default()
        };
        let err = client_config(&o).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/ca.crt"), "{err}");
    }

    #[test]
    fn server_names() {
        assert!(matches!(
            server_name("10.0.0.1", None).unwrap(),
            ServerName::IpAddress(_)
        ));
        assert!(matches!(
            server_name("::1", None).unwrap(),
            ServerName::IpAddress(_)
        ));
        assert!(matches!(
            server_name("a.example", None).unwrap(),
            ServerName::DnsName(_)
        ));
        assert!(matches!(
            server_name("10.0.0.1", Some("estimator.example")).unwrap(),
            ServerName::DnsName(_)
        ));
        assert!(server_name("bad name!", None).is_err());
    }
}
