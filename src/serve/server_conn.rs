//! One connection of hubload's own servers: requests read, answered and written back, each
//! within its deadline; keep-alive and pipelining.
//!
//! The loop reads into its own buffer and the codec (`hubload-http1`) parses the head, so a
//! request allocates nothing here; a chunked body is decoded into a per-connection buffer.
//! Pipelined answers are written together. The idle and exchange deadlines close the
//! connection (docs/deadlines.md, "hubload's own servers").

use std::time::Duration;

use hubload_http1::answer::{Persist, CONTINUE};
use hubload_http1::chunked::Chunked;
use hubload_http1::request::{self, Framing, Head};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::deadlines::ServerDeadlines;
use super::timer::Timer;

/// The read size, and what a connection's buffers shrink back to once idle.
pub(crate) const READ_SIZE: usize = 16 * 1024;

/// What a server does with requests: the loop reads them, the handler answers.
pub(crate) trait Handler: Send + Sync + 'static {
    /// What a request asks, copied out of its head (the read buffer is reused while a chunked
    /// body is read).
    type Asked: Send;
    /// The largest body taken (larger ones are answered 413).
    const MAX_BODY: usize;
    /// What the request with head `head` (ranges into `buf`) asks; called as soon as the head is whole.
    fn asked(&self, head: &Head, buf: &[u8]) -> Self::Asked;
    /// Append the answer to `asked` with body `body` to `out` (`persist` says what its
    /// `connection` field must say); returns how long to hold it before it is sent.
    fn answer(
        &self,
        asked: Self::Asked,
        body: &[u8],
        out: &mut Vec<u8>,
        persist: Persist,
    ) -> Duration;
}

/// How a connection's request loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// The client closed, asked to close, or the server stopped.
    Done,
    /// A request was refused (4xx/5xx with `connection: close`) with input possibly unread.
    Refused,
    /// No request began within the idle deadline.
    Idle,
    /// A request's head or body was not read whole within the exchange deadline.
    ReadLate,
    /// An answer was not taken by the client within its exchange's deadline.
    WriteLate,
}

/// Why the loop stopped early: an I/O error, or a deadline.
enum Cut {
    Io(std::io::Error),
    Late(End),
}

impl From<std::io::Error> for Cut {
    fn from(e: std::io::Error) -> Cut {
        Cut::Io(e)
    }
}

/// Read more input into `buf` (the bytes read; 0 at end of input).
async fn fill<S: AsyncRead + Unpin>(io: &mut S, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    if buf.capacity() - buf.len() < READ_SIZE / 4 {
        buf.reserve(READ_SIZE);
    }
    io.read_buf(buf).await
}

/// The bytes read by `deadline`.
async fn read_by<S: AsyncRead + Unpin>(
    io: &mut S,
    buf: &mut Vec<u8>,
    timer: &mut Timer,
    deadline: Instant,
) -> Result<usize, Cut> {
    match timer.within(deadline, fill(io, buf)).await {
        Ok(n) => Ok(n?),
        Err(_) => Err(Cut::Late(End::ReadLate)),
    }
}

/// Write and clear the answers gathered in `out`, by `deadline`.
async fn flush_by<S: AsyncWrite + Unpin>(
    io: &mut S,
    out: &mut Vec<u8>,
    timer: &mut Timer,
    deadline: Instant,
) -> Result<(), Cut> {
    if out.is_empty() {
        return Ok(());
    }
    match timer.within(deadline, io.write_all(out)).await {
        Ok(r) => r?,
        Err(_) => return Err(Cut::Late(End::WriteLate)),
    }
    out.clear();
    Ok(())
}

/// Answer `status` and close.
async fn refuse<S: AsyncWrite + Unpin>(
    io: &mut S,
    out: &mut Vec<u8>,
    status: u16,
    timer: &mut Timer,
    deadline: Instant,
) -> Result<End, Cut> {
    hubload_http1::answer::write_answer(out, status, None, true, false);
    flush_by(io, out, timer, deadline).await?;
    Ok(End::Refused)
}

/// The request loop: a head, its body, the answer; keep-alive and pipelining; until the
/// client closes, a request says close, a request is refused, a deadline passes or the
/// server stops. `answered` counts the requests answered.
pub(crate) async fn serve<S: AsyncRead + AsyncWrite + Unpin, H: Handler>(
    io: &mut S,
    h: &H,
    limits: &ServerDeadlines,
    stop: &CancellationToken,
    answered: &mut u64,
) -> std::io::Result<End> {
    match requests(io, h, limits, stop, answered).await {
        Ok(end) | Err(Cut::Late(end)) => Ok(end),
        Err(Cut::Io(e)) => Err(e),
    }
}

