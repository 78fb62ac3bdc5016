//! The callback server: answers intent verification (GET) and takes deliveries (POST) for every subscriber.
//!
//! The delivery path is lean: each connection is one task reading requests straight from its
//! own buffer (`http1.rs` parses the head; no HTTP framework, no header map, no body
//! channel), so a delivery allocates nothing here. A Content-Length body is checked where it
//! was read; a chunked one is decoded into a per-connection buffer. The path
//! `/cb/<topic>/<index>` is split by hand, the HMAC key is absorbed once for the run, the
//! expected body is regenerated into a per-thread buffer (`receive.rs`), and the
//! subscriber's lock is taken once, after the expensive checks. Answers to pipelined
//! requests are written together, once no further request is waiting in the buffer.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use super::receive::{self, check};
use super::shared::{Intent, Shared, Subscriber};
use hubload_http1::answer as http1;
use hubload_http1::chunked::Chunked;
use hubload_http1::request::{self, Framing, Method};

/// The largest delivery body taken (larger ones are answered 413).
pub const MAX_BODY: usize = 2 << 20;
/// The read size, and what a connection's buffers shrink back to once idle.
const READ_SIZE: usize = 16 * 1024;
/// The longest `X-Hub-Signature` kept: a valid one (`sha256=` and 64 hex digits) is 71 bytes;
/// a longer value, cut here, still fails the check.
const SIGNATURE_MAX: usize = 96;

/// Serve every callback on `listener` until the returned token is cancelled; connections
/// then finish the request in hand and close.
pub(crate) fn spawn(listener: TcpListener, shared: Arc<Shared>) -> CancellationToken {
    let stop = CancellationToken::new();
    let s = stop.clone();
    tokio::spawn(async move {
        loop {
            let stream = tokio::select! {
                _ = s.cancelled() => return,
                a = listener.accept() => match a {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        // Out of descriptors and the like: keep serving the open connections.
                        tracing::warn!(error = %e, "callback server: accept failed");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                },
            };
            let _ = stream.set_nodelay(true);
            tokio::spawn(connection(stream, shared.clone(), s.clone()));
        }
    });
    stop
}

/// How a connection's request loop ended.
#[derive(Debug, PartialEq, Eq)]
enum End {
    /// The client closed, asked to close, or the server stopped.
    Done,
    /// A request was refused (4xx/5xx with `connection: close`) with input possibly unread.
    Refused,
}

/// One client connection.
async fn connection(mut stream: TcpStream, sh: Arc<Shared>, stop: CancellationToken) {
    if let Ok(End::Refused) = serve(&mut stream, &sh, &stop).await {
        // Closing with unread input would reset the connection and could destroy the answer
        // before the client reads it: send FIN, then drain for a while (nginx's lingering close).
        let _ = stream.shutdown().await;
        let drain = async {
            let mut sink = vec![0; READ_SIZE];
            while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
        };
        let _ = tokio::time::timeout(Duration::from_secs(2), drain).await;
    }
}

/// Read more input into `buf` (the bytes read; 0 at end of input).
async fn fill<S: AsyncRead + Unpin>(io: &mut S, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    if buf.capacity() - buf.len() < READ_SIZE / 4 {
        buf.reserve(READ_SIZE);
    }
    io.read_buf(buf).await
}

/// Write and clear the answers gathered in `out`.
async fn flush<S: AsyncWrite + Unpin>(io: &mut S, out: &mut Vec<u8>) -> std::io::Result<()> {
    if !out.is_empty() {
        io.write_all(out).await?;
        out.clear();
    }
    Ok(())
}

/// Answer `status` and close.
async fn refuse<S: AsyncWrite + Unpin>(
    io: &mut S,
    out: &mut Vec<u8>,
    status: u16,
) -> std::io::Result<End> {
    http1::write_answer(out, status, None, true, false);
    flush(io, out).await?;
    Ok(End::Refused)
}

/// What a request asks, copied out of the read buffer so the buffer can be reused while its
/// body is read.
struct Asked {
    method: Method,
    /// (topic, index) of a callback path.
    route: Option<(usize, usize)>,
    /// The query of a GET (verification).
    query: String,
    signature: Option<([u8; SIGNATURE_MAX], usize)>,
}

