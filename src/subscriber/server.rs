//! The callback server: answers intent verification (GET) and takes deliveries (POST) for every subscriber.
//!
//! The delivery path is lean: hyper's HTTP/1.1 connections with one service function and no
//! router (the path `/cb/<topic>/<index>` is split by hand), the HMAC key absorbed once for
//! the run, the expensive checks (HMAC, body regeneration) outside the subscriber's lock,
//! one short lock. Bodies are read whole, up to [`MAX_BODY`]: a body that arrived in one
//! frame (a Content-Length body read with its head, the common case) is checked where
//! hyper read it, without a copy; the expected body is regenerated into a per-thread buffer
//! (`receive.rs`), so a delivery allocates nothing in this module.

use std::convert::Infallible;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Incoming};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::receive::{self, check};
use super::shared::{Intent, Shared, Subscriber};

/// The largest delivery body taken (larger ones are answered 413).
pub const MAX_BODY: usize = 2 << 20;

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
                        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
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

/// One client connection (keep-alive, pipelining as hyper allows).
async fn connection(stream: tokio::net::TcpStream, sh: Arc<Shared>, stop: CancellationToken) {
    let service = hyper::service::service_fn(move |req| {
        let sh = sh.clone();
        async move { Ok::<_, Infallible>(handle(&sh, req).await) }
    });
    let conn =
        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
    let mut conn = std::pin::pin!(conn);
    tokio::select! {
        // Polled in order: no random pick on every wake-up of a busy connection.
        biased;
        _ = conn.as_mut() => return,
        _ = stop.cancelled() => {}
    }
    conn.as_mut().graceful_shutdown();
    let _ = conn.await;
}

fn status(code: StatusCode) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::new()));
    *r.status_mut() = code;
    r
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

async fn handle(sh: &Shared, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let Some((topic, index)) = route(req.uri().path()) else {
        return status(StatusCode::NOT_FOUND);
    };
    match *req.method() {
        Method::POST => deliver(sh, topic, index, req).await,
        Method::GET => {
            let Some(sub) = sh.sub(topic, index) else {
                return status(StatusCode::NOT_FOUND);
            };
            verify(sh, sub, req.uri().query().unwrap_or(""))
        }
        _ => status(StatusCode::METHOD_NOT_ALLOWED),
    }
}

/// Intent verification (WebSub §5.3): echo `hub.challenge` exactly when the hub asks about
/// what this subscriber requested; record a denial.
fn verify(sh: &Shared, sub: &Subscriber, query: &str) -> Response<Full<Bytes>> {
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
        return status(StatusCode::NOT_FOUND);
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
            return status(StatusCode::OK);
        }
        _ => return status(StatusCode::NOT_FOUND),
    };
    let Some(challenge) = challenge else {
        return status(StatusCode::NOT_FOUND);
    };
    sub.set_intent(next);
    sh.intents.notify_waiters();
    let mut r = Response::new(Full::new(Bytes::from(challenge.into_owned())));
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    r
}

/// A delivery (WebSub §7): match it to its event, count it, answer as the behaviour says.
async fn deliver(
    sh: &Shared,
    topic: usize,
    index: usize,
    req: Request<Incoming>,
) -> Response<Full<Bytes>> {
    let received_ns = receive::now_ns(&sh.tracker);
    let Some(sub) = sh.sub(topic, index) else {
        return status(StatusCode::NOT_FOUND);
    };
    let (parts, body) = req.into_parts();
    let body = match read_body(body).await {
        Ok(b) => b,
        Err(code) => return status(code),
    };
    let signature = parts.headers.get("x-hub-signature").map(|v| v.as_bytes());
    let base = sh.base.load(Relaxed);
    let c = check(
        &sh.workload,
        &sh.tracker,
        topic,
        base,
        Some(&sh.key),
        signature,
        &body,
    );
    let sent = match c {
        receive::Check::Event { seq, .. } => sh.tracker.sent(seq),
        _ => None,
    };
    let id = (topic as u64) << 20 | index as u64;
    let answer = sub.state().receive(id, &sh.behaviour, c, sent, received_ns);
    if sh.closing.load(Relaxed) {
        sh.delivered.notify_one();
    }
    if !sh.behaviour.latency.is_zero() {
        tokio::time::sleep(sh.behaviour.latency).await;
    }
    status(StatusCode::from_u16(answer.status()).unwrap_or(StatusCode::OK))
}

