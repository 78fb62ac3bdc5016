//! Open AMQP over WebSockets from the client side: on a connected TCP socket, TLS with the
//! given connector, then the upgrade to `/$servicebus/websocket` with subprotocol `AMQPWSB10`.
//! The caller bounds the whole open with its connect timeout.

use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::TlsConnector;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

use super::ws_stream::WsStream;
use super::{ws_config, WS_PATH, WS_SUBPROTOCOL};

/// The stream an AMQP-over-WebSockets connection runs on.
pub type WsTls = WsStream<TlsStream<TcpStream>>;

/// Which step of the open failed, and why (one line, no secrets: nothing here carries one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WsOpenError {
    /// "TLS" or "WebSocket upgrade".
    pub step: &'static str,
    /// The cause.
    pub reason: String,
}

impl std::fmt::Display for WsOpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.step, self.reason)
    }
}

/// Over a connected `tcp` to `host:port`: TLS with `tls` (SNI and certificate name `host`),
/// then the upgrade. Each failure names its step.
pub async fn upgrade(
    tcp: TcpStream,
    host: &str,
    port: u16,
    tls: &TlsConnector,
) -> Result<WsTls, WsOpenError> {
    let fail = |step, reason: String| WsOpenError { step, reason };
    let name = ServerName::try_from(host.to_string())
        .map_err(|_| fail("TLS", "invalid TLS server name".into()))?;
    let tls = tls
        .connect(name, tcp)
        .await
        .map_err(|e| fail("TLS", e.to_string()))?;
    let url = if port == super::WS_PORT {
        format!("wss://{host}{WS_PATH}")
    } else {
        format!("wss://{host}:{port}{WS_PATH}")
    };
    let mut request = url
        .into_client_request()
        .map_err(|e| fail("WebSocket upgrade", e.to_string()))?;
    request.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        HeaderValue::from_static(WS_SUBPROTOCOL),
    );
    let (ws, response) =
        tokio_tungstenite::client_async_with_config(request, tls, Some(ws_config()))
            .await
            .map_err(|e| fail("WebSocket upgrade", one_line(&e.to_string())))?;
    let proto = response.headers().get("Sec-WebSocket-Protocol");
    if proto.map(|v| v.as_bytes()) != Some(WS_SUBPROTOCOL.as_bytes()) {
        return Err(fail(
            "WebSocket upgrade",
            format!("the server did not agree to subprotocol {WS_SUBPROTOCOL}"),
        ));
    }
    Ok(WsStream::new(ws))
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