impl Asked {
    fn new(head: &request::Head, buf: &[u8]) -> Asked {
        let target = &buf[head.target.clone()];
        let (path, query) = match target.iter().position(|b| *b == b'?') {
            Some(q) => (&target[..q], &target[q + 1..]),
            None => (target, &[][..]),
        };
        let signature = head.signature.clone().map(|r| {
            let v = &buf[r];
            let n = v.len().min(SIGNATURE_MAX);
            let mut s = [0; SIGNATURE_MAX];
            s[..n].copy_from_slice(&v[..n]);
            (s, n)
        });
        Asked {
            method: head.method,
            route: std::str::from_utf8(path).ok().and_then(route),
            query: if head.method == Method::Get {
                String::from_utf8_lossy(query).into_owned()
            } else {
                String::new()
            },
            signature,
        }
    }

    fn signature(&self) -> Option<&[u8]> {
        self.signature.as_ref().map(|(s, n)| &s[..*n])
    }
}

/// The request loop: a head, its body, the answer; keep-alive and pipelining; until the
/// client closes, a request says close, a request is refused or the server stops.
async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    io: &mut S,
    sh: &Shared,
    stop: &CancellationToken,
) -> std::io::Result<End> {
    let mut buf: Vec<u8> = Vec::with_capacity(READ_SIZE);
    let mut start = 0; // the first byte of `buf` not yet taken
    let mut out = Vec::with_capacity(256);
    // A chunked body, decoded.
    let mut joined = Vec::new();
    // One wait for the stop, registered once, not once per read.
    let mut stopped = std::pin::pin!(stop.cancelled());
    loop {
        let head = loop {
            match request::parse_head(&buf[start..]) {
                Ok(Some(h)) => break h,
                Ok(None) => {}
                Err(e) => return refuse(io, &mut out, e.status()).await,
            }
            // Nothing more to answer without reading: send what is gathered first.
            flush(io, &mut out).await?;
            let idle = start == buf.len();
            if idle {
                buf.clear();
                if buf.capacity() > 4 * READ_SIZE {
                    buf.shrink_to(READ_SIZE);
                    joined = Vec::new();
                }
            } else {
                buf.drain(..start);
            }
            start = 0;
            let n = if idle {
                tokio::select! {
                    biased;
                    n = fill(io, &mut buf) => n?,
                    _ = &mut stopped => return Ok(End::Done),
                }
            } else {
                fill(io, &mut buf).await?
            };
            if n == 0 {
                return Ok(End::Done); // closed, perhaps mid-head: nothing to answer
            }
        };
        let received_ns = receive::now_ns(&sh.tracker);
        let asked = Asked::new(&head, &buf[start..]);
        let body_at = start + head.len;
        let (body, next) = match head.framing {
            Framing::Length(n) => {
                if n > MAX_BODY as u64 {
                    return refuse(io, &mut out, 413).await;
                }
                let end = body_at + n as usize;
                buf.reserve(end.saturating_sub(buf.len()));
                if buf.len() < end && head.expect_continue {
                    out.extend_from_slice(http1::CONTINUE);
                    flush(io, &mut out).await?;
                }
                while buf.len() < end {
                    if fill(io, &mut buf).await? == 0 {
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
                    let Ok(used) = dec.decode(&buf[at..], &mut joined, MAX_BODY + 1) else {
                        return refuse(io, &mut out, 400).await;
                    };
                    at += used;
                    if joined.len() > MAX_BODY {
                        return refuse(io, &mut out, 413).await;
                    }
                    if dec.is_done() {
                        break;
                    }
                    // All read input is decoded: reuse the buffer for the rest.
                    buf.clear();
                    at = 0;
                    if head.expect_continue && !continued {
                        continued = true;
                        out.extend_from_slice(http1::CONTINUE);
                        flush(io, &mut out).await?;
                    }
                    if fill(io, &mut buf).await? == 0 {
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
        let (status, text) = answer(sh, &asked, body_bytes, received_ns);
        start = next.unwrap_or(body.end);
        if asked.method == Method::Post && !sh.behaviour.latency.is_zero() {
            tokio::time::sleep(sh.behaviour.latency).await;
        }
        let close = !head.keep_alive || stop.is_cancelled();
        let http10_keep = head.http10 && !close;
        http1::write_answer(&mut out, status, text.as_deref(), close, http10_keep);
        if close {
            flush(io, &mut out).await?;
            return Ok(End::Done);
        }
    }
}

/// `/cb/<topic>/<index>` → (topic, index).
fn route(path: &str) -> Option<(usize, usize)> {
    let (topic, index) = path.strip_prefix("/cb/")?.split_once('/')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(topic) || !digits(index) {
        return None;
    }
    Some((topic.parse().ok()?, index.parse().ok()?))
}

/// The answer to one request: status, and a `text/plain` body (a verification's challenge).
fn answer(sh: &Shared, asked: &Asked, body: &[u8], received_ns: u64) -> (u16, Option<String>) {
    let Some((topic, index)) = asked.route else {
        return (404, None);
    };
    if asked.method == Method::Other {
        return (405, None);
    }
    let Some(sub) = sh.sub(topic, index) else {
        return (404, None);
    };
    if asked.method == Method::Get {
        return verify(sh, sub, &asked.query);
    }
    (deliver(sh, sub, asked.signature(), body, received_ns), None)
}

/// Intent verification (WebSub §5.3): echo `hub.challenge` exactly when the hub asks about
/// what this subscriber requested; record a denial.
fn verify(sh: &Shared, sub: &Subscriber, query: &str) -> (u16, Option<String>) {
    let (mut mode, mut hub_topic, mut challenge) = (None, None, None);
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        match &*k {
            "hub.mode" => mode = Some(v),
            "hub.topic" => hub_topic = Some(v),
            "hub.challenge" => challenge = Some(v),
            _ => {}
        }
    }
    if hub_topic.as_deref() != Some(sub.hub_topic.as_str()) {
        return (404, None);
    }
    let intent = sub.intent();
    let next = match mode.as_deref() {
        Some("subscribe") if matches!(intent, Intent::Subscribing | Intent::Verified) => {
            Intent::Verified
        }
        Some("unsubscribe") if matches!(intent, Intent::Unsubscribing | Intent::Unsubscribed) => {
            Intent::Unsubscribed
        }
        Some("denied") if matches!(intent, Intent::Subscribing | Intent::Verified) => {
            sub.set_intent(Intent::Denied);
            sh.intents.notify_waiters();
            return (200, None);
        }
        _ => return (404, None),
    };
    let Some(challenge) = challenge else {
        return (404, None);
    };
    // Deliveries from now until a subscribe is verified come after an unsubscribe (churn).
    sub.state().after_unsub = next == Intent::Unsubscribed;
    sub.set_intent(next);
    sh.intents.notify_waiters();
    (200, Some(challenge.into_owned()))
}

/// A delivery (WebSub §7): match it to its event, count it; the status the behaviour says.
fn deliver(
    sh: &Shared,
    sub: &Subscriber,
    signature: Option<&[u8]>,
    body: &[u8],
    received_ns: u64,
) -> u16 {
    let base = sh.base.load(Relaxed);
    let c = check(
        &sh.workload,
        &sh.tracker,
        sub.topic,
        base,
        Some(&sh.key),
        signature,
        body,
    );
    let sent = match c {
        receive::Check::Event { seq, .. } => sh.tracker.sent(seq),
        _ => None,
    };
    let id = (sub.topic as u64) << 20 | sub.index as u64;
    let seq = match c {
        receive::Check::Event { seq, .. } => Some(seq),
        _ => None,
    };
    let mut st = sub.state();
    let delivered = st.counts.delivered;
    let answer = st.receive(id, &sh.behaviour, c, sent, received_ns);
    if st.counts.delivered > delivered && seq.is_some_and(|s| st.closes_gap(s)) {
        // Owed again from here: what was published before this delivery stays in the gap.
        let now = sh.tracker.published_snapshot();
        st.close_gap(&now);
    }
    // Subscription churn: a delivery after a verified unsubscribe, or the first one
    // acknowledged since a re-verification.
    let after_unsub = st.after_unsub;
    let first = match st.counts.delivered > delivered {
        true => st.first_from_ns.take(),
        false => None,
    };
    drop(st);
    if after_unsub || first.is_some() {
        let mut churn = sh.churn_stats();
        churn.after_unsubscribe += u64::from(after_unsub);
        if let Some(from) = first {
            crate::stats::record(
                &mut churn.time_to_first_delivery,
                received_ns.saturating_sub(from) / 1000,
            );
        }
    }
    if sh.closing.load(Relaxed) {
        sh.delivered.notify_one();
    }
    answer.status()
}

#[cfg(test)]
mod tests;
