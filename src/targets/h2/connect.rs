//! Opening one HTTP/2 connection: TCP (the host's addresses in turn), TLS with ALPN `h2` for
//! an https host, the h2 handshake, and the task that drives the connection.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use h2::client::SendRequest;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::{timeout_at, Instant};

use super::sniff::Sniffed;
use super::unvectored::Unvectored;
use super::H2Pool;
use crate::result::{ConnErrorKind, Outcome, ProtocolReason, TimeoutKind};
use crate::targets::http::{handshake_error, io_error, MAX_HEAD, MAX_INTERIM};

/// The most fields a response head (or its trailers) may hold, as over HTTP/1.1
/// (`other.too_many_headers`).
const MAX_FIELDS: usize = hubload_http1::response::MAX_HEADERS;

/// The largest header list accepted, as HPACK sizes it (RFC 7541 §4.1: each field's name and
/// value plus 32 bytes), and advertised in SETTINGS_MAX_HEADER_LIST_SIZE: HTTP/1.1's head
/// limit plus the 32 bytes of each of its fields, so every head HTTP/1.1 accepts fits. h2
/// refuses a larger list while decoding it, keeping no field past the limit
/// (`other.head_too_large`).
const MAX_HEADER_LIST: usize = MAX_HEAD + 32 * MAX_FIELDS;

impl H2Pool {
    /// A new connection within the connect and handshake bounds (and the deadline), its h2
    /// handshake done and its driver task spawned.
    pub(super) async fn connect(
        &self,
        deadline: Instant,
    ) -> Result<(SendRequest<Bytes>, usize), Outcome> {
        let limit = deadline.min(Instant::now() + self.cfg.connect_timeout);
        let (mut tcp, addr) = match timeout_at(limit, self.open_tcp()).await {
            Err(_) => return Err(Outcome::Timeout(TimeoutKind::Connect)),
            Ok(r) => r?,
        };
        if let Some(t) = &self.tunnel {
            tcp = t.open(tcp, limit).await.map_err(|e| e.outcome())?;
        }
        let Some(tls) = &self.tls else {
            return Ok((self.handshake(tcp, deadline).await?, addr));
        };
        let started = Instant::now();
        let limit = deadline.min(started + self.cfg.tls_timeout);
        let s = match timeout_at(limit, tls.connector.connect(tls.server_name.clone(), tcp)).await {
            Err(_) => return Err(Outcome::Timeout(TimeoutKind::Connect)),
            Ok(Err(e)) => return Err(handshake_error(&e).outcome()),
            Ok(Ok(s)) => s,
        };
        self.counters.count_handshake(started.elapsed());
        // The server chose HTTP/1.1 after all (it did at start too, or `auto` would not have
        // chosen h2): its answer to a connection preface would not be HTTP/2.
        if s.get_ref().1.alpn_protocol() != Some(b"h2") {
            return Err(Outcome::ProtocolError(ProtocolReason::NotH2));
        }
        Ok((self.handshake(s, deadline).await?, addr))
    }

    /// The h2 handshake on `io` (the preface and SETTINGS; h2 does not wait for the server's),
    /// and the connection's task.
    async fn handshake<T>(&self, io: T, deadline: Instant) -> Result<SendRequest<Bytes>, Outcome>
    where
        T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let mut b = h2::client::Builder::new();
        b.enable_push(false)
            // Our cap holds from the first stream, before the server's SETTINGS arrive; its
            // SETTINGS_MAX_CONCURRENT_STREAMS replaces it once they do (h2 applies it).
            .initial_max_send_streams(self.streams)
            // Responses are small: the default windows never block them, so no WINDOW_UPDATE
            // is owed per response beyond what h2 sends as data is released.
            .initial_window_size(1 << 20)
            .initial_connection_window_size(1 << 24)
            // The limits a response head has over HTTP/1.1, for heads and trailers alike.
            .max_header_list_size(MAX_HEADER_LIST as u32)
            .max_header_fields(MAX_FIELDS)
            .max_informational_responses(MAX_INTERIM as usize);
        // Frames of many streams in one write (`unvectored.rs`), after the server's first
        // bytes are checked for an HTTP/1.x answer (`sniff.rs`).
        let io = Unvectored(Sniffed::new(io));
        let (send, conn) = match timeout_at(deadline, b.handshake::<_, Bytes>(io)).await {
            Err(_) => return Err(Outcome::Timeout(TimeoutKind::Connect)),
            Ok(Err(e)) => return Err(super::failure::stream_outcome(&e)),
            Ok(Ok(pair)) => pair,
        };
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "h2 connection ended with an error");
            }
        });
        Ok(send)
    }

    /// TCP connect with `TCP_NODELAY` to the next address in turn; on a refusal, the
    /// following ones, each once. Returns the stream and its address index.
    async fn open_tcp(&self) -> Result<(TcpStream, usize), Outcome> {
        let n = self.addrs.len();
        let first = self.next_addr.fetch_add(1, Ordering::Relaxed) % n;
        let mut last = Outcome::ConnError(ConnErrorKind::Refused);
        for i in (0..n).map(|k| (first + k) % n) {
            match TcpStream::connect(self.addrs[i]).await {
                Ok(tcp) => {
                    tcp.set_nodelay(true).map_err(|e| io_error(&e).outcome())?;
                    return Ok((tcp, i));
                }
                Err(e) => match io_error(&e).outcome() {
                    refused @ Outcome::ConnError(ConnErrorKind::Refused) => last = refused,
                    other => return Err(other),
                },
            }
        }
        Err(last)
    }
}
