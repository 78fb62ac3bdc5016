//! Subscription requests (WebSub §5.1) and their asynchronous intent verification (§5.3).
//!
//! A valid request is answered 202 at once; a task then sends the callback a GET with a
//! one-time challenge, and only an exact echo (2xx, body == challenge) makes the
//! subscription active (or removes it, for `unsubscribe`).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use axum::http::StatusCode;
use axum::response::Response;

use crate::delivery_settings::link_header;
use crate::params::{self, HubParams};
use crate::state::Inner;
use crate::stats::Verdict;

/// Secrets of this many bytes or more are refused (WebSub §5.1).
const MAX_SECRET: usize = 200;

/// A checked subscription request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SubRequest {
    pub subscribe: bool,
    pub topic: String,
    pub callback: String,
    pub lease: Duration,
    pub secret: Option<Arc<[u8]>>,
}

/// Check a subscribe/unsubscribe request; `Err` is the 400 reason.
pub(crate) fn check(inner: &Inner, p: &HubParams<'_>) -> Result<SubRequest, String> {
    let cfg = &inner.cfg;
    let subscribe = p.mode.as_deref() == Some("subscribe");
    let topic = p.topic.as_deref().filter(|t| !t.is_empty());
    let topic = topic.ok_or("hub.topic is required")?;
    if topic.len() > cfg.max_topic_len {
        return Err(format!(
            "hub.topic is longer than {} bytes",
            cfg.max_topic_len
        ));
    }
    let callback = p.callback.as_deref().filter(|c| !c.is_empty());
    let callback = callback.ok_or("hub.callback is required")?;
    if callback.len() > cfg.max_callback_len {
        return Err(format!(
            "hub.callback is longer than {} bytes",
            cfg.max_callback_len
        ));
    }
    match url::Url::parse(callback) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
        _ => return Err("hub.callback must be an http or https URL".into()),
    }
    let secret = match p.secret.as_deref() {
        Some(s) if s.len() >= MAX_SECRET => {
            return Err(format!(
                "hub.secret must be shorter than {MAX_SECRET} bytes"
            ))
        }
        Some("") | None => None,
        Some(s) => Some(Arc::from(s.as_bytes())),
    };
    let lease = match p.lease_seconds.as_deref() {
        None | Some("") => cfg.lease_default,
        Some(s) => match s.parse::<u64>() {
            Ok(n) if n > 0 => Duration::from_secs(n),
            _ => return Err("hub.lease_seconds must be a positive integer".into()),
        },
    }
    .min(cfg.lease_max);
    Ok(SubRequest {
        subscribe,
        topic: topic.to_owned(),
        callback: callback.to_owned(),
        lease,
        secret,
    })
}

/// Handle a subscribe/unsubscribe request: answer it, and start the verification if valid.
pub(crate) fn handle(inner: &Arc<Inner>, p: &HubParams<'_>) -> (Verdict, Response) {
    let req = match check(inner, p) {
        Ok(r) => r,
        Err(reason) => {
            return (
                Verdict::BadRequest,
                params::plain(StatusCode::BAD_REQUEST, reason),
            )
        }
    };
    let registered = inner
        .topic(&req.topic)
        .is_some_and(|t| t.registered.load(std::sync::atomic::Ordering::Relaxed));
    if req.subscribe && !registered {
        let reason = params::not_registered(&req.topic);
        return (
            Verdict::Denied,
            params::denied(StatusCode::NOT_FOUND, &reason),
        );
    }
    tokio::spawn(verify(inner.clone(), req));
    (Verdict::Accepted, params::accepted_for_verification())
}

/// A fresh 128-bit challenge, hex.
fn challenge() -> String {
    hex::encode(rand::random::<[u8; 16]>())
}

/// The verification URL: the callback with the hub's parameters appended to its query.
pub(crate) fn verification_url(req: &SubRequest, challenge: &str) -> String {
    let mut q = url::form_urlencoded::Serializer::new(String::new());
    q.append_pair(
        "hub.mode",
        if req.subscribe {
            "subscribe"
        } else {
            "unsubscribe"
        },
    )
    .append_pair("hub.topic", &req.topic)
    .append_pair("hub.challenge", challenge);
    if req.subscribe {
        q.append_pair("hub.lease_seconds", &req.lease.as_secs().to_string());
    }
    let sep = if req.callback.contains('?') { '&' } else { '?' };
    format!("{}{sep}{}", req.callback, q.finish())
}

