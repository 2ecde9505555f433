//! The rustls client configuration of the connector: the ring provider only (never
//! aws-lc), the webpki-roots trust store plus optional operator/test roots given as PEM,
//! HTTP/1.1 ALPN. Certificate checking is rustls' own; this module only builds config.

use std::sync::Arc;

use rustls::{ClientConfig, RootCertStore};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

/// Extra root certificates that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsConfigError {
    /// The PEM does not parse (the parser's message); check the file given as extra roots.
    #[error("extra root CA PEM is unreadable: {0}")]
    Pem(String),
    /// The PEM parses but holds no `CERTIFICATE` block (a key file given by mistake?).
    #[error("extra root CA PEM contains no certificate")]
    NoCertificate,
    /// A certificate in the PEM cannot be a trust anchor (rustls's reason).
    #[error("extra root CA rejected: {0}")]
    BadRoot(rustls::Error),
    /// rustls refused the client configuration itself (no usable protocol version with
    /// the ring provider); not caused by the operator's input.
    #[error("TLS configuration failed: {0}")]
    Config(rustls::Error),
}

pub(crate) fn client_config(extra_roots_pem: &[u8]) -> Result<Arc<ClientConfig>, TlsConfigError> {
    let mut roots = RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    if !extra_roots_pem.is_empty() {
        let certs = CertificateDer::pem_slice_iter(extra_roots_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| TlsConfigError::Pem(e.to_string()))?;
        if certs.is_empty() {
            return Err(TlsConfigError::NoCertificate);
        }
        for cert in certs {
            roots.add(cert).map_err(TlsConfigError::BadRoot)?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsConfigError::Config)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
