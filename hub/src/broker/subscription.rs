//! One WebSub subscriber in broker mode: a Service Bus subscription and its receive loop.
//! Each message is POSTed to the callback (signed, with `Link`), then completed on 2xx,
//! dead-lettered on 410 (which also ends the subscription) or once the broker has delivered
//! it as often as the hub's retry limit allows, and abandoned otherwise (the broker delivers
//! it again). The loop never stops silently: a lost link is re-attached by the receive
//! client and counted as a restart; a failed receive is counted and retried; a lease that
//! runs out, a 410 and a subscription deleted at the broker each end it, counted. Each
//! delivery carries its publish's `Hub-Timing` when this hub sent it (`timings.rs`).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use axum::http::header;
use hubload_servicebus::{ReceiveError, Received, ReceiverConfig, SbReceiver};
use tokio_util::sync::CancellationToken;

use super::timings::Timings;
use crate::broker_stats::BrokerCounters;
use crate::server_timing::{PublishTiming, HUB_TIMING};
use crate::sign::{Signer, SIGNATURE_LEN};
use crate::stats::Counters;
use crate::topic::Topic;

/// How long one receive call waits before the loop looks at its stop token again.
const RECEIVE_WAIT: Duration = Duration::from_secs(1);
/// Pause after a failed receive or connect, so a broken broker is not hammered.
const ERROR_PAUSE: Duration = Duration::from_millis(500);

/// What a receive loop needs from the hub.
#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    pub topic: Arc<Topic>,
    pub counters: Arc<Counters>,
    pub broker: Arc<BrokerCounters>,
    pub client: reqwest::Client,
    /// `Link: <hub>; rel="hub", <topic>; rel="self"`.
    pub link: String,
    /// Deliveries of one message before it is dead-lettered (the hub's retry attempts).
    pub max_attempts: u32,
    pub timeout: Duration,
    /// The stages of the publishes this hub sent, for each delivery's `Hub-Timing`.
    pub timings: Arc<Timings>,
}

/// The broker subscription's name for a callback: `hub-` and 16 hex digits of its SHA-256
/// (Azure allows 50 characters from a small alphabet; a URL does not fit in it).
pub(crate) fn subscription_name(callback: &str) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(callback.as_bytes());
    format!("hub-{}", hex::encode(&d[..8]))
}

/// Counts the loop as a running subscription while it lives.
struct Running(Arc<BrokerCounters>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.subscriptions.fetch_sub(1, Relaxed);
    }
}

/// Why a receive loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Its stop token: unsubscribe, deregister, hub shutdown. The caller removes the
    /// subscription at the broker if it should.
    Stopped,
    /// The callback answered 410, or the lease ran out: the loop removed the subscription.
    Removed,
    /// The subscription or its topic was gone at the broker (`amqp:not-found`).
    Lost,
}

/// When a subscriber's lease runs out; a renewal moves it.
pub(crate) type Lease = Arc<std::sync::Mutex<Instant>>;

/// How a loop ends on its own: its lease, and the administration API to remove the
/// subscription with (none: it is left at the broker).
#[derive(Debug, Clone)]
pub(crate) struct Ending {
    pub lease: Lease,
    pub admin: Option<Arc<super::admin::Admin>>,
}

/// Receive (on `attached`, or a receiver connected here) and deliver until `stop` is
/// cancelled (unsubscribe, deregister, hub shutdown), the callback answers 410, the lease
/// runs out, or the subscription is gone at the broker. The loop cancels `stop` itself when
/// it ends on its own, so a later subscribe starts a new one.
pub(crate) async fn receive_loop(
    cfg: ReceiverConfig,
    attached: Option<SbReceiver>,
    d: Delivery,
    callback: String,
    signer: Option<Signer>,
    stop: CancellationToken,
    ending: Ending,
) -> Ended {
    d.broker.subscriptions.fetch_add(1, Relaxed);
    let _running = Running(d.broker.clone());
    let ended = run(
        cfg.clone(),
        attached,
        &d,
        &callback,
        signer,
        &stop,
        &ending.lease,
    )
    .await;
    if ended != Ended::Stopped {
        stop.cancel();
    }
    if ended == Ended::Removed {
        if let Some(admin) = &ending.admin {
            admin
                .delete_subscription(&cfg.topic, &cfg.subscription)
                .await;
        }
    }
    ended
}

/// What is left of the lease, or `None` once it has run out.
fn lease_left(lease: &Lease) -> Option<Duration> {
    let until = *lease.lock().unwrap_or_else(|e| e.into_inner());
    let left = until.saturating_duration_since(Instant::now());
    (!left.is_zero()).then_some(left)
}