/// A body, whole: its one frame as hyper read it, or (split into several frames, as chunked
/// bodies and bodies larger than a read can be) the frames joined. `Err`: the status to
/// answer, 413 past [`MAX_BODY`] (a Content-Length above it is refused before reading),
/// 400 for a body that broke off.
async fn read_body(mut body: Incoming) -> Result<Bytes, StatusCode> {
    let too_large = Err(StatusCode::PAYLOAD_TOO_LARGE);
    if body.size_hint().lower() > MAX_BODY as u64 {
        return too_large;
    }
    let mut first = Bytes::new();
    let mut joined = Vec::new();
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map_err(|_| StatusCode::BAD_REQUEST)?.into_data() else {
            continue; // trailers: nothing to check
        };
        let have = if joined.is_empty() {
            first.len()
        } else {
            joined.len()
        };
        if have + data.len() > MAX_BODY {
            return too_large;
        }
        if data.is_empty() {
            continue;
        }
        if first.is_empty() {
            first = data;
            continue;
        }
        if joined.is_empty() {
            joined.reserve(first.len() + data.len());
            joined.extend_from_slice(&first);
        }
        joined.extend_from_slice(&data);
    }
    Ok(if joined.is_empty() {
        first
    } else {
        joined.into()
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use hmac::{Hmac, Mac};
    use sha2::Sha256;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::{route, MAX_BODY};
    use crate::config::Secret;
    use crate::subscriber::{Behaviour, DeliveryTracker, Fleet, FleetConfig};
    use crate::workload::{Distribution, TopicLayout, Workload, WorkloadConfig};

    /// One request (`head` without its blank line, then `body`) on its own connection; the status.
    async fn send(addr: std::net::SocketAddr, head: &str, body: &[u8]) -> u16 {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(format!("{head}\r\nConnection: close\r\n\r\n").as_bytes())
            .await
            .unwrap();
        // The server may answer (413) and close before taking all of it.
        let _ = s.write_all(body).await;
        let mut answer = Vec::new();
        let _ = s.read_to_end(&mut answer).await;
        std::str::from_utf8(&answer[9..12])
            .unwrap()
            .parse()
            .unwrap()
    }

    fn chunked(pieces: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for p in pieces {
            out.extend_from_slice(format!("{:x}\r\n", p.len()).as_bytes());
            out.extend_from_slice(p);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n\r\n");
        out
    }

    #[tokio::test]
    async fn bodies_in_several_frames_are_joined_and_oversized_ones_refused() {
        let w = Arc::new(Workload::new(WorkloadConfig {
            tenants: 1,
            sps: 1,
            users: 1,
            channels: vec!["login".into()],
            layout: TopicLayout::PerTenantChannel,
            payload_bytes: None,
            seed: 3,
            distribution: Distribution::Uniform,
        }));
        let fleet = Fleet::start(
            FleetConfig {
                listen: "127.0.0.1:0".parse().unwrap(),
                callback_url: None,
                per_topic: 1,
                topics: vec![(0, "t".into())],
                secret: Some(Secret::new("k")),
                lease_seconds: 60,
                behaviour: Behaviour::default(),
            },
            w.clone(),
            Arc::new(DeliveryTracker::new(64)),
        )
        .await
        .unwrap();
        fleet.open_level(0);
        let addr = fleet.local_addr();
        let body = |seq| {
            fleet.tracker().note_published(seq, 0, Instant::now());
            w.event_at(seq, 1_000_000).body
        };
        let sig = |b: &[u8]| {
            let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(b"k").unwrap();
            mac.update(b);
            format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
        };
        let chunked_head = |sig: &str| {
            format!("POST /cb/0/0 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nX-Hub-Signature: {sig}")
        };
        // Event 0 in three chunks: joined, it is the event.
        let b0 = body(0);
        let (a, rest) = b0.split_at(7);
        let (b, c) = rest.split_at(200);
        assert_eq!(
            send(addr, &chunked_head(&sig(&b0)), &chunked(&[a, b, c])).await,
            200
        );
        // Event 1 in two chunks with one byte changed (signed as sent): a body mismatch.
        let mut b1 = body(1);
        let n = b1.len() - 2;
        b1[n] ^= 1;
        let (a, b) = b1.split_at(300);
        assert_eq!(
            send(addr, &chunked_head(&sig(&b1)), &chunked(&[a, b])).await,
            200
        );
        // Past MAX_BODY: refused by its Content-Length, or once the chunks add up to more.
        let head = format!(
            "POST /cb/0/0 HTTP/1.1\r\nHost: x\r\nContent-Length: {}",
            MAX_BODY + 1
        );
        assert_eq!(send(addr, &head, &[]).await, 413);
        let half = vec![b' '; MAX_BODY / 2 + 1];
        assert_eq!(
            send(addr, &chunked_head("x"), &chunked(&[&half, &half])).await,
            413
        );
        // Exactly MAX_BODY is taken (and, not signed, counted as a bad signature).
        let head = format!("POST /cb/0/0 HTTP/1.1\r\nHost: x\r\nContent-Length: {MAX_BODY}");
        assert_eq!(send(addr, &head, &vec![b' '; MAX_BODY]).await, 200);
        let c = fleet.close_level(Duration::ZERO).await.counts;
        assert_eq!(
            (c.received, c.delivered, c.body_mismatch, c.bad_signature),
            (3, 1, 1, 1)
        );
    }

    #[test]
    fn only_callback_paths_route() {
        assert_eq!(route("/cb/3/0"), Some((3, 0)));
        assert_eq!(route("/cb/12/345"), Some((12, 345)));
        for bad in [
            "/cb/3",
            "/cb/3/",
            "/cb//0",
            "/cb/+3/0",
            "/cb/3/0/x",
            "/x/3/0",
            "/cb/a/0",
        ] {
            assert_eq!(route(bad), None, "{bad}");
        }
    }
}
