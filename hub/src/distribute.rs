//! Content distribution (WebSub §7): the delivery workers of each subscription.
//!
//! The publish path only `try_send`s into each subscriber's queue (`topic.rs`), so a slow or
//! dead subscriber never blocks publishers or other subscribers. Each subscription has a pool
//! of up to `--delivery-concurrency` workers taking deliveries from its queue in FIFO order:
//! it starts with one, and a worker that takes a delivery while no other worker is waiting
//! starts one more (up to the limit), so one spare worker is ready whenever deliveries are
//! in flight and a subscriber that keeps up costs few tasks and connections. Each worker owns
//! one keep-alive connection to an `http://` callback (`callback_conn.rs`; `https://`
//! callbacks share the hub's pooled TLS client). So up to that many deliveries are in flight
//! per subscriber and they can complete out of order (concurrency 1 keeps strict order).
//! Every offered delivery ends in exactly one of delivered, failed (after the last retry, or
//! a 410) or dropped (queue full, over its byte budget, or the subscription ended first);
//! until then it is counted as pending.

use std::future::Future;
use std::io::Write;
use std::sync::atomic::{
    AtomicUsize,
    Ordering::{Relaxed, Release},
};
use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, HeaderValue};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::callback_conn::{Conn, Failure, Target};
use crate::config::RetryPolicy;
use crate::sign::SIGNATURE_LEN;
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
    /// Most workers per subscription: deliveries in flight to one callback.
    pub concurrency: usize,
}

impl Workers {
    /// Start the worker pool of `sub`, taking from `rx`.
    pub fn spawn(self, sub: Arc<Subscription>, rx: async_channel::Receiver<Queued>) {
        let link = link_header(&self.hub_url, &self.topic.name);
        let link_line = [b"Link: ", link.as_bytes(), b"\r\n"].concat();
        let pool = Arc::new(Pool {
            target: sub.url.as_ref().and_then(Target::new),
            link,
            link_line,
            sub,
            rx,
            alive: AtomicUsize::new(1),
            idle: AtomicUsize::new(0),
            ctx: self,
        });
        tokio::spawn(pool.run());
    }
}

