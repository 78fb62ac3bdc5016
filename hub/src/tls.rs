//! TLS for the hub's listener (`--tls-cert`, `--tls-key`): rustls offering ALPN `h2` and
//! `http/1.1`, so a client reaches the hub over HTTP/2 with TLS as it would an ingress.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::ServerConfig;
pub use tokio_rustls::TlsAcceptor;

/// An acceptor serving the PEM certificate chain `cert` (the leaf first) with the PEM private
/// key `key`. Errors name the flag and the file.
pub fn acceptor(cert: &Path, key: &Path) -> anyhow::Result<TlsAcceptor> {
    let read = |flag: &str, p: &Path| {
        std::fs::read(p).with_context(|| format!("--{flag} {}", p.display()))
    };
    let chain = CertificateDer::pem_slice_iter(&read("tls-cert", cert)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow::anyhow!("--tls-cert {}: {e}", cert.display()))?;
    if chain.is_empty() {
        anyhow::bail!("--tls-cert {}: no PEM certificate in it", cert.display());
    }
    let key = PrivateKeyDer::from_pem_slice(&read("tls-key", key)?)
        .map_err(|e| anyhow::anyhow!("--tls-key {}: {e}", key.display()))?;
    let provider = tokio_rustls::rustls::crypto::ring::default_provider();
    let mut cfg = ServerConfig::builder_with_provider(Arc::new(provider))
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .context("--tls-cert and --tls-key do not make a certificate and its key")?;
    // h2 first: a client offering both gets HTTP/2 (RFC 7301: the server's preference).
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(cfg)))
}
