//! How a Service Bus connection reaches the broker: AMQP on its own port, or AMQP framed in
//! WebSocket binary messages over TLS (`TransportType=AmqpWebSockets`, the SDKs' spelling),
//! for networks where only 443 leaves; either through an HTTP proxy's CONNECT tunnel.

use hubload_http1::proxy::{ProxyConfig, Route};

pub mod tunnel;
pub mod ws_client;
pub mod ws_stream;

/// Default port of AMQP over WebSockets (TLS).
pub const WS_PORT: u16 = 443;
/// The HTTP path of the WebSocket upgrade, as Azure serves it.
pub const WS_PATH: &str = "/$servicebus/websocket";
/// The WebSocket subprotocol of AMQP 1.0 (OASIS "AMQP WebSocket Binding" 1.0).
pub const WS_SUBPROTOCOL: &str = "AMQPWSB10";
/// Largest WebSocket message (and frame) either side accepts, bytes. An AMQP frame is at
/// most the negotiated max-frame-size (Azure: 256 KiB with a batch); 1 MiB leaves room and
/// bounds what a hostile peer can make us buffer.
pub const WS_MAX_MESSAGE: usize = 1024 * 1024;

/// The transport a connection string asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TransportType {
    /// AMQP on 5671 (TLS) or 5672 (the development emulator).
    #[default]
    Amqp,
    /// AMQP over WebSockets on TLS, port 443 unless the endpoint names one.
    AmqpWebSockets,
}

impl TransportType {
    /// The value of a `TransportType=` field (case-insensitive), or `None` if unknown.
    pub fn parse(v: &str) -> Option<Self> {
        match v.to_ascii_lowercase().as_str() {
            "amqp" | "amqptcp" => Some(TransportType::Amqp),
            "amqpwebsockets" | "amqpoverwebsocket" => Some(TransportType::AmqpWebSockets),
            _ => None,
        }
    }

    /// The connection-string spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            TransportType::Amqp => "Amqp",
            TransportType::AmqpWebSockets => "AmqpWebSockets",
        }
    }
}

/// How a Service Bus connection to `host:port` goes with the proxy settings `cfg`: AMQP over
/// WebSockets follows them (`HTTPS_PROXY`, `NO_PROXY`, the flags) as Microsoft's SDKs do; AMQP
/// on its own port goes through a proxy only when `--proxy` names one, since proxies
/// commonly allow CONNECT to 443 alone and a variable set for the web should not move it.
pub fn route<'a>(
    cfg: &'a ProxyConfig,
    host: &str,
    port: u16,
    transport: TransportType,
) -> Route<'a> {
    match cfg.route(host, port) {
        Route::Via(_) if transport == TransportType::Amqp && !cfg.from_flag() => Route::Direct,
        r => r,
    }
}

/// Add every certificate of each PEM text to `roots`; a text holding none is an error.
pub(crate) fn add_pems(
    roots: &mut tokio_rustls::rustls::RootCertStore,
    pems: &[Vec<u8>],
) -> Result<(), String> {
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::CertificateDer;
    for pem in pems {
        let mut added = 0;
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| format!("CA certificate: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| format!("CA certificate: {e}"))?;
            added += 1;
        }
        if added == 0 {
            return Err("CA certificate: no PEM CERTIFICATE block".into());
        }
    }
    Ok(())
}

/// The WebSocket limits both ends use: messages and frames up to [`WS_MAX_MESSAGE`], and no
/// more than that queued unwritten.
pub(crate) fn ws_config() -> tokio_tungstenite::tungstenite::protocol::WebSocketConfig {
    tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(WS_MAX_MESSAGE))
        .max_frame_size(Some(WS_MAX_MESSAGE))
        .max_write_buffer_size(4 * WS_MAX_MESSAGE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_sdk_spellings() {
        for (v, want) in [
            ("Amqp", Some(TransportType::Amqp)),
            ("AmqpWebSockets", Some(TransportType::AmqpWebSockets)),
            ("amqpwebsockets", Some(TransportType::AmqpWebSockets)),
            ("AmqpOverWebsocket", Some(TransportType::AmqpWebSockets)),
            ("websockets", None),
            ("", None),
        ] {
            assert_eq!(TransportType::parse(v), want, "{v}");
        }
        assert_eq!(
            TransportType::parse(TransportType::AmqpWebSockets.as_str()),
            Some(TransportType::AmqpWebSockets)
        );
    }
}
