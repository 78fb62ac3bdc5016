//! The callback server: answers intent verification (GET) and takes deliveries (POST) for every subscriber.
//!
//! The delivery path is lean: no allocation beyond what axum does to read the body, the
//! expensive checks (HMAC, body regeneration) outside the subscriber's lock, one short lock.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::receive::{self, check};
use super::shared::{Intent, Shared};

/// `GET|POST /cb/{topic}/{index}`.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/cb/{topic}/{index}", get(verify).post(deliver))
        .with_state(shared)
}

/// Intent verification (WebSub §5.3): echo `hub.challenge` exactly when the hub asks about
/// what this subscriber requested; record a denial.
async fn verify(
    State(sh): State<Arc<Shared>>,
    Path((topic, index)): Path<(usize, usize)>,
    RawQuery(query): RawQuery,
) -> Response {
    let Some(sub) = sh.sub(topic, index) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let (mut mode, mut hub_topic, mut challenge) = (None, None, None);
    for (k, v) in url::form_urlencoded::parse(query.as_deref().unwrap_or("").as_bytes()) {
        match &*k {
            "hub.mode" => mode = Some(v),
            "hub.topic" => hub_topic = Some(v),
            "hub.challenge" => challenge = Some(v),
            _ => {}
        }
    }
    if hub_topic.as_deref() != Some(sub.hub_topic.as_str()) {
        return StatusCode::NOT_FOUND.into_response();
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
            return StatusCode::OK.into_response();
        }
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    let Some(challenge) = challenge else {
        return StatusCode::NOT_FOUND.into_response();
    };
    sub.set_intent(next);
    sh.intents.notify_waiters();
    (
        StatusCode::OK,
        [("content-type", "text/plain")],
        challenge.into_owned(),
    )
        .into_response()
}

/// A delivery (WebSub §7): match it to its event, count it, answer as the behaviour says.
async fn deliver(
    State(sh): State<Arc<Shared>>,
    Path((topic, index)): Path<(usize, usize)>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let received_ns = receive::now_ns(&sh.tracker);
    let Some(sub) = sh.sub(topic, index) else {
        return StatusCode::NOT_FOUND;
    };
    let signature = headers.get("x-hub-signature").map(|v| v.as_bytes());
    let base = sh.base.load(Relaxed);
    let secret = sh.secret.expose().as_bytes();
    let c = check(
        &sh.workload,
        &sh.tracker,
        topic,
        base,
        Some(secret),
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
    StatusCode::from_u16(answer.status()).unwrap_or(StatusCode::OK)
}
