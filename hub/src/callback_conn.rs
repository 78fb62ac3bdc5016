//! One delivery worker's own HTTP/1.1 keep-alive connection to an `http://` callback: write
//! one or several POSTs (pipelined, RFC 9112 §9.3.2) in one vectored write, read their
//! answers' statuses in order, discard the bodies, keep the socket for the next write.
//!
//! Each request of a write comes to an [`Answer`]: answered; [`Answer::Unsent`] when written
//! after an answer that closed the connection (not an attempt); [`Answer::Failed`] when the
//! connection failed or timed out first. Only a connection that has answered and stayed open
//! takes more than one request per write ([`Conn::room`]); docs/hub.md has the rules.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};
use tokio::net::TcpStream;
use url::{Host, Url};

/// Where an `http://` callback is and what its requests say in their head.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    host: Host<String>,
    port: u16,
    /// The request line and `Host` header, up to and including the `Host` line's CRLF.
    head: Vec<u8>,
}

impl Target {
    /// `None` unless `url` is `http://` (https callbacks go through the TLS client).
    pub fn new(url: &Url) -> Option<Target> {
        if url.scheme() != "http" {
            return None;
        }
        let host = url.host()?.to_owned();
        let port = url.port_or_known_default()?;
        let path = &url[url::Position::BeforePath..url::Position::AfterQuery];
        let path = if path.is_empty() { "/" } else { path };
        let authority = &url[url::Position::BeforeHost..url::Position::AfterPort];
        let head = format!("POST {path} HTTP/1.1\r\nHost: {authority}\r\n").into_bytes();
        Some(Target { host, port, head })
    }

    async fn connect(&self) -> io::Result<TcpStream> {
        let s = match &self.host {
            Host::Ipv4(ip) => TcpStream::connect(SocketAddr::from((*ip, self.port))).await?,
            Host::Ipv6(ip) => TcpStream::connect(SocketAddr::from((*ip, self.port))).await?,
            Host::Domain(d) => TcpStream::connect((d.as_str(), self.port)).await?,
        };
        s.set_nodelay(true)?;
        Ok(s)
    }
}

/// Why an attempt got no status: the `failed_attempts` causes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    Timeout,
    Connect,
    Error,
}

impl Failure {
    /// Why a POST over the hub's pooled (TLS) client got no status.
    pub fn of_reqwest(e: &reqwest::Error) -> Failure {
        if e.is_timeout() {
            Failure::Timeout
        } else if e.is_connect() {
            Failure::Connect
        } else {
            Failure::Error
        }
    }

    pub fn cause(self) -> &'static str {
        match self {
            Failure::Timeout => "timeout",
            Failure::Connect => "connect",
            Failure::Error => "error",
        }
    }
}

/// What became of one request of a [`Conn::send`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// The callback answered with this status: the attempt's outcome.
    Status(u16),
    /// No answer: the connection failed, or timed out, with this request unanswered.
    Failed(Failure),
    /// Written after a request whose answer closed the connection (`Connection: close`,
    /// HTTP/1.0, or a body running to the connection's end), so the callback did not
    /// process it (RFC 9112 §9.6): it was not attempted and is sent again.
    Unsent,
}

/// A worker's connection (none until the first delivery, or after one failed), and its
/// buffers: the request heads of the next write, and the answers as read.
#[derive(Debug, Default)]
pub(crate) struct Conn {
    stream: Option<TcpStream>,
    out: Vec<u8>,
    /// Where each head in `out` ends.
    ends: Vec<usize>,
    buf: Vec<u8>,
}

impl Conn {
    /// How many requests the next [`Conn::send`] may pipeline: `depth` on a connection
    /// that has answered and stays open, else 1 (a new connection first shows with one
    /// answer that it stays open, so a callback that closes after each answer never gets
    /// a request it will not process). An idle connection the callback closed is dropped.
    pub fn room(&mut self, depth: usize) -> usize {
        if self.stream.as_ref().is_some_and(closed_by_peer) {
            self.stream = None;
        }
        if self.stream.is_some() {
            depth.max(1)
        } else {
            1
        }
    }

    /// Begin the next write: no requests in it yet.
    pub fn start(&mut self) {
        self.out.clear();
        self.ends.clear();
    }

    /// Add one request's head: `target`'s request line and `Host`, then what `lines`
    /// writes (header lines, each `Name: value\r\n`, already validated, then
    /// `Content-Length` and the blank line).
    pub fn push(&mut self, target: &Target, lines: impl FnOnce(&mut Vec<u8>)) {
        self.out.extend_from_slice(&target.head);
        lines(&mut self.out);
        self.ends.push(self.out.len());
    }

