//! Content distribution (WebSub §7): the delivery workers of each subscription.
//!
//! The publish path only `try_send`s into each subscriber's queue (`topic.rs`), so a slow or
//! dead subscriber never blocks publishers or other subscribers. Each subscription has
//! `--delivery-concurrency` workers taking deliveries from its queue in FIFO order; each
//! worker owns one keep-alive connection to an `http://` callback (`callback_conn.rs`;
//! `https://` callbacks share the hub's pooled TLS client). So up to that many deliveries are
//! in flight per subscriber and they can complete out of order (concurrency 1 keeps strict
//! order). Every
//! offered delivery ends in exactly one of delivered, failed (after the last retry, or a
//! 410) or dropped (queue full, over its byte budget, or the subscription ended first);
//! until then it is counted as pending.

use std::future::Future;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, HeaderValue};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use tokio::sync::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::callback_conn::{Conn, Failure, Target};
use crate::config::RetryPolicy;
use crate::stats::{Counters, DropReason};
use crate::topic::{Content, Queued, Subscription, Topic};

/// What a subscription's workers need from the hub.
#[derive(Debug, Clone)]
pub(crate) struct Workers {
    pub topic: Arc<Topic>,
    pub counters: Arc<Counters>,
    pub client: reqwest::Client,
    /// The hub URL written in `Link: <…>; rel="hub"`.
    pub hub_url: String,
    pub retry: RetryPolicy,
    pub timeout: Duration,
    /// Hub start (leases are measured from there).
    pub started: Instant,
    /// Workers per subscription: deliveries in flight to one callback.
    pub concurrency: usize,
}

impl Workers {
    /// Start the workers of `sub`, taking from `rx`.
    pub fn spawn(self, sub: Arc<Subscription>, rx: async_channel::Receiver<Queued>) {
        let link = link_header(&self.hub_url, &self.topic.name);
        let link_line = [b"Link: ", link.as_bytes(), b"\r\n"].concat();
        let worker = Arc::new(Worker {
            target: sub.url.as_ref().and_then(Target::new),
            link,
            link_line,
            sub,
            ctx: self,
        });
        for _ in 0..worker.ctx.concurrency.max(1) {
            tokio::spawn(worker.clone().run(rx.clone()));
        }
    }
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

#[derive(Debug)]
struct Worker {
    ctx: Workers,
    sub: Arc<Subscription>,
    link: HeaderValue,
    /// `Link: …\r\n`, as written on the worker's own connection.
    link_line: Vec<u8>,
    /// The callback, when it is `http://` (each worker then owns a connection to it).
    target: Option<Target>,
}

impl Worker {
    async fn run(self: Arc<Self>, rx: async_channel::Receiver<Queued>) {
        let stop = self.sub.stop.clone();
        let conn = Mutex::new(Conn::default());
        loop {
            let item = tokio::select! {
                biased;
                _ = stop.cancelled() => break,
                d = rx.recv() => match d { Ok(d) => d, Err(_) => break },
            };
            let now_ms = self.ctx.started.elapsed().as_millis() as u64;
            if !self.sub.is_active(now_ms) {
                self.count(Final::Stopped);
                self.remove(false);
                break;
            }
            let end = self.deliver(&item, &stop, &conn).await;
            drop(item);
            self.count(end);
            if end == Final::Gone {
                self.remove(true);
                break;
            }
        }
        // Nothing more gets in; what is still queued is dropped (another worker of this
        // subscription may be draining too: each item is taken once).
        rx.close();
        while rx.try_recv().is_ok() {
            self.count(Final::Stopped);
        }
    }

    /// Take this subscription out of its topic (and stop its other workers).
    fn remove(&self, gone: bool) {
        let me = Arc::as_ptr(&self.sub);
        let removed = self.ctx.topic.remove_where(|s| std::ptr::eq(s, me));
        self.sub.stop();
        if gone && removed > 0 {
            self.ctx.counters.gone_removed.fetch_add(1, Relaxed);
            tracing::debug!(callback = %self.sub.callback, topic = %self.ctx.topic.name, "410: subscription removed");
        }
    }