async fn verify(inner: Arc<Inner>, req: SubRequest) {
    // Broker mode: the subscription exists at the broker before the subscriber hears from
    // the hub, so nothing published after its verification is missed.
    let attached = match (inner.broker.get(), req.subscribe) {
        (Some(b), true) => {
            let by = Instant::now() + inner.cfg.verify_timeout;
            match open_receiver(b, &req, by).await {
                Some(rx) => Some(rx),
                None => {
                    give_up(&inner, b, &req).await;
                    return;
                }
            }
        }
        _ => None,
    };
    let challenge = challenge();
    let url = verification_url(&req, &challenge);
    let retries = inner.broker.get().map(|b| &b.counters.verify_retries);
    let echoed = ask(&inner, &url, &challenge, retries).await;
    let topic = inner.topic(&req.topic);
    if let (Some(broker), Some(topic), true) = (inner.broker.get(), &topic, echoed) {
        broker_verified(&inner, broker, topic, &req, attached);
        return;
    }
    if let Some(rx) = attached {
        rx.close().await;
        if let Some(b) = inner.broker.get() {
            b.subscribe_failed(&req.topic, &req.callback);
        }
    }
    if !echoed {
        tracing::debug!(callback = %req.callback, topic = %req.topic, "intent not verified");
        return;
    }
    let Some(topic) = topic else {
        return;
    };
    if req.subscribe {
        if !topic.registered.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        let expires = inner.now_ms() + req.lease.as_millis() as u64;
        inner.subscribe(&topic, &req.callback, req.secret, expires);
        tracing::debug!(callback = %req.callback, topic = %req.topic, "subscribed");
    } else {
        topic.unsubscribe_where(|s| s.callback == req.callback);
        tracing::debug!(callback = %req.callback, topic = %req.topic, "unsubscribed");
    }
}

/// Pause between tries of a broker-mode subscribe's receiver attach or verification GET.
const RETRY_PAUSE: Duration = Duration::from_millis(200);
/// Longest one try of a receiver attach may take, so an attach that hangs is tried again
/// within the verification window.
const OPEN_TRY: Duration = Duration::from_secs(4);

/// Attach the receiver of a subscribe in broker mode, trying again after each failure
/// (counted in `receiver_open_failures`) until `by`; `None` when no try succeeded by then.
async fn open_receiver(
    b: &crate::broker::Broker,
    req: &SubRequest,
    by: Instant,
) -> Option<hubload_servicebus::SbReceiver> {
    loop {
        let try_by = by.min(Instant::now() + OPEN_TRY);
        let attach = b.open_receiver(&req.topic, &req.callback);
        let why = match tokio::time::timeout_at(try_by, attach).await {
            Ok(Ok(rx)) => return Some(rx),
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no receiver attached within {} s", OPEN_TRY.as_secs()),
        };
        b.counters.receiver_open_failures.fetch_add(1, Relaxed);
        tracing::warn!(topic = %req.topic, "broker subscription not attached (tried again until the window ends): {why}");
        if Instant::now() + RETRY_PAUSE >= by {
            return None;
        }
        tokio::time::sleep(RETRY_PAUSE).await;
    }
}

/// A subscribe in broker mode whose receiver could not be attached: counted, the
/// subscription made for it removed, and the subscriber told (`hub.mode=denied`, WebSub
/// §5.2), so it is neither left half-made nor waiting for a verification that never comes.
async fn give_up(inner: &Inner, b: &crate::broker::Broker, req: &SubRequest) {
    b.counters.subscribes_failed.fetch_add(1, Relaxed);
    b.subscribe_failed(&req.topic, &req.callback);
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("hub.mode", "denied")
        .append_pair("hub.topic", &req.topic)
        .append_pair(
            "hub.reason",
            "the hub could not attach to its broker subscription",
        )
        .finish();
    let sep = if req.callback.contains('?') { '&' } else { '?' };
    let url = format!("{}{sep}{query}", req.callback);
    let sent = inner
        .client
        .get(&url)
        .timeout(inner.cfg.verify_timeout)
        .send()
        .await;
    if sent.is_err() {
        tracing::debug!(topic = %req.topic, "the denial did not reach the callback");
    }
}