    /// POST the requests added with [`Conn::push`], `bodies[i]` after head `i`, to
    /// `target` in one write, and read their answers in order into `answers` (one per
    /// request). Connect, write and the first answer fall within `timeout`, and each
    /// further answer within `timeout` of the one before; after a failure or timeout the
    /// requests still unanswered are [`Answer::Failed`] and the connection is closed.
    pub async fn send(
        &mut self,
        target: &Target,
        bodies: &[&[u8]],
        timeout: Duration,
        answers: &mut Vec<Answer>,
    ) {
        answers.clear();
        let n = self.ends.len().min(bodies.len());
        let mut deadline = tokio::time::Instant::now() + timeout;
        let written = tokio::time::timeout_at(deadline, self.connect_and_write(target, bodies))
            .await
            .unwrap_or(Err(Failure::Timeout));
        if let Err(f) = written {
            self.stream = None;
            answers.resize(n, Answer::Failed(f));
            return;
        }
        self.buf.clear();
        while answers.len() < n {
            let Some(stream) = self.stream.as_mut() else {
                break;
            };
            let r = tokio::time::timeout_at(deadline, read_response(stream, &mut self.buf))
                .await
                .unwrap_or(Err(Failure::Timeout));
            match r {
                Ok((status, reuse)) => {
                    answers.push(Answer::Status(status));
                    if !reuse {
                        self.stream = None;
                    }
                    deadline = tokio::time::Instant::now() + timeout;
                }
                Err(f) => {
                    self.stream = None;
                    answers.resize(n, Answer::Failed(f));
                }
            }
        }
        // After an answer that closed the connection, the rest were not processed.
        answers.resize(n, Answer::Unsent);
        // Bytes beyond the last answer were never asked for: do not reuse the connection.
        if !self.buf.is_empty() {
            self.stream = None;
        }
    }

    /// Connect unless the connection is open ([`Conn::room`] has just looked whether the
    /// callback closed it), then write every request.
    async fn connect_and_write(
        &mut self,
        target: &Target,
        bodies: &[&[u8]],
    ) -> Result<(), Failure> {
        if self.stream.is_none() {
            self.stream = Some(target.connect().await.map_err(|_| Failure::Connect)?);
        }
        let stream = self.stream.as_mut().ok_or(Failure::Error)?;
        // Heads and bodies in vectored writes; the (shared) bodies are not copied.
        let mut slices = Vec::with_capacity(2 * self.ends.len());
        let mut from = 0;
        for (&end, body) in self.ends.iter().zip(bodies) {
            slices.push(io::IoSlice::new(&self.out[from..end]));
            if !body.is_empty() {
                slices.push(io::IoSlice::new(body));
            }
            from = end;
        }
        let mut rest = &mut slices[..];
        while !rest.is_empty() {
            let k = stream
                .write_vectored(rest)
                .await
                .map_err(|_| Failure::Error)?;
            if k == 0 {
                return Err(Failure::Error);
            }
            io::IoSlice::advance_slices(&mut rest, k);
        }
        Ok(())
    }
}

/// Whether an idle keep-alive socket was closed (or sent something unasked) since its last
/// answer. Only readiness already reported by the reactor is looked at; then one read.
fn closed_by_peer(s: &TcpStream) -> bool {
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let ready = std::pin::pin!(s.ready(Interest::READABLE));
    match std::future::Future::poll(ready, &mut cx) {
        std::task::Poll::Pending => false,
        std::task::Poll::Ready(Err(_)) => true,
        std::task::Poll::Ready(Ok(_)) => {
            let mut b = [0u8; 1];
            !matches!(s.try_read(&mut b), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
        }
    }
}

/// How the body of an answer ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    None,
    Length(u64),
    Chunked,
    Close,
}

/// The head of one answer: status, framing, and whether the connection stays open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Head {
    status: u16,
    framing: Framing,
    keep_alive: bool,
    len: usize,
}

/// Parse a complete head at the start of `buf` (the codec's response parser, as hubload's
/// publish client reads heads); `Ok(None)` if more bytes are needed.
fn parse_head(buf: &[u8]) -> Result<Option<Head>, Failure> {
    use hubload_http1::response::{self, Framing as F};
    // A `Content-Type` is copied here by the parser; the hub has no use for it.
    let mut content_type = None;
    let Some(h) =
        response::parse_head(buf, false, &mut content_type).map_err(|_| Failure::Error)?
    else {
        return Ok(None);
    };
    let framing = match h.framing {
        F::Empty => Framing::None,
        F::Length(n) => Framing::Length(n),
        F::Chunked => Framing::Chunked,
        F::UntilClose => Framing::Close,
    };
    Ok(Some(Head {
        status: h.status,
        framing,
        keep_alive: h.keep_alive && framing != Framing::Close,
        len: h.len,
    }))
}

/// Interim (1xx) answers skipped before one more fails the delivery.
const MAX_INTERIM: u32 = 5;

