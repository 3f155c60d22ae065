//! `--tls-cert/--tls-key`: a rustls server configuration from PEM files (a certificate chain
//! and its private key in PKCS#8, PKCS#1 or SEC1 form), on the aws-lc-rs provider that the
//! rest of the workspace's TLS (reqwest) uses.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};

/// Why the TLS files could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error(
        "cannot read the certificate chain {path}: {message} (expected PEM `CERTIFICATE` blocks)"
    )]
    Cert { path: PathBuf, message: String },
    #[error(
        "cannot read the private key {path}: {message} (expected a PEM private key: PKCS#8, PKCS#1 or SEC1)"
    )]
    Key { path: PathBuf, message: String },
    #[error("the certificate and key do not make a TLS configuration: {0}")]
    Config(#[from] rustls::Error),
}

/// A server configuration for HTTP/1.1 over TLS from a PEM certificate chain and key.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>, TlsError> {
    let cert_err = |message: String| TlsError::Cert {
        path: cert.to_path_buf(),
        message,
    };
    let chain = CertificateDer::pem_file_iter(cert)
        .map_err(|e| cert_err(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| cert_err(e.to_string()))?;
    if chain.is_empty() {
        return Err(cert_err("no certificate in the file".into()));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| TlsError::Key {
        path: key.to_path_buf(),
        message: e.to_string(),
    })?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
