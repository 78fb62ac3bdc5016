//! A TCP connection through an HTTP proxy's CONNECT tunnel: the answer head bounded at
//! 64 KiB, each refusal named (`proxy_407`). The caller bounds the whole with its connect
//! timeout.

use std::io;

use hubload_http1::proxy::{connect_request, read_connect_answer, ConnectAnswer, ProxyUrl};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Why the connection could not be made. Never holds the proxy's credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunnelError {
    /// Whether nothing took the connection (a TCP refusal, to the endpoint or the proxy, or
    /// a proxy that refused the tunnel), as against one that broke on the way.
    pub refused: bool,
    /// The proxy's status when it answered the CONNECT with a refusal (not 2xx).
    pub status: Option<u16>,
    /// One line: the step, the peer and the cause; `proxy_NNN` and the like name the reason.
    pub reason: String,
}

impl std::fmt::Display for TunnelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

/// TCP to `proxy` (TCP_NODELAY), then [`open`] through it.
pub async fn through(proxy: &ProxyUrl, host: &str, port: u16) -> Result<TcpStream, TunnelError> {
    let s = tcp(proxy.host(), proxy.port())
        .await
        .map_err(|e| TunnelError {
            refused: !is_reset(&e),
            status: None,
            reason: format!(
                "TCP connect to HTTP proxy {} failed: {}",
                proxy.shown(),
                io_text(&e)
            ),
        })?;
    open(s, proxy, host, port).await
}

/// `CONNECT host:port` on `s`, a connection to `proxy`: the stream is the tunnel once the
/// proxy answered 2xx with nothing after its head.
pub async fn open(
    mut s: TcpStream,
    proxy: &ProxyUrl,
    host: &str,
    port: u16,
) -> Result<TcpStream, TunnelError> {
    let shown = proxy.shown();
    let broke = |e: io::Error| TunnelError {
        refused: false,
        status: None,
        reason: format!("HTTP proxy {shown}: CONNECT failed: {}", io_text(&e)),
    };
    s.write_all(&connect_request(host, port, proxy.authorization()))
        .await
        .map_err(broke)?;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk).await.map_err(broke)?;
        if n == 0 {
            return Err(TunnelError {
                refused: false,
                status: None,
                reason: format!(
                    "HTTP proxy {shown} closed the connection before answering CONNECT {host}:{port}"
                ),
            });
        }
        buf.extend_from_slice(&chunk[..n]);
        match read_connect_answer(&buf) {
            ConnectAnswer::Incomplete => continue,
            ConnectAnswer::Established { head_len } if head_len == buf.len() => return Ok(s),
            ConnectAnswer::Established { .. } => {
                return Err(TunnelError {
                    refused: false,
                    status: None,
                    reason: format!(
                        "HTTP proxy {shown} sent bytes past its answer to CONNECT before the tunnel was used (proxy_malformed_answer)"
                    ),
                })
            }
            verdict => return Err(refusal(verdict, &shown, host, port, proxy)),
        }
    }
}

/// The line for a tunnel the proxy did not open.
fn refusal(
    verdict: ConnectAnswer,
    shown: &str,
    host: &str,
    port: u16,
    proxy: &ProxyUrl,
) -> TunnelError {
    let reason = verdict.reason().unwrap_or_default();
    let status = match verdict {
        ConnectAnswer::Refused { status } => Some(status),
        _ => None,
    };
    let (refused, what) = match verdict {
        ConnectAnswer::Refused { status } => {
            let phrase = tokio_tungstenite::tungstenite::http::StatusCode::from_u16(status)
                .ok()
                .and_then(|c| c.canonical_reason())
                .unwrap_or("");
            let hint = match (status, proxy.authorization().is_some()) {
                (407, false) => ": it wants credentials, give them in the proxy URL (http://user:password@host:port)",
                // tinyproxy answers wrong credentials 401, others 407 again.
                (401 | 407, true) => ": it refused the credentials in the proxy URL",
                (403, _) => ": its rules do not allow this host or port",
                (502..=504, _) => ": it could not reach the endpoint",
                _ => "",
            };
            (true, format!("answered {status} {phrase}{hint}"))
        }
        ConnectAnswer::TooLarge => (false, "sent an answer head past 64 KiB".to_string()),
        _ => (
            false,
            "answered with something that is not HTTP/1.x".to_string(),
        ),
    };
    TunnelError {
        refused,
        status,
        reason: format!("HTTP proxy {shown} refused CONNECT {host}:{port}: {what} ({reason})"),
    }
}

async fn tcp(host: &str, port: u16) -> io::Result<TcpStream> {
    let s = TcpStream::connect((host, port)).await?;
    // Without TCP_NODELAY the p99 shows a ~40 ms Nagle/delayed-ACK artefact (docs/protocol.md §6).
    let _ = s.set_nodelay(true);
    Ok(s)
}

/// A reset is a connection that broke, not one nobody took.
fn is_reset(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted
    )
}

/// An I/O error as a short lower-case phrase.
fn io_text(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => "connection refused".into(),
        io::ErrorKind::ConnectionReset => "connection reset".into(),
        io::ErrorKind::TimedOut => "timed out".into(),
        _ => e.to_string(),
    }
}