async fn run(
    cfg: ReceiverConfig,
    attached: Option<SbReceiver>,
    d: &Delivery,
    callback: &str,
    signer: Option<Signer>,
    stop: &CancellationToken,
    lease: &Lease,
) -> Ended {
    let mut rx = loop {
        if let Some(rx) = attached {
            break rx;
        }
        let connected = tokio::select! {
            _ = stop.cancelled() => return Ended::Stopped,
            r = SbReceiver::connect(cfg.clone()) => r,
        };
        match connected {
            Ok(rx) => break rx,
            Err(e) => {
                d.broker.receive_errors.fetch_add(1, Relaxed);
                tracing::warn!(entity = %cfg.entity(), "broker subscription: {e}");
                if pause(stop).await {
                    return Ended::Stopped;
                }
            }
        }
    };
    let mut restarts = 0;
    let ended = loop {
        let Some(left) = lease_left(lease) else {
            d.broker.leases_expired.fetch_add(1, Relaxed);
            break Ended::Removed;
        };
        let got = tokio::select! {
            _ = stop.cancelled() => break Ended::Stopped,
            r = rx.receive(RECEIVE_WAIT.min(left)) => r,
        };
        let now = rx.restarts();
        d.broker.receive_restarts.fetch_add(now - restarts, Relaxed);
        restarts = now;
        let msg = match got {
            Ok(None) => continue,
            Ok(Some(m)) => m,
            Err(ReceiveError::NotFound(_)) => {
                // Deleted at the broker (the topic, or the subscription): Azure will not
                // make it again, so the subscriber is gone.
                d.broker.subscriptions_lost.fetch_add(1, Relaxed);
                tracing::warn!(entity = %rx.entity(), "broker subscription gone: not found");
                break Ended::Lost;
            }
            Err(e) => {
                d.broker.receive_errors.fetch_add(1, Relaxed);
                tracing::debug!(entity = %rx.entity(), "broker receive failed: {e}");
                if pause(stop).await {
                    break Ended::Stopped;
                }
                continue;
            }
        };
        d.broker.receives.fetch_add(1, Relaxed);
        let timing = match &msg.message_id {
            Some(id) => d.timings.get(id).await,
            None => None,
        };
        let status = post(d, callback, signer.as_ref(), &msg, timing).await;
        if deliver_outcome(d, &mut rx, &msg, status).await {
            break Ended::Removed;
        }
    };
    rx.close().await;
    ended
}

/// Sleep `ERROR_PAUSE`; true when `stop` came first.
async fn pause(stop: &CancellationToken) -> bool {
    tokio::select! {
        _ = stop.cancelled() => true,
        _ = tokio::time::sleep(ERROR_PAUSE) => false,
    }
}

/// Settle `msg` after an attempt that ended in `status` (`None`: no answer); true when the
/// subscriber is gone (410).
async fn deliver_outcome(
    d: &Delivery,
    rx: &mut SbReceiver,
    msg: &Received,
    status: Option<u16>,
) -> bool {
    let (t, c, b) = (&d.topic.counters, &*d.counters, &*d.broker);
    t.attempts.fetch_add(1, Relaxed);
    c.attempts.fetch_add(1, Relaxed);
    if msg.delivery_count > 0 {
        t.retried.fetch_add(1, Relaxed);
        c.retried.fetch_add(1, Relaxed);
    }
    let ok = status.is_some_and(|s| (200..300).contains(&s));
    if !ok {
        let cause = status.map_or_else(|| "no answer".to_owned(), |s| s.to_string());
        c.failed_attempt(cause);
    }
    let gone = status == Some(410);
    let last_try = msg.delivery_count + 1 >= d.max_attempts.max(1);
    let settled = if ok {
        t.delivered.fetch_add(1, Relaxed);
        c.delivered.fetch_add(1, Relaxed);
        b.completes.fetch_add(1, Relaxed);
        rx.complete(msg).await
    } else if gone || last_try {
        t.failed.fetch_add(1, Relaxed);
        c.failed.fetch_add(1, Relaxed);
        b.dead_letters.fetch_add(1, Relaxed);
        let (reason, text) = if gone {
            ("SubscriberGone", "the callback answered 410")
        } else {
            ("HubRetriesExhausted", "the callback failed every attempt")
        };
        rx.dead_letter(msg, reason, text).await
    } else {
        b.abandons.fetch_add(1, Relaxed);
        rx.abandon(msg).await
    };
    if let Err(e) = settled {
        b.settle_failures.fetch_add(1, Relaxed);
        if e != ReceiveError::LinkLost {
            tracing::debug!(entity = %rx.entity(), "settlement failed: {e}");
        }
    }
    gone
}

/// POST the message to the callback; its status, or `None` when no answer came.
async fn post(
    d: &Delivery,
    callback: &str,
    signer: Option<&Signer>,
    msg: &Received,
    timing: Option<PublishTiming>,
) -> Option<u16> {
    let mut req = d
        .client
        .post(callback)
        .timeout(d.timeout)
        .header(header::LINK, d.link.as_str())
        .body(msg.body.clone());
    if let Some(ct) = &msg.content_type {
        req = req.header(header::CONTENT_TYPE, ct.as_str());
    }
    if let Some(s) = signer {
        let mut buf = [0; SIGNATURE_LEN];
        req = req.header("X-Hub-Signature", s.sign(&msg.body, &mut buf).to_owned());
    }
    if let Some(t) = timing {
        req = req.header(HUB_TIMING, t.value(std::time::Instant::now()));
    }
    match req.send().await {
        Ok(r) => Some(r.status().as_u16()),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscription_names_fit_azure() {
        let n = subscription_name("http://127.0.0.1:9/cb?x=1");
        assert_eq!(n.len(), 20);
        assert!(n.starts_with("hub-"));
        assert!(n[4..].bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(n, subscription_name("http://127.0.0.1:9/cb?x=2"));
        assert_eq!(n, subscription_name("http://127.0.0.1:9/cb?x=1"));
    }
}
