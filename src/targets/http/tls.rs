//! TLS settings for an `https://` host: a rustls client configuration (ring provider, HTTP/1.1
//! ALPN, SNI from the host) and the server name to verify, shared by every connection of a
//! pool; and the mapping of a failed handshake to its [`TlsReason`].

use std::sync::Arc;

use tokio_rustls::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use tokio_rustls::rustls::crypto::{
    verify_tls12_signature, verify_tls13_signature, CryptoProvider,
};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use tokio_rustls::rustls::{
    self, CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_rustls::TlsConnector;

use super::TransportError;
use crate::result::TlsReason;

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
        Self::webpki_plus(server_name, &[])
    }

    /// Verify the server against the Mozilla roots plus the certificates of these PEM
    /// texts (`--ca-cert`, for a private CA).
    pub fn webpki_plus(server_name: &str, pems: &[Vec<u8>]) -> Result<Self, TlsError> {
        let mut roots = RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        for pem in pems {
            add_pem(&mut roots, pem)?;
        }
        Self::build(server_name, roots)
    }

    /// Do not verify the server's certificate at all (`--insecure`): the handshake still
    /// checks its signatures, so the connection is encrypted, but to whoever answers.
    pub fn insecure(server_name: &str) -> Result<Self, TlsError> {
        let name = server_name_of(server_name)?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(e.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerifier(provider)))
            .with_no_client_auth();
        Ok(Self::finish(config, name))
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
        let name = server_name_of(server_name)?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Self::finish(config, name))
    }

    fn finish(mut config: ClientConfig, name: ServerName<'static>) -> Self {
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Self {
            connector: TlsConnector::from(Arc::new(config)),
            server_name: name,
        }
    }
}

impl Tls {
    /// The same settings offering these ALPN protocols instead of `http/1.1` (`h2`, or `h2`
    /// then `http/1.1` for `--http-version auto`).
    pub fn with_alpn(&self, protocols: &[&[u8]]) -> Tls {
        let mut config = ClientConfig::clone(self.connector.config());
        config.alpn_protocols = protocols.iter().map(|p| p.to_vec()).collect();
        Tls {
            connector: TlsConnector::from(Arc::new(config)),
            server_name: self.server_name.clone(),
        }
    }
}

fn server_name_of(host: &str) -> Result<ServerName<'static>, TlsError> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(bare.to_string()).map_err(|_| TlsError::ServerName(host.to_string()))
}

/// Add every certificate of a PEM text; a text holding none is an error.
fn add_pem(roots: &mut RootCertStore, pem: &[u8]) -> Result<(), TlsError> {
    let mut added = 0;
    for cert in CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(|e| TlsError::Root(e.to_string()))?;
        roots.add(cert).map_err(|e| TlsError::Root(e.to_string()))?;
        added += 1;
    }
    if added == 0 {
        return Err(TlsError::Root("no PEM CERTIFICATE block".into()));
    }
    Ok(())
}

/// The reason a handshake failed. tokio-rustls wraps rustls' error in an `io::Error`;
/// anything that is not a rustls error is a socket failure, mapped like any other.
pub(crate) fn handshake_error(e: &std::io::Error) -> TransportError {
    match e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    {
        Some(err) => TransportError::Tls(tls_reason(err)),
        None => super::io_error(e),
    }
}

fn tls_reason(err: &rustls::Error) -> TlsReason {
    use CertificateError as C;
    match err {
        rustls::Error::InvalidCertificate(c) => match c {
            C::UnknownIssuer => TlsReason::UnknownIssuer,
            C::NotValidForName | C::NotValidForNameContext { .. } => TlsReason::NameMismatch,
            C::Expired
            | C::ExpiredContext { .. }
            | C::NotValidYet
            | C::NotValidYetContext { .. } => TlsReason::Expired,
            _ => TlsReason::BadCertificate,
        },
        rustls::Error::AlertReceived(_)
        | rustls::Error::PeerIncompatible(_)
        | rustls::Error::PeerMisbehaved(_)
        | rustls::Error::InappropriateMessage { .. }
        | rustls::Error::InappropriateHandshakeMessage { .. }
        | rustls::Error::InvalidMessage(_)
        | rustls::Error::NoApplicationProtocol
        | rustls::Error::DecryptError => TlsReason::Handshake,
        _ => TlsReason::Other,
    }
}

/// `--insecure`: accept any certificate, but still check the handshake signatures.
#[derive(Debug)]
struct NoVerifier(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerifier {
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
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
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
            tls_timeout: Duration::from_secs(5),
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
        assert_eq!(pool.handshakes().count, 1);
    }

    #[tokio::test]
    async fn wrong_name_or_untrusted_root_fails_the_handshake_with_its_reason() {
        let (addr, _) = tls_server().await;
        for (tls, reason) in [
            (
                Tls::with_roots("example.com", &[CA]).unwrap(),
                TlsReason::NameMismatch,
            ),
            (Tls::webpki("localhost").unwrap(), TlsReason::UnknownIssuer),
        ] {
            let pool = HttpPool::new_tls(addr, cfg(), tls);
            let err = pool.send(REQUEST, deadline()).await.unwrap_err();
            assert_eq!(err, TransportError::Tls(reason));
            assert_eq!(err.outcome(), Outcome::TlsError(reason));
            assert_eq!(pool.handshakes().count, 0);
        }
    }

    #[tokio::test]
    async fn insecure_and_pem_roots_complete_the_handshake() {
        let (addr, _) = tls_server().await;
        let pem = format!(
            "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, CA)
        );
        for tls in [
            Tls::insecure("example.com").unwrap(),
            Tls::webpki_plus("localhost", &[pem.into_bytes()]).unwrap(),
        ] {
            let pool = HttpPool::new_tls(addr, cfg(), tls);
            let resp = pool.send(REQUEST, deadline()).await.unwrap();
            assert_eq!(resp.outcome(), Outcome::Accepted);
        }
        assert!(matches!(
            Tls::webpki_plus("localhost", &[b"not pem".to_vec()]),
            Err(TlsError::Root(_))
        ));
    }

    #[tokio::test]
    async fn a_server_that_never_answers_the_handshake_times_out_as_connect() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // Accept and hold the socket open without a word.
        let held = tokio::spawn(async move {
            let (s, _) = listener.accept().await.unwrap();
            tokio::time::sleep(Duration::from_secs(30)).await;
            drop(s);
        });
        let mut c = cfg();
        c.tls_timeout = Duration::from_millis(200);
        let pool = HttpPool::new_tls(addr, c, Tls::insecure("localhost").unwrap());
        let err = pool.send(REQUEST, deadline()).await.unwrap_err();
        assert_eq!(
            err,
            TransportError::Timeout(crate::result::TimeoutKind::Connect)
        );
        held.abort();
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