async fn requests<S: AsyncRead + AsyncWrite + Unpin, H: Handler>(
    io: &mut S,
    h: &H,
    limits: &ServerDeadlines,
    stop: &CancellationToken,
    answered: &mut u64,
) -> Result<End, Cut> {
    let mut buf: Vec<u8> = Vec::with_capacity(READ_SIZE);
    let mut start = 0; // the first byte of `buf` not yet taken
    let mut out = Vec::with_capacity(256);
    // The deadline of the oldest answer gathered in `out`.
    let mut out_by = Instant::now();
    // A chunked body, decoded.
    let mut joined = Vec::new();
    let mut timer = Timer::new(Instant::now() + limits.idle);
    // One wait for the stop, registered once, not once per read.
    let mut stopped = std::pin::pin!(stop.cancelled());
    loop {
        // A request's exchange starts at its first byte: now if it is already here.
        let mut begun = start < buf.len();
        let mut by = Instant::now() + limits.exchange;
        let head = loop {
            match request::parse_head(&buf[start..]) {
                Ok(Some(head)) => break head,
                Ok(None) => {}
                Err(e) => return refuse(io, &mut out, e.status(), &mut timer, by).await,
            }
            // Nothing more to answer without reading: send what is gathered first.
            flush_by(io, &mut out, &mut timer, out_by).await?;
            if begun {
                buf.drain(..start);
            } else {
                buf.clear();
                if buf.capacity() > 4 * READ_SIZE {
                    buf.shrink_to(READ_SIZE);
                    joined = Vec::new();
                }
            }
            start = 0;
            let n = if begun {
                read_by(io, &mut buf, &mut timer, by).await?
            } else {
                let idle_by = Instant::now() + limits.idle;
                let n = tokio::select! {
                    biased;
                    n = timer.within(idle_by, fill(io, &mut buf)) => match n {
                        Ok(n) => n?,
                        Err(_) => return Ok(End::Idle),
                    },
                    _ = &mut stopped => return Ok(End::Done),
                };
                begun = true;
                by = Instant::now() + limits.exchange;
                n
            };
            if n == 0 {
                return Ok(End::Done); // closed, perhaps mid-head: nothing to answer
            }
        };
        let asked = h.asked(&head, &buf[start..]);
        let body_at = start + head.len;
        let (body, next) = match head.framing {
            Framing::Length(n) => {
                if n > H::MAX_BODY as u64 {
                    return refuse(io, &mut out, 413, &mut timer, by).await;
                }
                let end = body_at + n as usize;
                buf.reserve(end.saturating_sub(buf.len()));
                if buf.len() < end && head.expect_continue {
                    out.extend_from_slice(CONTINUE);
                    flush_by(io, &mut out, &mut timer, by).await?;
                }
                while buf.len() < end {
                    if read_by(io, &mut buf, &mut timer, by).await? == 0 {
                        return Ok(End::Done);
                    }
                }
                (body_at..end, None)
            }
            Framing::Chunked => {
                joined.clear();
                let mut dec = Chunked::default();
                let mut at = body_at;
                let mut continued = false;
                loop {
                    let Ok(used) = dec.decode(&buf[at..], &mut joined, H::MAX_BODY + 1) else {
                        return refuse(io, &mut out, 400, &mut timer, by).await;
                    };
                    at += used;
                    if joined.len() > H::MAX_BODY {
                        return refuse(io, &mut out, 413, &mut timer, by).await;
                    }
                    if dec.is_done() {
                        break;
                    }
                    // All read input is decoded: reuse the buffer for the rest.
                    buf.clear();
                    at = 0;
                    if head.expect_continue && !continued {
                        continued = true;
                        out.extend_from_slice(CONTINUE);
                        flush_by(io, &mut out, &mut timer, by).await?;
                    }
                    if read_by(io, &mut buf, &mut timer, by).await? == 0 {
                        return Ok(End::Done);
                    }
                }
                (0..0, Some(at))
            }
        };
        let body_bytes = match next {
            None => &buf[body.clone()],
            Some(_) => &joined[..],
        };
        let close = !head.keep_alive || stop.is_cancelled();
        if out.is_empty() {
            out_by = by;
        }
        let hold = h.answer(
            asked,
            body_bytes,
            &mut out,
            Persist::of(head.keep_alive, head.http10, close),
        );
        *answered += 1;
        start = next.unwrap_or(body.end);
        if !hold.is_zero() {
            // The server's own wait (a slow subscriber's behaviour), not the client's: the
            // answer's deadline moves with it.
            tokio::time::sleep(hold).await;
            out_by += hold;
        }
        if close {
            flush_by(io, &mut out, &mut timer, out_by).await?;
            return Ok(End::Done);
        }
    }
}
