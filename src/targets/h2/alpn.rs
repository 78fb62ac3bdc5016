//! Which protocol an https server chooses by ALPN: asked once at start, so `--http-version 2`
//! against a server that only speaks HTTP/1.1 is one clear error before any load, and `auto`
//! can choose.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpStream;

use crate::targets::http::{HubTunnel, Tls};

/// What ALPN an https server chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alpn {
    /// `h2`.
    H2,
    /// `http/1.1`, or no protocol at all (a server without ALPN speaks HTTP/1.1).
    Http1,
}

/// Connect to `addr` (through `tunnel`'s proxy when given, `addr` being the proxy's) and run
/// a TLS handshake offering `tls`'s ALPN protocols: which one the server chose. Used once at
/// start, so `--http-version 2` against a server that only speaks HTTP/1.1 is one clear error
/// before any load, and `auto` can choose.
pub async fn negotiate(
    addr: SocketAddr,
    tunnel: Option<&HubTunnel>,
    tls: &Tls,
    limit: Duration,
) -> std::io::Result<Alpn> {
    let work = async {
        let mut tcp = TcpStream::connect(addr).await?;
        if let Some(t) = tunnel {
            let by = tokio::time::Instant::now() + limit;
            tcp = t.open(tcp, by).await.map_err(|e| {
                std::io::Error::new(std::io::ErrorKind::ConnectionRefused, e.to_string())
            })?;
        }
        let s = match tls.connector.connect(tls.server_name.clone(), tcp).await {
            Ok(s) => s,
            // A server that speaks ALPN but none of the protocols offered ends the handshake
            // with no_application_protocol (RFC 7301 §3.2; nginx does, offered h2 alone
            // without http2 on that listener).
            Err(e) if refused_alpn(&e) => return Ok(Alpn::Http1),
            Err(e) => return Err(e),
        };
        Ok(match s.get_ref().1.alpn_protocol() {
            Some(b"h2") => Alpn::H2,
            _ => Alpn::Http1,
        })
    };
    tokio::time::timeout(limit, work)
        .await
        .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
}

/// Whether a handshake failed because the server chose none of the ALPN protocols offered.
fn refused_alpn(e: &std::io::Error) -> bool {
    use tokio_rustls::rustls::{AlertDescription, Error};
    matches!(
        e.get_ref().and_then(|inner| inner.downcast_ref::<Error>()),
        Some(Error::AlertReceived(
            AlertDescription::NoApplicationProtocol
        ))
    )
}