/// `Link: <hub>; rel="hub", <topic>; rel="self"`.
fn link_header(hub: &str, topic: &str) -> HeaderValue {
    HeaderValue::try_from(format!("<{hub}>; rel=\"hub\", <{topic}>; rel=\"self\""))
        .unwrap_or_else(|_| HeaderValue::from_static("<>; rel=\"hub\""))
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
/// called before each retry. Each attempt is handed `state` (a worker's connection) and
/// hands it back, so no lock guards it; the end and the state are returned.
pub(crate) async fn with_retries<S, F, Fut>(
    policy: &RetryPolicy,
    stop: &CancellationToken,
    mut state: S,
    mut attempt: F,
    mut on_retry: impl FnMut(),
) -> (Final, S)
where
    F: FnMut(S) -> Fut,
    Fut: Future<Output = (Attempt, S)>,
{
    let attempts = policy.max_attempts.max(1);
    for n in 1..=attempts {
        let (a, s) = attempt(state).await;
        state = s;
        match a {
            Attempt::Delivered => return (Final::Delivered, state),
            Attempt::Gone => return (Final::Gone, state),
            Attempt::Failed if n == attempts => return (Final::Failed, state),
            Attempt::Failed => {
                tokio::select! {
                    _ = stop.cancelled() => return (Final::Stopped, state),
                    _ = tokio::time::sleep(policy.backoff(n)) => {}
                }
                on_retry();
            }
        }
    }
    (Final::Failed, state)
}

/// One subscription's worker pool: what its workers share.
#[derive(Debug)]
struct Pool {
    ctx: Workers,
    sub: Arc<Subscription>,
    rx: async_channel::Receiver<Queued>,
    /// Workers running.
    alive: AtomicUsize,
    /// Workers waiting for a delivery.
    idle: AtomicUsize,
    link: HeaderValue,
    /// `Link: …\r\n`, as written on a worker's own connection.
    link_line: Vec<u8>,
    /// The callback, when it is `http://` (each worker then owns a connection to it).
    target: Option<Target>,
}

impl Pool {
    /// One worker: take deliveries until the subscription ends.
    async fn run(self: Arc<Self>) {
        let stop = self.sub.stop.clone();
        let mut conn = Conn::default();
        loop {
            self.idle.fetch_add(1, Relaxed);
            let item = tokio::select! {
                biased;
                _ = stop.cancelled() => None,
                d = self.rx.recv() => d.ok(),
            };
            let spare = self.idle.fetch_sub(1, Relaxed) - 1;
            let Some(mut item) = item else { break };
            item.taken();
            if spare == 0 {
                self.grow();
            }
            let now_ms = self.ctx.started.elapsed().as_millis() as u64;
            if !self.sub.is_active(now_ms) {
                self.count(Final::Stopped);
                self.remove(false);
                break;
            }
            let (end, c) = self.deliver(&item, &stop, conn).await;
            conn = c;
            drop(item);
            self.count(end);
            if end == Final::Gone {
                self.remove(true);
                break;
            }
        }
        // Nothing more gets in; what is still queued is dropped (another worker of this
        // subscription may be draining too: each item is taken once).
        self.rx.close();
        while self.rx.try_recv().is_ok() {
            self.count(Final::Stopped);
        }
    }

    /// Start one more worker, unless the pool is at its limit.
    fn grow(self: &Arc<Self>) {
        let max = self.ctx.concurrency.max(1);
        let more = self
            .alive
            .fetch_update(Relaxed, Relaxed, |n| (n < max).then_some(n + 1));
        if more.is_ok() {
            tokio::spawn(self.clone().run());
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
        // Release, after the outcome's counters: a snapshot that reads `pending` first
        // (Acquire) and sees a delivery done also sees how it ended.
        t.pending.fetch_sub(1, Release);
        c.pending.fetch_sub(1, Release);
    }

    async fn deliver(&self, item: &Queued, stop: &CancellationToken, conn: Conn) -> (Final, Conn) {
        let d = &item.content;
        let mut sig_buf = [0; SIGNATURE_LEN];
        let signature = self.sub.sign(&d.body, &mut sig_buf);
        let (t, c) = (&self.ctx.topic.counters, &*self.ctx.counters);
        let attempt = |mut conn: Conn| {
            t.attempts.fetch_add(1, Relaxed);
            c.attempts.fetch_add(1, Relaxed);
            async move {
                let status = match &self.target {
                    Some(target) => {
                        let head = conn.head(target);
                        head.extend_from_slice(&self.link_line);
                        if let Some(ct) = &d.content_type {
                            head.extend_from_slice(b"Content-Type: ");
                            head.extend_from_slice(ct.as_bytes());
                            head.extend_from_slice(b"\r\n");
                        }
                        if let Some(sig) = signature {
                            head.extend_from_slice(b"X-Hub-Signature: ");
                            head.extend_from_slice(sig.as_bytes());
                            head.extend_from_slice(b"\r\n");
                        }
                        // Writing into a Vec cannot fail.
                        let _ = write!(head, "Content-Length: {}\r\n\r\n", d.body.len());
                        conn.post(target, &d.body, self.ctx.timeout).await
                    }
                    None => self.post_tls(d, signature).await,
                };
                let (attempt, cause) = match status {
                    Ok(s) if (200..300).contains(&s) => return (Attempt::Delivered, conn),
                    Ok(410) => (Attempt::Gone, "410".to_owned()),
                    Ok(s) => (Attempt::Failed, s.to_string()),
                    Err(f) => (Attempt::Failed, f.cause().to_owned()),
                };
                tracing::debug!(%cause, "delivery attempt failed");
                c.failed_attempt(cause);
                (attempt, conn)
            }
        };
        let on_retry = || {
            t.retried.fetch_add(1, Relaxed);
            c.retried.fetch_add(1, Relaxed);
        };
        with_retries(&self.ctx.retry, stop, conn, attempt, on_retry).await
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
        let (end, attempts) = with_retries(
            &policy(),
            &stop,
            0,
            |n| {
                let mut t = times.lock().unwrap();
                t.push(start.elapsed().as_millis());
                let r = if t.len() > fails {
                    then
                } else {
                    Attempt::Failed
                };
                async move { (r, n + 1) }
            },
            || retries += 1,
        )
        .await;
        let t = times.into_inner().unwrap();
        // The state went through every attempt.
        assert_eq!(attempts, t.len());
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
        let attempt = |s| async move { (Attempt::Failed, s) };
        let (end, ()) = with_retries(&policy(), &stop, (), attempt, || {}).await;
        assert_eq!(end, Final::Stopped);
    }

    #[test]
    fn link_header_names_hub_and_topic() {
        assert_eq!(
            link_header("http://127.0.0.1:1/", "t.login"),
            "<http://127.0.0.1:1/>; rel=\"hub\", <t.login>; rel=\"self\""
        );
    }
}
