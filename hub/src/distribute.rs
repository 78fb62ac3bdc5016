//! Content distribution (WebSub §7): the delivery workers of each subscription.
//!
//! The publish path only `try_send`s into each subscriber's queue (`topic.rs`), so a slow
//! subscriber never blocks publishers or other subscribers. Each subscription grows a pool of
//! up to `--delivery-concurrency` workers, one spare while deliveries are in flight; each owns
//! a connection (`callback_conn.rs`) and sends up to `--delivery-pipeline` deliveries per write
//! (`batch.rs`: their retries). Every offered delivery ends delivered, failed or dropped, and
//! is pending until then (docs/hub.md).

use std::io::Write;
use std::sync::atomic::{
    AtomicUsize,
    Ordering::{Relaxed, Release},
};
use std::sync::Arc;

use axum::http::{header, HeaderValue};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::batch::{Attempt, Batch, Final};
use crate::callback_conn::{Answer, Conn, Failure, Target};
use crate::config::RetryPolicy;
use crate::delivery_settings::DeliverySettings;
use crate::server_timing::HUB_TIMING;
use crate::sign::SIGNATURE_LEN;
use crate::stats::{Counters, DropReason};
use crate::topic::{Queued, Subscription, Topic};

/// What a subscription's workers need from the hub.
#[derive(Debug, Clone)]
pub(crate) struct Workers {
    pub topic: Arc<Topic>,
    pub counters: Arc<Counters>,
    /// `<hub>; rel="hub", <topic>; rel="self"`, the `Link` field's value.
    pub link: HeaderValue,
    pub retry: RetryPolicy,
    /// Hub start (leases are measured from there).
    pub started: Instant,
    pub settings: DeliverySettings,
}

