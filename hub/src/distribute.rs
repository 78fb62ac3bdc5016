//! Content distribution (WebSub §7): one bounded queue and one delivery worker per subscription.
//!
//! The publish path only `try_send`s into each queue, so a slow or dead subscriber never
//! blocks publishers or other subscribers. Every offered delivery ends in exactly one of
//! delivered, failed (after the last retry, or a 410) or dropped (queue full, or the
//! subscription ended first); until then it is counted as pending.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use axum::http::{header, HeaderValue};
use bytes::Bytes;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::config::RetryPolicy;
use crate::state::{Inner, Topic};
use crate::stats::{Counters, TopicCounters};

/// One publish's content, shared (not copied) by every subscriber's queue.
#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    pub body: Bytes,
    pub content_type: Option<HeaderValue>,
}

/// An active (verified) subscription of one callback to one topic.
#[derive(Debug)]
pub(crate) struct Subscription {
    pub callback: String,
    secret: Mutex<Option<Arc<[u8]>>>,
    /// Lease end, in ms since hub start.
    expires_ms: AtomicU64,
    tx: mpsc::Sender<Delivery>,
    stop: CancellationToken,
}

impl Subscription {
    /// Active until its lease ends.
    pub fn is_active(&self, now_ms: u64) -> bool {
        now_ms < self.expires_ms.load(Relaxed)
    }

    /// Renew after a verified re-subscription: new lease and secret, same queue.
    pub fn renew(&self, secret: Option<Arc<[u8]>>, expires_ms: u64) {
        *self.secret.lock().unwrap_or_else(|e| e.into_inner()) = secret;
        self.expires_ms.store(expires_ms, Relaxed);
    }

    /// End the subscription: its worker stops and counts what is still queued as dropped.
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// Queue a delivery, or count it dropped when the queue is full. Never waits.
    pub fn offer(&self, d: Delivery, topic: &TopicCounters, counters: &Counters) {
        counters.pending.fetch_add(1, Relaxed);
        if self.tx.try_send(d).is_err() {
            counters.pending.fetch_sub(1, Relaxed);
            topic.dropped.fetch_add(1, Relaxed);
            counters.dropped.fetch_add(1, Relaxed);
        }
    }

    fn secret(&self) -> Option<Arc<[u8]>> {
        self.secret
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// Add (or renew) the subscription of `callback` to `topic` and start its worker if new.
pub(crate) fn upsert(
    inner: &Arc<Inner>,
    topic: &Arc<Topic>,
    callback: &str,
    secret: Option<Arc<[u8]>>,
    expires_ms: u64,
) {
    let mut subs = topic.subs.write().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = subs.iter().find(|s| s.callback == callback) {
        s.renew(secret, expires_ms);
        return;
    }
    let (tx, rx) = mpsc::channel(inner.cfg.queue_size.max(1));
    let sub = Arc::new(Subscription {
        callback: callback.to_owned(),
        secret: Mutex::new(secret),
        expires_ms: AtomicU64::new(expires_ms),
        tx,
        stop: inner.stop_all.child_token(),
    });
    subs.push(sub.clone());
    let worker = Worker {
        sub,
        topic: topic.clone(),
        counters: inner.counters.clone(),
        client: inner.client.clone(),
        link: link_header(inner.hub_url(), &topic.name),
        retry: inner.cfg.retry.clone(),
        timeout: inner.cfg.delivery_timeout,
        inner: Arc::downgrade(inner),
    };
    tokio::spawn(worker.run(rx));
}

/// `Link: <hub>; rel="hub", <topic>; rel="self"`.
fn link_header(hub: &str, topic: &str) -> HeaderValue {
    HeaderValue::try_from(format!("<{hub}>; rel=\"hub\", <{topic}>; rel=\"self\""))
        .unwrap_or_else(|_| HeaderValue::from_static("<>; rel=\"hub\""))
}

/// `sha256=<hex HMAC-SHA256(secret, body)>`.
pub(crate) fn signature(secret: &[u8], body: &[u8]) -> String {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// How one delivery attempt went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// 2xx.
    Delivered,
    /// 410: the subscriber is gone for good.
    Gone,
    /// Anything else (status, timeout, connection error): retry.
    Failed,
}

/// How a delivery ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Final {
    Delivered,
    Gone,
    Failed,
    /// The subscription ended during a backoff.
    Stopped,
}

/// Run `attempt` until it delivers, the subscriber is gone, the policy's attempts are used
/// up, or `stop` fires; wait `policy.backoff(n)` after failed attempt n. `on_retry` is
/// called before each retry.
pub(crate) async fn with_retries<F, Fut>(
    policy: &RetryPolicy,
    stop: &CancellationToken,
    mut attempt: F,
    mut on_retry: impl FnMut(),
) -> Final
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Attempt>,
{
    let attempts = policy.max_attempts.max(1);
    for n in 1..=attempts {
        match attempt().await {
            Attempt::Delivered => return Final::Delivered,
            Attempt::Gone => return Final::Gone,
            Attempt::Failed if n == attempts => return Final::Failed,
            Attempt::Failed => {
                tokio::select! {
                    _ = stop.cancelled() => return Final::Stopped,
                    _ = tokio::time::sleep(policy.backoff(n)) => {}
                }
                on_retry();
            }
        }
    }
    Final::Failed
}

struct Worker {
    sub: Arc<Subscription>,
    topic: Arc<Topic>,
    counters: Arc<Counters>,
    client: reqwest::Client,
    link: HeaderValue,
    retry: RetryPolicy,
    timeout: std::time::Duration,
    inner: std::sync::Weak<Inner>,
}

impl Worker {
    async fn run(self, mut rx: mpsc::Receiver<Delivery>) {
        let stop = self.sub.stop.clone();
        loop {
            let d = tokio::select! {
                biased;
                _ = stop.cancelled() => break,
                d = rx.recv() => match d { Some(d) => d, None => break },
            };
            let expired = self
                .inner
                .upgrade()
                .is_none_or(|i| !self.sub.is_active(i.now_ms()));
            let end = if expired {
                Final::Stopped
            } else {
                self.deliver(&d, &stop).await
            };
            self.count(end);
            if end == Final::Gone || expired {
                let me = Arc::as_ptr(&self.sub);
                self.topic.remove_where(|s| std::ptr::eq(s, me));
                break;
            }
        }
        rx.close();
        while rx.try_recv().is_ok() {
            self.count(Final::Stopped);
        }
        tracing::debug!(callback = %self.sub.callback, topic = %self.topic.name, "subscription ended");
    }