/// The verification GET: true when the callback echoed `challenge` with a 2xx. With
/// `retries` (broker mode), a GET that got no answer is tried again, counted there, within
/// the verification timeout; an answer, whatever it says, is final.
async fn ask(inner: &Inner, url: &str, challenge: &str, retries: Option<&AtomicU64>) -> bool {
    let by = Instant::now() + inner.cfg.verify_timeout;
    loop {
        let left = by.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        match inner.client.get(url).timeout(left).send().await {
            Ok(r) if r.status().is_success() => {
                return r.bytes().await.is_ok_and(|b| b == challenge)
            }
            Ok(_) => return false,
            Err(e) => {
                let Some(n) = retries else { return false };
                if Instant::now() + RETRY_PAUSE >= by {
                    return false;
                }
                n.fetch_add(1, Relaxed);
                // The error names the callback URL, which may carry credentials: not logged.
                let why = if e.is_timeout() {
                    "timeout"
                } else if e.is_connect() {
                    "connect"
                } else {
                    "error"
                };
                tracing::debug!(%why, "verification GET got no answer; tried again");
                tokio::time::sleep(RETRY_PAUSE).await;
            }
        }
    }
}

/// A verified (un)subscription in broker mode: start or stop the subscriber's receive loop.
fn broker_verified(
    inner: &Inner,
    broker: &crate::broker::Broker,
    topic: &Arc<crate::topic::Topic>,
    req: &SubRequest,
    attached: Option<hubload_servicebus::SbReceiver>,
) {
    if !req.subscribe {
        broker.unsubscribe(&topic.name, &req.callback);
        return;
    }
    if !topic.registered.load(std::sync::atomic::Ordering::Relaxed) {
        if let Some(rx) = attached {
            tokio::spawn(rx.close());
        }
        broker.subscribe_failed(&topic.name, &req.callback);
        return;
    }
    let delivery = crate::broker::subscription::Delivery {
        topic: topic.clone(),
        counters: inner.counters.clone(),
        broker: broker.counters.clone(),
        link: link_header(inner.hub_url(), &topic.name),
        max_attempts: inner.cfg.retry.max_attempts,
        timings: broker.timings.clone(),
        settings: inner.delivery_settings(),
    };
    broker.subscribe(
        delivery,
        &req.callback,
        req.secret.as_deref(),
        &inner.stop_all,
        attached,
        req.lease,
    );
    tracing::debug!(callback = %req.callback, topic = %req.topic, "subscribed at the broker");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{HubConfig, HubState};

    fn checked(body: &str) -> Result<SubRequest, String> {
        let st = HubState::new(HubConfig {
            lease_max: Duration::from_secs(1000),
            lease_default: Duration::from_secs(100),
            ..HubConfig::default()
        });
        check(&st.inner, &HubParams::parse(body.as_bytes()))
    }

    #[test]
    fn valid_requests_and_leases() {
        let r = checked("hub.mode=subscribe&hub.topic=t&hub.callback=http://127.0.0.1:1/cb&x=1")
            .unwrap();
        assert!(r.subscribe);
        assert_eq!(r.lease, Duration::from_secs(100));
        assert!(r.secret.is_none());
        let r = checked(
            "hub.mode=unsubscribe&hub.topic=t&hub.callback=https://h/cb&hub.lease_seconds=5000&hub.secret=abc",
        )
        .unwrap();
        assert!(!r.subscribe);
        assert_eq!(r.lease, Duration::from_secs(1000));
        assert_eq!(r.secret.as_deref(), Some(&b"abc"[..]));
    }

    #[test]
    fn invalid_requests_name_the_field() {
        let cb = "hub.mode=subscribe&hub.topic=t&hub.callback=";
        for (body, field) in [
            ("hub.mode=subscribe&hub.callback=http://h/", "hub.topic"),
            ("hub.mode=subscribe&hub.topic=t", "hub.callback"),
            (&format!("{cb}ftp://h/x"), "hub.callback"),
            (&format!("{cb}javascript:alert(1)"), "hub.callback"),
            (
                &format!("{cb}http://h/&hub.lease_seconds=-3"),
                "hub.lease_seconds",
            ),
            (
                &format!("{cb}http://h/&hub.secret={}", "s".repeat(200)),
                "hub.secret",
            ),
        ] {
            let err = checked(body).unwrap_err();
            assert!(err.starts_with(field), "{body}: {err}");
        }
        assert!(checked(&format!("{cb}http://h/&hub.secret={}", "s".repeat(199))).is_ok());
    }

    #[test]
    fn verification_url_keeps_the_callback_query() {
        let mut r =
            checked("hub.mode=subscribe&hub.topic=a b&hub.callback=http://h/cb?x=1").unwrap();
        assert_eq!(
            verification_url(&r, "C"),
            "http://h/cb?x=1&hub.mode=subscribe&hub.topic=a+b&hub.challenge=C&hub.lease_seconds=100"
        );
        r.subscribe = false;
        r.callback = "http://h/cb".into();
        assert_eq!(
            verification_url(&r, "C"),
            "http://h/cb?hub.mode=unsubscribe&hub.topic=a+b&hub.challenge=C"
        );
    }
}