    fn count(&self, end: Final) {
        let (t, c) = (&self.ctx.topic.counters, &*self.ctx.counters);
        match end {
            Final::Delivered => {
                t.delivered.fetch_add(1, Relaxed);
                c.delivered.fetch_add(1, Relaxed);
            }
            Final::Gone | Final::Failed => {
                t.failed.fetch_add(1, Relaxed);
                c.failed.fetch_add(1, Relaxed);
            }
            Final::Stopped => {
                t.dropped.fetch_add(1, Relaxed);
                c.drop(DropReason::Ended);
            }
        }
        t.pending.fetch_sub(1, Relaxed);
        c.pending.fetch_sub(1, Relaxed);
    }

    async fn deliver(&self, item: &Queued, stop: &CancellationToken, conn: &Mutex<Conn>) -> Final {
        let d = &item.content;
        let signature = self.sub.secret().map(|s| signature(&s, &d.body));
        let (t, c) = (&self.ctx.topic.counters, &*self.ctx.counters);
        let attempt = || {
            t.attempts.fetch_add(1, Relaxed);
            c.attempts.fetch_add(1, Relaxed);
            let signature = signature.as_deref();
            async move {
                let status = match &self.target {
                    Some(target) => {
                        let ct = d.content_type.as_ref().map(HeaderValue::as_bytes);
                        let (ct_name, ct, ct_end) = match ct {
                            Some(v) => (&b"Content-Type: "[..], v, &b"\r\n"[..]),
                            None => (&b""[..], &b""[..], &b""[..]),
                        };
                        let (sig_name, sig, sig_end) = match signature {
                            Some(v) => (&b"X-Hub-Signature: "[..], v.as_bytes(), &b"\r\n"[..]),
                            None => (&b""[..], &b""[..], &b""[..]),
                        };
                        let lines = [
                            &self.link_line[..],
                            ct_name,
                            ct,
                            ct_end,
                            sig_name,
                            sig,
                            sig_end,
                        ];
                        let mut conn = conn.lock().await;
                        conn.post(target, &lines, &d.body, self.ctx.timeout).await
                    }
                    None => self.post_tls(d, signature).await,
                };
                let (attempt, cause) = match status {
                    Ok(s) if (200..300).contains(&s) => return Attempt::Delivered,
                    Ok(410) => (Attempt::Gone, "410".to_owned()),
                    Ok(s) => (Attempt::Failed, s.to_string()),
                    Err(f) => (Attempt::Failed, f.cause().to_owned()),
                };
                tracing::debug!(%cause, "delivery attempt failed");
                c.failed_attempt(cause);
                attempt
            }
        };
        let on_retry = || {
            t.retried.fetch_add(1, Relaxed);
            c.retried.fetch_add(1, Relaxed);
        };
        with_retries(&self.ctx.retry, stop, attempt, on_retry).await
    }

    /// One attempt to an `https://` (or otherwise not plain-http) callback, over the hub's
    /// pooled TLS client.
    async fn post_tls(&self, d: &Content, signature: Option<&str>) -> Result<u16, Failure> {
        let client = &self.ctx.client;
        let mut req = match &self.sub.url {
            Some(url) => client.post(url.clone()),
            None => client.post(&self.sub.callback),
        }
        .timeout(self.ctx.timeout)
        .header(header::LINK, self.link.clone())
        .body(d.body.clone());
        if let Some(ct) = &d.content_type {
            req = req.header(header::CONTENT_TYPE, ct.clone());
        }
        if let Some(sig) = signature {
            req = req.header("X-Hub-Signature", sig);
        }
        match req.send().await {
            Ok(r) => Ok(r.status().as_u16()),
            Err(e) if e.is_timeout() => Err(Failure::Timeout),
            Err(e) if e.is_connect() => Err(Failure::Connect),
            Err(_) => Err(Failure::Error),
        }
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
