//! TLS settings for an `https://` host: a rustls client configuration (ring provider, HTTP/1.1
//! ALPN) and the server name to verify, shared by every connection of a pool.

use std::sync::Arc;

use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

/// Why TLS settings could not be built. One line, naming the field at fault.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The host is not a valid DNS name or IP address for certificate checks.
    #[error("invalid TLS server name `{0}`")]
    ServerName(String),
    /// A root certificate could not be parsed.
    #[error("invalid TLS root certificate: {0}")]
    Root(String),
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Config(String),
}

/// How to reach one `https://` host: verify its certificate for `server_name`.
#[derive(Clone)]
pub struct Tls {
    pub(crate) connector: TlsConnector,
    pub(crate) server_name: ServerName<'static>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

impl Tls {
    /// Verify the server against the Mozilla root store (`webpki-roots`).
    pub fn webpki(server_name: &str) -> Result<Self, TlsError> {
        let mut roots = RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        Self::build(server_name, roots)
    }

    /// Verify the server against these DER roots only (a private CA, or a test CA).
    pub fn with_roots(server_name: &str, roots_der: &[&[u8]]) -> Result<Self, TlsError> {
        let mut roots = RootCertStore::empty();
        for der in roots_der {
            roots
                .add(CertificateDer::from(der.to_vec()))
                .map_err(|e| TlsError::Root(e.to_string()))?;
        }
        Self::build(server_name, roots)
    }

    fn build(server_name: &str, roots: RootCertStore) -> Result<Self, TlsError> {
        let name = ServerName::try_from(server_name.to_string())
            .map_err(|_| TlsError::ServerName(server_name.to_string()))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Self {
            connector: TlsConnector::from(Arc::new(config)),
            server_name: name,
        })
    }
}

#[cfg(test)]
mod tests {
    //! The test CA and `localhost` certificate in `testdata/` were made once with openssl
    //! (EC P-256, valid until 2126); the key protects nothing but these tests.
    use std::net::SocketAddr;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;
    use tokio::time::Instant;
    use tokio_rustls::rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
    use tokio_rustls::TlsAcceptor;

    use super::*;
    use crate::result::Outcome;
    use crate::targets::http::{HttpPool, PoolConfig, TransportError};

    const CA: &[u8] = include_bytes!("testdata/ca.der");
    const LEAF: &[u8] = include_bytes!("testdata/leaf.der");
    const KEY: &[u8] = include_bytes!("testdata/leaf.key.der");
    const REPLY: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 17\r\n\r\nhub.mode=accepted";
    const REQUEST: &[u8] = b"POST /hub HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}";

    /// An https server answering every request (one read each) with `REPLY`; returns its
    /// address and its count of accepted TCP connections.
    async fn tls_server() -> (SocketAddr, &'static AtomicUsize) {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from(LEAF.to_vec())],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(KEY.to_vec())),
            )
            .unwrap();
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted: &'static AtomicUsize = Box::leak(Box::new(AtomicUsize::new(0)));
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                accepted.fetch_add(1, Ordering::SeqCst);
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut s) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let mut buf = [0u8; 4096];
                    // The requests here are tiny: one read is one request.
                    while matches!(s.read(&mut buf).await, Ok(n) if n > 0) {
                        if s.write_all(REPLY).await.is_err() || s.flush().await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (addr, accepted)
    }

    fn cfg() -> PoolConfig {
        PoolConfig {
            max_conns: 1,
            connect_timeout: Duration::from_secs(5),
            pool_timeout: Duration::from_secs(5),
        }
    }

    fn deadline() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    #[tokio::test]
    async fn https_exchanges_reuse_one_connection() {
        let (addr, accepted) = tls_server().await;
        let pool = HttpPool::new_tls(addr, cfg(), Tls::with_roots("localhost", &[CA]).unwrap());
        for _ in 0..5 {
            let resp = pool.send(REQUEST, deadline()).await.unwrap();
            assert_eq!(resp.outcome(), Outcome::Accepted);
            assert_eq!(resp.bytes_received, REPLY.len() as u64);
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn wrong_name_or_untrusted_root_fails_the_handshake() {
        let (addr, _) = tls_server().await;
        for tls in [
            Tls::with_roots("example.com", &[CA]).unwrap(),
            Tls::webpki("localhost").unwrap(),
        ] {
            let pool = HttpPool::new_tls(addr, cfg(), tls);
            let err = pool.send(REQUEST, deadline()).await.unwrap_err();
            assert_eq!(err, TransportError::Protocol("TLS handshake failed"));
        }
    }

    #[test]
    fn bad_settings_are_one_line_errors() {
        let err = Tls::with_roots("not a host name!", &[CA]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid TLS server name `not a host name!`"
        );
        assert!(matches!(
            Tls::with_roots("localhost", &[b"junk"]),
            Err(TlsError::Root(_))
        ));
        assert!(Tls::webpki("127.0.0.1").is_ok());
    }
}
