//! The hub reached through an HTTP proxy: every new connection is a TCP connection to the
//! proxy, then `CONNECT host:port`, bounded by the connect deadline; a refusal is
//! `conn_refused.proxy` with the proxy's status.

use hubload_http1::proxy::ProxyUrl;
use hubload_servicebus::transport::tunnel::{self, TunnelError};
use tokio::net::TcpStream;
use tokio::time::{timeout_at, Instant};

use super::TransportError;
use crate::result::{ConnErrorKind, TimeoutKind};

/// Where a tunnel goes: the proxy that opens it and the hub's host and port it asks for.
/// Its `Debug` shows the proxy without its credentials.
#[derive(Clone)]
pub struct HubTunnel {
    proxy: ProxyUrl,
    /// The hub's host as the URL names it (IPv6 without brackets).
    host: String,
    port: u16,
}

impl std::fmt::Debug for HubTunnel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} -> {}:{}", self.proxy.shown(), self.host, self.port)
    }
}

impl HubTunnel {
    /// Tunnels to `host:port` through `proxy`.
    pub fn new(proxy: ProxyUrl, host: &str, port: u16) -> Self {
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        HubTunnel { proxy, host, port }
    }

    /// The proxy, for the lines people read (`shown()` has no credentials).
    pub fn proxy(&self) -> &ProxyUrl {
        &self.proxy
    }

    /// `CONNECT` on `tcp`, a connection to the proxy, by `limit`: the stream is the hub's
    /// once the proxy answered 2xx.
    pub async fn open(&self, tcp: TcpStream, limit: Instant) -> Result<TcpStream, TransportError> {
        match timeout_at(limit, tunnel::open(tcp, &self.proxy, &self.host, self.port)).await {
            Err(_) => Err(TransportError::Timeout(TimeoutKind::Connect)),
            Ok(Ok(s)) => Ok(s),
            Ok(Err(e)) => Err(refusal(&e)),
        }
    }
}

/// The class of a tunnel the proxy did not open: refused with its status, refused at TCP, or
/// broken on the way (closed before answering, bytes past its answer).
fn refusal(e: &TunnelError) -> TransportError {
    match (e.status, e.refused) {
        (Some(status), _) => TransportError::ProxyRefused(status),
        (None, true) => TransportError::Conn(ConnErrorKind::Refused),
        (None, false) => TransportError::Conn(ConnErrorKind::Closed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Outcome;

    #[test]
    fn each_tunnel_failure_has_its_class() {
        let e = |status, refused| TunnelError {
            refused,
            status,
            reason: String::new(),
        };
        assert_eq!(
            refusal(&e(Some(407), true)).outcome(),
            Outcome::ProxyRefused(407)
        );
        assert_eq!(
            refusal(&e(None, true)).outcome(),
            Outcome::ConnError(ConnErrorKind::Refused)
        );
        assert_eq!(
            refusal(&e(None, false)).outcome(),
            Outcome::ConnError(ConnErrorKind::Closed)
        );
    }

    #[test]
    fn debug_shows_no_credentials() {
        let p = ProxyUrl::parse("http://u:s3cret@proxy.corp:3128").unwrap();
        let t = HubTunnel::new(p, "[::1]", 443);
        assert_eq!(format!("{t:?}"), "http://proxy.corp:3128 -> ::1:443");
    }
}