impl Workers {
    /// Start the worker pool of `sub`, taking from `rx`.
    pub fn spawn(self, sub: Arc<Subscription>, rx: async_channel::Receiver<Queued>) {
        let link_line = [b"Link: ", self.link.as_bytes(), b"\r\n"].concat();
        let pool = Arc::new(Pool {
            target: sub.url.as_ref().and_then(Target::new),
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

/// A delivery a worker took, with its signature (made once for all its attempts).
#[derive(Debug)]
struct Delivery {
    item: Queued,
    sig: Option<[u8; SIGNATURE_LEN]>,
}

/// What one worker owns: its deliveries, its connection, and the buffers of a round.
#[derive(Debug, Default)]
struct Worker {
    batch: Batch<Delivery>,
    conn: Conn,
    /// The batch's slots sent in this round.
    due: Vec<usize>,
    /// Their answers, in the same order.
    answers: Vec<Answer>,
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
    /// `Link: …\r\n`, as written on a worker's own connection.
    link_line: Vec<u8>,
    /// The callback, when it is `http://` (each worker then owns a connection to it).
    target: Option<Target>,
}

impl Pool {
    /// One worker: take batches of deliveries until the subscription ends.
    async fn run(self: Arc<Self>) {
        let stop = self.sub.stop.clone();
        let mut w = Worker::default();
        // A TLS callback takes one delivery at a time (the pooled client does not pipeline).
        let depth = match self.target {
            Some(_) => self.ctx.settings.pipeline.max(1),
            None => 1,
        };
        loop {
            self.idle.fetch_add(1, Relaxed);
            let item = tokio::select! {
                biased;
                _ = stop.cancelled() => None,
                d = self.rx.recv() => d.ok(),
            };
            let spare = self.idle.fetch_sub(1, Relaxed) - 1;
            let Some(item) = item else { break };
            if spare == 0 {
                self.grow();
            }
            let now = Instant::now();
            w.batch.push(self.delivery(item), now);
            if depth > 1 {
                // Let the tasks ready to run (publishes) go first: what they queue meanwhile
                // joins this write. No timer: on an idle runtime this returns at once.
                tokio::task::yield_now().await;
            }
            // What else is waiting, up to one write's worth.
            while w.batch.len() < depth {
                let Ok(item) = self.rx.try_recv() else { break };
                w.batch.push(self.delivery(item), now);
            }
            let now_ms = self.ctx.started.elapsed().as_millis() as u64;
            if !self.sub.is_active(now_ms) {
                for _ in w.batch.drain() {
                    self.count(Final::Stopped);
                }
                self.remove(false);
                break;
            }
            if self.work(&mut w, depth, &stop).await {
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

    /// A taken delivery, signed (its queue place is free now).
    fn delivery(&self, mut item: Queued) -> Delivery {
        item.taken();
        let mut sig = [0; SIGNATURE_LEN];
        let signed = self.sub.sign(&item.content.body, &mut sig).is_some();
        Delivery {
            item,
            sig: signed.then_some(sig),
        }
    }

    /// Work the worker's batch until every delivery in it has ended; true when the
    /// subscriber answered 410 (the rest of the batch is then counted dropped).
    async fn work(&self, w: &mut Worker, depth: usize, stop: &CancellationToken) -> bool {
        let (t, c) = (&self.ctx.topic.counters, &*self.ctx.counters);
        loop {
            if w.batch.is_empty() {
                return false;
            }
            if stop.is_cancelled() {
                for _ in w.batch.drain() {
                    self.count(Final::Stopped);
                }
                return false;
            }
            let room = match &self.target {
                Some(_) => w.conn.room(depth),
                None => 1,
            };
            if let Some(at) = w.batch.due(Instant::now(), room, &mut w.due) {
                tokio::select! {
                    _ = stop.cancelled() => {}
                    _ = tokio::time::sleep_until(at) => {}
                }
                continue;
            }
            for &i in &w.due {
                t.attempts.fetch_add(1, Relaxed);
                c.attempts.fetch_add(1, Relaxed);
                if w.batch.tries(i) > 0 {
                    t.retried.fetch_add(1, Relaxed);
                    c.retried.fetch_add(1, Relaxed);
                }
            }
            self.send(w).await;
            let writes = match &self.target {
                Some(_) => 1,
                None => w.due.len() as u64,
            };
            c.writes.fetch_add(writes, Relaxed);
            let now = Instant::now();
            for (&i, &answer) in w.due.iter().zip(&w.answers) {
                let (attempt, cause) = match answer {
                    Answer::Status(s) if (200..300).contains(&s) => {
                        w.batch
                            .settle(i, Some(Attempt::Delivered), now, &self.ctx.retry);
                        continue;
                    }
                    Answer::Unsent => {
                        // Not an attempt after all: take back what was counted for it.
                        t.attempts.fetch_sub(1, Relaxed);
                        c.attempts.fetch_sub(1, Relaxed);
                        if w.batch.tries(i) > 0 {
                            t.retried.fetch_sub(1, Relaxed);
                            c.retried.fetch_sub(1, Relaxed);
                        }
                        w.batch.settle(i, None, now, &self.ctx.retry);
                        continue;
                    }
                    Answer::Status(410) => (Attempt::Gone, "410".to_owned()),
                    Answer::Status(s) => (Attempt::Failed, s.to_string()),
                    Answer::Failed(f) => (Attempt::Failed, f.cause().to_owned()),
                };
                tracing::debug!(%cause, "delivery attempt failed");
                c.failed_attempt(cause);
                w.batch.settle(i, Some(attempt), now, &self.ctx.retry);
            }
            let mut gone = false;
            w.batch.finished(|d, end| {
                drop(d);
                self.count(end);
                gone |= end == Final::Gone;
            });
            if gone {
                for _ in w.batch.drain() {
                    self.count(Final::Stopped);
                }
                return true;
            }
        }
    }

    /// One round: the due deliveries of `w.batch` (`w.due`), answers into `w.answers`.
    async fn send(&self, w: &mut Worker) {
        let Worker {
            batch,
            conn,
            due,
            answers,
        } = w;
        let Some(target) = &self.target else {
            answers.clear();
            for &i in due.iter() {
                let a = match self.post_tls(batch.item(i)).await {
                    Ok(s) => Answer::Status(s),
                    Err(f) => Answer::Failed(f),
                };
                answers.push(a);
            }
            return;
        };
        conn.start();
        // One clock read per write: its deliveries leave together.
        let now = std::time::Instant::now();
        let mut bodies: Vec<&[u8]> = Vec::with_capacity(due.len());
        for &i in due.iter() {
            let d = batch.item(i);
            let body = &d.item.content.body;
            conn.push(target, |head| {
                head.extend_from_slice(&self.link_line);
                if let Some(ct) = &d.item.content.content_type {
                    head.extend_from_slice(b"Content-Type: ");
                    head.extend_from_slice(ct.as_bytes());
                    head.extend_from_slice(b"\r\n");
                }
                if let Some(sig) = &d.sig {
                    head.extend_from_slice(b"X-Hub-Signature: ");
                    head.extend_from_slice(sig);
                    head.extend_from_slice(b"\r\n");
                }
                if let Some(t) = &d.item.content.timing {
                    // Writing into a Vec cannot fail.
                    let _ = write!(head, "{HUB_TIMING}: {}\r\n", t.value(now));
                }
                // Writing into a Vec cannot fail.
                let _ = write!(head, "Content-Length: {}\r\n\r\n", body.len());
            });
            bodies.push(body);
        }
        conn.send(target, &bodies, self.ctx.settings.timeout, answers)
            .await;
    }

    /// Start one more worker, unless the pool is at its limit.
    fn grow(self: &Arc<Self>) {
        let max = self.ctx.settings.concurrency.max(1);
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

    /// One attempt to an `https://` (or otherwise not plain-http) callback, over the hub's
    /// pooled TLS client.
    async fn post_tls(&self, delivery: &Delivery) -> Result<u16, Failure> {
        let d = &delivery.item.content;
        let signature = delivery
            .sig
            .as_ref()
            .and_then(|s| std::str::from_utf8(s).ok());
        let client = &self.ctx.settings.client;
        let mut req = match &self.sub.url {
            Some(url) => client.post(url.clone()),
            None => client.post(&self.sub.callback),
        }
        .timeout(self.ctx.settings.timeout)
        .header(header::LINK, self.ctx.link.clone())
        .body(d.body.clone());
        if let Some(ct) = &d.content_type {
            req = req.header(header::CONTENT_TYPE, ct.clone());
        }
        if let Some(sig) = signature {
            req = req.header("X-Hub-Signature", sig);
        }
        if let Some(t) = &d.timing {
            req = req.header(HUB_TIMING, t.value(std::time::Instant::now()));
        }
        match req.send().await {
            Ok(r) => Ok(r.status().as_u16()),
            Err(e) => Err(Failure::of_reqwest(&e)),
        }
    }
}
