//! One HTTP/1.1 connection: write a pre-rendered request, read exactly one response off the
//! socket into a reused buffer, and say whether the connection can carry another request.

use std::io;

use super::parse::{append_capped, parse_head, Chunked, Framing};
use super::stream::Stream;
use super::{Response, TransportError, BODY_CAP};

/// Longest response head accepted, bytes.
const MAX_HEAD: usize = 64 * 1024;
/// Initial read buffer size, and the least free space offered to each read, bytes.
const READ_CHUNK: usize = 8 * 1024;

/// Why an exchange failed, and whether a retry on a fresh connection is safe.
#[derive(Debug)]
pub(crate) struct Failure {
    pub error: TransportError,
    /// Writing the request failed: the server cannot have acted on it (a keep-alive
    /// connection it had already closed), so one retry on a fresh connection is safe. Once the
    /// request is written, a POST is never resent (as Go's net/http does for non-idempotent
    /// requests): the server may have processed it, and a load tester must count what it sent.
    pub unsent: bool,
}

/// An open connection with its read buffer.
#[derive(Debug)]
pub(crate) struct Conn {
    stream: Stream,
    /// Bytes read but not yet consumed are `buf[pos..]`.
    buf: Vec<u8>,
    pos: usize,
    /// Whether this connection has already carried a complete exchange.
    pub reused: bool,
}

impl Conn {
    pub(crate) fn new(stream: Stream) -> Self {
        Self {
            stream,
            buf: Vec::with_capacity(READ_CHUNK),
            pos: 0,
            reused: false,
        }
    }

    /// Send `request` and read one response into `resp`. `Ok(true)` means the connection is
    /// clean and may be reused.
    /// True when the idle connection cannot carry a request: the peer closed or reset it, or
    /// sent bytes nobody asked for (a `408` before closing, a TLS close_notify).
    pub(crate) fn is_stale(&self) -> bool {
        self.stream.is_stale()
    }

    pub(crate) async fn exchange(
        &mut self,
        request: &[u8],
        resp: &mut Response,
    ) -> Result<bool, Failure> {
        resp.status = 0;
        resp.body.clear();
        resp.bytes_received = 0;
        self.buf.clear();
        self.pos = 0;

        if let Err(e) = self.stream.write_all(request).await {
            return Err(Failure {
                error: io_error(&e),
                unsent: true,
            });
        }
        let head_request = request.starts_with(b"HEAD ");

        // The head; informational 1xx heads (100 Continue, 103 Early Hints) are skipped.
        let head = loop {
            match parse_head(&self.buf[self.pos..], head_request, &mut resp.content_type) {
                Err(msg) => return Err(protocol(msg)),
                Ok(Some(h)) => {
                    self.pos += h.len;
                    resp.bytes_received += h.len as u64;
                    if (100..200).contains(&h.status) && h.status != 101 {
                        continue;
                    }
                    break h;
                }
                Ok(None) => {
                    if self.buf.len() - self.pos > MAX_HEAD {
                        return Err(protocol("response head too large"));
                    }
                    self.fill().await?;
                }
            }
        };
        resp.status = head.status;
        let mut keep_alive = head.keep_alive && head.status != 101;

        match head.framing {
            Framing::Empty => {}
            Framing::Length(mut left) => loop {
                let avail = &self.buf[self.pos..];
                let n = avail.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                append_capped(&mut resp.body, &avail[..n], BODY_CAP);
                self.pos += n;
                resp.bytes_received += n as u64;
                left -= n as u64;
                if left == 0 {
                    break;
                }
                self.fill().await?;
            },
            Framing::Chunked => {
                let mut dec = Chunked::default();
                loop {
                    let n = dec
                        .decode(&self.buf[self.pos..], &mut resp.body, BODY_CAP)
                        .map_err(protocol)?;
                    self.pos += n;
                    resp.bytes_received += n as u64;
                    if dec.is_done() {
                        break;
                    }
                    self.fill().await?;
                }
            }
            Framing::UntilClose => loop {
                let avail = &self.buf[self.pos..];
                append_capped(&mut resp.body, avail, BODY_CAP);
                resp.bytes_received += avail.len() as u64;
                self.pos = self.buf.len();
                match self.read_more().await {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) => return Err(read_failure(&e)),
                }
            },
        }
        // Bytes beyond the response were never asked for: the stream is out of step.
        if self.pos != self.buf.len() {
            keep_alive = false;
        }
        Ok(keep_alive)
    }

    /// Read more bytes for a response that is not complete; EOF is an error here.
    async fn fill(&mut self) -> Result<(), Failure> {
        match self.read_more().await {
            Ok(0) => Err(Failure {
                error: TransportError::Conn(crate::result::ConnErrorKind::Closed),
                unsent: false,
            }),
            Ok(_) => Ok(()),
            Err(e) => Err(read_failure(&e)),
        }
    }

    /// One read into the free space after the unconsumed bytes. Returns the bytes read.
    async fn read_more(&mut self) -> io::Result<usize> {
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        } else if self.pos > 0 && self.buf.capacity() - self.buf.len() < READ_CHUNK / 2 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.reserve(READ_CHUNK / 2);
        self.stream.read_buf(&mut self.buf).await
    }
}

fn protocol(msg: &'static str) -> Failure {
    Failure {
        error: TransportError::Protocol(msg),
        unsent: false,
    }
}

fn read_failure(e: &io::Error) -> Failure {
    Failure {
        error: io_error(e),
        unsent: false,
    }
}

/// Map a socket error to its transport class.
pub(crate) fn io_error(e: &io::Error) -> TransportError {
    use crate::result::ConnErrorKind;
    match e.kind() {
        io::ErrorKind::ConnectionRefused => TransportError::Conn(ConnErrorKind::Refused),
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe => TransportError::Conn(ConnErrorKind::Reset),
        io::ErrorKind::UnexpectedEof => TransportError::Conn(ConnErrorKind::Closed),
        kind => TransportError::Io(kind),
    }
}
