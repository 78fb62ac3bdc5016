//! The callback server: answers intent verification (GET) and takes deliveries (POST) for every subscriber.
//!
//! The delivery path is lean: hyper's HTTP/1.1 connections with one service function and no
//! router (the path `/cb/<topic>/<index>` is split by hand), the HMAC key absorbed once for
//! the run, the expensive checks (HMAC, body regeneration) outside the subscriber's lock,
//! one short lock. Bodies are read whole, up to [`MAX_BODY`].

use std::convert::Infallible;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
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
    let body = match Limited::new(body, MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return status(StatusCode::PAYLOAD_TOO_LARGE)
        }
        Err(_) => return status(StatusCode::BAD_REQUEST),
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

#[cfg(test)]
mod tests {
    use super::route;

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
