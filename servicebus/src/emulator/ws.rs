//! The emulator's AMQP-over-WebSockets port: TLS from a given certificate, the upgrade on
//! `/$servicebus/websocket` with subprotocol `AMQPWSB10`, then the same connection handling
//! as the AMQP port. Each handshake (TLS and upgrade) is bounded by [`HANDSHAKE_TIMEOUT`].

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::{HeaderValue, StatusCode};

use super::{amqp_acceptor, conn, EmulatorHandle};
use crate::transport::ws_stream::WsStream;
use crate::transport::{ws_config, WS_PATH, WS_SUBPROTOCOL};

/// Bound on a client's TLS handshake and WebSocket upgrade together.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A TLS acceptor serving the PEM certificate chain `cert` (leaf first) with the PEM key
/// `key`. Errors name the file.
pub fn tls_acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, String> {
    let read = |p: &Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    let chain = CertificateDer::pem_slice_iter(&read(cert)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!("{}: no PEM certificate in it", cert.display()));
    }
    let key_der = PrivateKeyDer::from_pem_slice(&read(key)?)
        .map_err(|e| format!("{}: {e}", key.display()))?;
    let provider = tokio_rustls::rustls::crypto::ring::default_provider();
    let cfg = ServerConfig::builder_with_provider(Arc::new(provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key_der)
        .map_err(|e| format!("the certificate and key do not match: {e}"))?;
    Ok(TlsAcceptor::from(Arc::new(cfg)))
}

impl EmulatorHandle {
    /// Serve AMQP over WebSockets (TLS with `tls`) on `listener` beside the AMQP port, on the
    /// same namespace and counts, until [`EmulatorHandle::shutdown`]. Returns its address.
    pub fn serve_websockets(
        &self,
        listener: TcpListener,
        tls: TlsAcceptor,
    ) -> std::io::Result<SocketAddr> {
        let addr = listener.local_addr()?;
        let shared = self.shared.clone();
        let mut shutdown = self.shutdown.subscribe();
        let drop_rx = self.drop_conns.subscribe();
        tokio::spawn(async move {
            let acceptor = Arc::new(amqp_acceptor(shared.cfg.idle_timeout));
            let mut conns = JoinSet::new();
            loop {
                tokio::select! {
                    _ = shutdown.changed() => break,
                    accepted = listener.accept() => {
                        let Ok((tcp, _)) = accepted else { continue };
                        let _ = tcp.set_nodelay(true);
                        let (tls, acceptor, shared, drop_rx) =
                            (tls.clone(), acceptor.clone(), shared.clone(), drop_rx.clone());
                        conns.spawn(async move {
                            let handshake = async {
                                let tls = tls.accept(tcp).await.ok()?;
                                tokio_tungstenite::accept_hdr_async_with_config(
                                    tls,
                                    upgrade_answer,
                                    Some(ws_config()),
                                )
                                .await
                                .ok()
                            };
                            let Ok(Some(ws)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake).await
                            else {
                                return;
                            };
                            conn::serve(WsStream::new(ws), acceptor, shared, drop_rx).await;
                        });
                    }
                    Some(_) = conns.join_next(), if !conns.is_empty() => {}
                }
            }
            conns.abort_all();
            while conns.join_next().await.is_some() {}
        });
        Ok(addr)
    }
}

/// Accept the upgrade only on [`WS_PATH`] with [`WS_SUBPROTOCOL`] offered, and name it in the
/// answer (a client that offered it requires that).
#[allow(clippy::result_large_err)] // the callback type is tungstenite's
fn upgrade_answer(req: &Request, mut resp: Response) -> Result<Response, ErrorResponse> {
    let refuse = |status: StatusCode, why: &str| {
        let mut r = ErrorResponse::new(Some(why.to_string()));
        *r.status_mut() = status;
        r
    };
    if req.uri().path() != WS_PATH {
        return Err(refuse(StatusCode::NOT_FOUND, "no such WebSocket path"));
    }
    let offered = req
        .headers()
        .get_all("Sec-WebSocket-Protocol")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|p| p.trim().eq_ignore_ascii_case(WS_SUBPROTOCOL));
    if !offered {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "subprotocol AMQPWSB10 is required",
        ));
    }
    resp.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        HeaderValue::from_static(WS_SUBPROTOCOL),
    );
    Ok(resp)
}