    fn count(&self, end: Final) {
        let (t, c) = (&self.topic.counters, &*self.counters);
        let (ta, ca) = match end {
            Final::Delivered => (&t.delivered, &c.delivered),
            Final::Gone | Final::Failed => (&t.failed, &c.failed),
            Final::Stopped => (&t.dropped, &c.dropped),
        };
        ta.fetch_add(1, Relaxed);
        ca.fetch_add(1, Relaxed);
        c.pending.fetch_sub(1, Relaxed);
    }

    async fn deliver(&self, d: &Delivery, stop: &CancellationToken) -> Final {
        let signature = self.sub.secret().map(|s| signature(&s, &d.body));
        let attempt = || {
            let mut req = self
                .client
                .post(&self.sub.callback)
                .timeout(self.timeout)
                .header(header::LINK, self.link.clone())
                .body(d.body.clone());
            if let Some(ct) = &d.content_type {
                req = req.header(header::CONTENT_TYPE, ct.clone());
            }
            if let Some(sig) = &signature {
                req = req.header("X-Hub-Signature", sig.as_str());
            }
            async move {
                match req.send().await {
                    Ok(r) if r.status().is_success() => Attempt::Delivered,
                    Ok(r) if r.status() == reqwest::StatusCode::GONE => Attempt::Gone,
                    Ok(r) => {
                        tracing::debug!(status = %r.status(), "delivery failed");
                        Attempt::Failed
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "delivery failed");
                        Attempt::Failed
                    }
                }
            }
        };
        let on_retry = || {
            self.topic.counters.retried.fetch_add(1, Relaxed);
            self.counters.retried.fetch_add(1, Relaxed);
        };
        with_retries(&self.retry, stop, attempt, on_retry).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::time::Instant;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 5,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(300),
        }
    }

    /// Fails `fails` times, then answers `then`; records when each attempt started.
    async fn run(fails: usize, then: Attempt) -> (Final, Vec<u128>, usize) {
        let start = Instant::now();
        let times = std::sync::Mutex::new(Vec::new());
        let mut retries = 0;
        let stop = CancellationToken::new();
        let end = with_retries(
            &policy(),
            &stop,
            || {
                let mut t = times.lock().unwrap();
                t.push(start.elapsed().as_millis());
                let r = if t.len() > fails {
                    then
                } else {
                    Attempt::Failed
                };
                async move { r }
            },
            || retries += 1,
        )
        .await;
        let t = times.into_inner().unwrap();
        (end, t, retries)
    }

    #[tokio::test(start_paused = true)]
    async fn backoff_is_exponential_and_capped() {
        let (end, times, retries) = run(3, Attempt::Delivered).await;
        assert_eq!(end, Final::Delivered);
        // waits 100, 200, 300 (capped from 400)
        assert_eq!(times, [0, 100, 300, 600]);
        assert_eq!(retries, 3);
    }

    #[tokio::test(start_paused = true)]
    async fn gives_up_after_max_attempts() {
        let (end, times, retries) = run(usize::MAX, Attempt::Delivered).await;
        assert_eq!(end, Final::Failed);
        assert_eq!(times, [0, 100, 300, 600, 900]);
        assert_eq!(retries, 4);
    }

    #[tokio::test(start_paused = true)]
    async fn gone_is_not_retried() {
        let (end, times, retries) = run(0, Attempt::Gone).await;
        assert_eq!((end, times.len(), retries), (Final::Gone, 1, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn stop_ends_a_backoff() {
        let stop = CancellationToken::new();
        stop.cancel();
        let end = with_retries(&policy(), &stop, || async { Attempt::Failed }, || {}).await;
        assert_eq!(end, Final::Stopped);
    }

    #[test]
    fn signature_matches_a_known_vector() {
        // RFC 4231 test case 2.
        assert_eq!(
            signature(b"Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn link_header_names_hub_and_topic() {
        assert_eq!(
            link_header("http://127.0.0.1:1/", "t.login"),
            "<http://127.0.0.1:1/>; rel=\"hub\", <t.login>; rel=\"self\""
        );
    }
}