/// Read one answer (skipping 1xx ones, up to [`MAX_INTERIM`]) and discard its body: (status, connection stays
/// open). `buf` holds what was read beyond the answer before (the next pipelined answer's
/// start), and afterwards what was read beyond this one.
async fn read_response(s: &mut TcpStream, buf: &mut Vec<u8>) -> Result<(u16, bool), Failure> {
    let mut interim = 0;
    loop {
        let head = loop {
            if let Some(h) = parse_head(buf)? {
                break h;
            }
            if buf.len() > 64 * 1024 {
                return Err(Failure::Error);
            }
            fill(s, buf).await?;
        };
        buf.drain(..head.len);
        if (100..200).contains(&head.status) {
            // A callback sends one or two at most; one that never stops would keep this
            // task draining heads until its deadline (Go's net/http also stops at 5).
            interim += 1;
            if interim > MAX_INTERIM {
                return Err(Failure::Error);
            }
            continue;
        }
        let done = match head.framing {
            Framing::None => true,
            Framing::Length(n) => skip(s, buf, n).await?,
            Framing::Chunked => skip_chunked(s, buf).await?,
            Framing::Close => {
                while fill(s, buf).await.is_ok() {
                    buf.clear();
                }
                false
            }
        };
        return Ok((head.status, head.keep_alive && done));
    }
}

/// Read more bytes into `buf`; the end of the connection is an error.
async fn fill(s: &mut TcpStream, buf: &mut Vec<u8>) -> Result<(), Failure> {
    buf.reserve(4096);
    match s.read_buf(buf).await {
        Ok(0) | Err(_) => Err(Failure::Error),
        Ok(_) => Ok(()),
    }
}

/// Discard `n` body bytes (those in `buf` first); true when all were read.
async fn skip(s: &mut TcpStream, buf: &mut Vec<u8>, mut n: u64) -> Result<bool, Failure> {
    loop {
        let take = n.min(buf.len() as u64) as usize;
        buf.drain(..take);
        n -= take as u64;
        if n == 0 {
            return Ok(true);
        }
        fill(s, buf).await?;
    }
}

/// Discard a chunked body (those bytes in `buf` first); true when its end was read.
async fn skip_chunked(s: &mut TcpStream, buf: &mut Vec<u8>) -> Result<bool, Failure> {
    let mut dec = hubload_http1::chunked::Chunked::default();
    // Capped at 0: the data is read and dropped, never kept.
    let mut none = Vec::new();
    loop {
        let used = dec.decode(buf, &mut none, 0).map_err(|_| Failure::Error)?;
        buf.drain(..used);
        if dec.is_done() {
            return Ok(true);
        }
        fill(s, buf).await?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(s: &str) -> Head {
        parse_head(s.as_bytes()).unwrap().unwrap()
    }

    #[test]
    fn framing_follows_the_status_and_headers() {
        let h = head("HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n");
        assert_eq!(
            (h.status, h.framing, h.keep_alive),
            (204, Framing::None, true)
        );
        let h = head("HTTP/1.1 500 X\r\ncontent-length: 12\r\n\r\n");
        assert_eq!((h.status, h.framing), (500, Framing::Length(12)));
        let h = head(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 3\r\n\r\n",
        );
        assert_eq!(h.framing, Framing::Chunked);
        let h = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n");
        assert_eq!((h.framing, h.keep_alive), (Framing::Close, false));
        let h =
            head("HTTP/1.1 410 Gone\r\nConnection: keep-alive, close\r\nContent-Length: 0\r\n\r\n");
        assert_eq!((h.status, h.keep_alive), (410, false));
        let h = head("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n");
        assert!(!h.keep_alive);
        let h = head("HTTP/1.1 200 OK\r\n\r\n");
        assert_eq!((h.framing, h.keep_alive), (Framing::Close, false));
        assert_eq!(h.len, "HTTP/1.1 200 OK\r\n\r\n".len());
    }

    #[test]
    fn a_bad_or_partial_head_is_told_apart() {
        assert_eq!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Le"), Ok(None));
        assert_eq!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
            Err(Failure::Error)
        );
        assert_eq!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"),
            Err(Failure::Error)
        );
        assert_eq!(parse_head(b"garbage\r\n\r\n"), Err(Failure::Error));
    }

    #[test]
    fn the_target_head_names_path_query_and_authority() {
        let t = Target::new(&Url::parse("http://127.0.0.1:8080/cb/1?x=a%20b").unwrap()).unwrap();
        assert_eq!(
            t.head,
            b"POST /cb/1?x=a%20b HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
        );
        let t = Target::new(&Url::parse("http://[::1]").unwrap()).unwrap();
        assert_eq!(
            (t.head.as_slice(), t.port),
            (&b"POST / HTTP/1.1\r\nHost: [::1]\r\n"[..], 80)
        );
        assert!(Target::new(&Url::parse("https://example.test/cb").unwrap()).is_none());
    }
}
