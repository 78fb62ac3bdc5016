//! One WebSub subscriber in broker mode: a Service Bus subscription and its receive loop.
//!
//! The loop receives up to the workers' limit ahead (`deliver.rs` POSTs them) and settles each
//! by its outcome: completed on 2xx, dead-lettered on 410 (ending the subscription) or past
//! the retry limit, abandoned otherwise. It never stops silently: re-attaches count as
//! restarts, failed receives are counted and retried, and each ending is counted.
//! Deliveries carry their publish's `Hub-Timing` when this hub sent it (`timings.rs`).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use hubload_servicebus::{ReceiveError, Received, ReceiverConfig, SbReceiver};
use tokio_util::sync::CancellationToken;

use super::deliver::{Done, Outcome, Workers};
use crate::broker_stats::BrokerCounters;
use crate::sign::Signer;

/// How long one receive call waits before the loop looks at its stop token again.
const RECEIVE_WAIT: Duration = Duration::from_secs(1);
/// Pause after a failed receive or connect, so a broken broker is not hammered.
const ERROR_PAUSE: Duration = Duration::from_millis(500);
/// Past the delivery timeout, how long an ending loop waits for its POSTs under way.
const DRAIN_SLACK: Duration = Duration::from_secs(1);

pub(crate) use super::deliver::Delivery;

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
    let (workers, mut done) = Workers::new(d, callback, signer);
    let limit = workers.limit();
    // Messages handed to the workers and not yet back.
    let mut in_flight = 0;
    let mut restarts = 0;
    let ended = loop {
        let Some(left) = lease_left(lease) else {
            d.broker.leases_expired.fetch_add(1, Relaxed);
            break Ended::Removed;
        };
        // Settle what has come back, without waiting.
        let mut gone = false;
        while let Ok(back) = done.try_recv() {
            in_flight -= 1;
            gone |= settle(d, &mut rx, back).await;
        }
        if gone {
            break Ended::Removed;
        }
        let wait = RECEIVE_WAIT.min(left);
        // At the limit, the loop only waits for messages to come back. Below it, a receive
        // is cut short when one comes back to be settled, but only on an attached link: one
        // that re-attaches runs to its end (bounded by its wait).
        let receive = in_flight < limit;
        let got = if !receive || (in_flight > 0 && rx.attached()) {
            tokio::select! {
                biased;
                _ = stop.cancelled() => break Ended::Stopped,
                back = done.recv() => {
                    if let Some(back) = back {
                        in_flight -= 1;
                        if settle(d, &mut rx, back).await {
                            break Ended::Removed;
                        }
                    }
                    continue;
                }
                r = rx.receive(wait), if receive => r,
            }
        } else {
            tokio::select! {
                _ = stop.cancelled() => break Ended::Stopped,
                r = rx.receive(wait) => r,
            }
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
        in_flight += 1;
        workers.push(msg);
    };
    // The POSTs under way end (each within the delivery timeout) and are settled by their
    // outcome; what no worker took yet is abandoned, not attempted.
    workers.halt();
    let drain_by = Instant::now() + d.settings.timeout + DRAIN_SLACK;
    while in_flight > 0 {
        match tokio::time::timeout_at(drain_by, done.recv()).await {
            Ok(Some(back)) => {
                in_flight -= 1;
                settle(d, &mut rx, back).await;
            }
            Ok(None) | Err(_) => break,
        }
    }
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

/// Settle a message the workers handed back; true when the subscriber is gone (410).
async fn settle(d: &Delivery, rx: &mut SbReceiver, back: Done) -> bool {
    let Done { msg, outcome } = back;
    // The broker's lock ran out before the answer: the settlement will be refused and the
    // message delivered again. Not the hub's to hide: counted.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |t| t.as_millis() as i64);
    if msg.locked_until_ms.is_some_and(|until| now_ms >= until) {
        d.broker.locks_expired.fetch_add(1, Relaxed);
    }
    let status = match outcome {
        Outcome::Answered(s) => Some(s),
        Outcome::Failed(f) => {
            tracing::debug!(cause = f.cause(), "broker delivery attempt got no answer");
            None
        }
        Outcome::NotSent => {
            d.broker.abandons.fetch_add(1, Relaxed);
            let settled = rx.abandon(&msg).await;
            settle_failed(d, rx, settled);
            return false;
        }
    };
    deliver_outcome(d, rx, &msg, status).await
}

fn settle_failed(d: &Delivery, rx: &SbReceiver, settled: Result<(), ReceiveError>) {
    if let Err(e) = settled {
        d.broker.settle_failures.fetch_add(1, Relaxed);
        if e != ReceiveError::LinkLost {
            tracing::debug!(entity = %rx.entity(), "settlement failed: {e}");
        }
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
    settle_failed(d, rx, settled);
    gone
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
