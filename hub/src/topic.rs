//! The registry's data: a topic, its subscriptions, and each subscription's delivery queue,
//! bounded in messages and in bytes, with the hub-wide memory budget its content is charged to.
//!
//! Memory accounting (docs/hub.md): one publish's body is one `Bytes` allocation shared by
//! every subscriber's queue. It is charged ONCE to the hub-wide budget (`--max-memory`) while
//! any queue still holds it, and charged IN FULL to each subscriber's own budget
//! (`--max-queue-bytes`) while that subscriber holds it, queued or in flight.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Acquire, Ordering::Relaxed};
use std::sync::{Arc, RwLock};

use arc_swap::ArcSwapOption;
use axum::http::HeaderValue;
use bytes::Bytes;
use tokio_util::sync::CancellationToken;

use crate::server_timing::PublishTiming;
use crate::sign::{Signer, SIGNATURE_LEN};
use crate::stats::{Counters, DropReason, TopicCounters, TopicStats};

/// A byte budget: what is taken never exceeds `max`.
#[derive(Debug)]
pub(crate) struct Budget {
    used: AtomicU64,
    max: u64,
}

impl Budget {
    pub fn new(max: u64) -> Arc<Budget> {
        Arc::new(Budget {
            used: AtomicU64::new(0),
            max,
        })
    }

    /// Bytes taken now.
    pub fn used(&self) -> u64 {
        self.used.load(Relaxed)
    }

    /// The limit.
    pub fn max(&self) -> u64 {
        self.max
    }
}

/// `n` bytes taken from a budget, given back on drop.
#[derive(Debug)]
pub(crate) struct Charge {
    budget: Arc<Budget>,
    n: u64,
}

impl Charge {
    /// Take `n` bytes if the budget has room for them.
    pub fn take(budget: &Arc<Budget>, n: u64) -> Option<Charge> {
        budget
            .used
            .fetch_update(Relaxed, Relaxed, |u| {
                u.checked_add(n).filter(|&v| v <= budget.max)
            })
            .ok()?;
        Some(Charge {
            budget: budget.clone(),
            n,
        })
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.n, Relaxed);
    }
}

/// One publish's content, shared (not copied) by every subscriber's queue; its charge to the
/// hub-wide budget ends when the last queue lets go of it.
#[derive(Debug)]
pub(crate) struct Content {
    pub body: Bytes,
    pub content_type: Option<HeaderValue>,
    /// The publish's stages, for each delivery's `Hub-Timing` header.
    pub timing: Option<PublishTiming>,
    _memory: Charge,
}

impl Content {
    /// Content whose deliveries carry `timing` (`Hub-Timing`) when there is one.
    pub fn new(
        body: Bytes,
        content_type: Option<HeaderValue>,
        memory: Charge,
        timing: Option<PublishTiming>,
    ) -> Arc<Content> {
        Arc::new(Content {
            body,
            content_type,
            timing,
            _memory: memory,
        })
    }
}

/// A delivery in one subscriber's queue (or in flight): the shared content, this
/// subscriber's charge for its bytes, its place in the queue (until a worker takes it), and,
/// under the hub-wide limit, its permit (until it ends).
#[derive(Debug)]
pub(crate) struct Queued {
    pub content: Arc<Content>,
    _charge: Charge,
    slot: Option<Charge>,
    permit: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl Queued {
    /// A worker took it: its place in the queue is free (its bytes stay charged).
    pub fn taken(&mut self) {
        self.slot = None;
    }

    /// Hold one of the hub-wide limit's permits until this delivery ends (`delivery_queue`).
    pub fn hold(&mut self, permit: tokio::sync::OwnedSemaphorePermit) {
        self.permit = Some(permit);
    }
}

/// Where fan-out puts deliveries instead of the subscribers' own queues: the hub-wide queue
/// (`delivery_queue.rs`, `--delivery-workers`).
pub(crate) trait Enqueue {
    /// Queue `item` (admitted by `sub`, of `topic`); `Err` when it is dropped instead.
    fn enqueue(
        &self,
        sub: &Arc<Subscription>,
        topic: &Arc<Topic>,
        item: Queued,
    ) -> Result<(), DropReason>;
}

/// An active (verified) subscription of one callback to one topic.
#[derive(Debug)]
pub(crate) struct Subscription {
    pub callback: String,
    /// `callback`, parsed once (every delivery POSTs to it).
    pub url: Option<url::Url>,
    /// `hub.secret`, keyed once; replaced on renewal.
    signer: ArcSwapOption<Signer>,
    /// Lease end, in ms since hub start.
    expires_ms: AtomicU64,
    tx: async_channel::Sender<Queued>,
    /// Bytes of the content this subscriber holds, queued or in flight.
    pub bytes: Arc<Budget>,
    /// Places in the queue (deliveries waiting, not in flight). The channel itself is
    /// unbounded, so memory follows what is queued, not the limit.
    slots: Arc<Budget>,
    pub stop: CancellationToken,
}

impl Subscription {
    /// A subscription and the receiving end of its queue (`queue_size` messages,
    /// `max_bytes` bytes).
    pub fn new(
        callback: &str,
        secret: Option<Arc<[u8]>>,
        expires_ms: u64,
        (queue_size, max_bytes): (usize, u64),
        stop: CancellationToken,
    ) -> (Arc<Subscription>, async_channel::Receiver<Queued>) {
        let (tx, rx) = async_channel::unbounded();
        let sub = Subscription {
            callback: callback.to_owned(),
            url: url::Url::parse(callback).ok(),
            signer: ArcSwapOption::new(signer(secret)),
            expires_ms: AtomicU64::new(expires_ms),
            tx,
            bytes: Budget::new(max_bytes),
            slots: Budget::new(queue_size.max(1) as u64),
            stop,
        };
        (Arc::new(sub), rx)
    }

    /// Active until its lease ends.
    pub fn is_active(&self, now_ms: u64) -> bool {
        now_ms < self.expires_ms.load(Relaxed)
    }

    /// Renew after a verified re-subscription: new lease and secret, same queue.
    pub fn renew(&self, secret: Option<Arc<[u8]>>, expires_ms: u64) {
        self.signer.store(signer(secret));
        self.expires_ms.store(expires_ms, Relaxed);
    }

    /// End the subscription: nothing more is queued; its workers stop and count what is
    /// still queued as dropped.
    pub fn stop(&self) {
        self.tx.close();
        self.stop.cancel();
    }

    /// End the subscription after what it has queued (an unsubscribe, a deregistration):
    /// nothing more is queued, and its workers still deliver what was, then stop. Those
    /// events were published while it was active, so they are owed to it.
    pub fn close(&self) {
        self.tx.close();
    }

    /// Queue a delivery. Never waits.
    pub fn offer(&self, content: &Arc<Content>) -> Result<(), DropReason> {
        self.hand(self.admit(content)?)
    }

    /// A delivery of `content` charged to this subscriber's budgets (its bytes and a place
    /// in its queue), not yet queued.
    pub fn admit(&self, content: &Arc<Content>) -> Result<Queued, DropReason> {
        if self.tx.is_closed() {
            return Err(DropReason::Ended);
        }
        let charge =
            Charge::take(&self.bytes, content.body.len() as u64).ok_or(DropReason::QueueBytes)?;
        let slot = Charge::take(&self.slots, 1).ok_or(DropReason::QueueFull)?;
        Ok(Queued {
            content: content.clone(),
            _charge: charge,
            slot: Some(slot),
            permit: None,
        })
    }

    /// Put an admitted delivery in this subscriber's queue, for its workers. Never waits.
    pub fn hand(&self, item: Queued) -> Result<(), DropReason> {
        self.tx.try_send(item).map_err(|e| match e {
            async_channel::TrySendError::Full(_) => DropReason::QueueFull,
            async_channel::TrySendError::Closed(_) => DropReason::Ended,
        })
    }

    /// Sign `body` into `out` with the current secret; `None` without one.
    pub fn sign<'a>(&self, body: &[u8], out: &'a mut [u8; SIGNATURE_LEN]) -> Option<&'a str> {
        Some(self.signer.load().as_ref()?.sign(body, out))
    }
}

fn signer(secret: Option<Arc<[u8]>>) -> Option<Arc<Signer>> {
    secret.map(|s| Arc::new(Signer::new(&s)))
}

/// One topic: registered or not (a publish to an unknown topic still gets counted here),
/// its counters, and its subscribers.
#[derive(Debug)]
pub(crate) struct Topic {
    pub name: String,
    pub registered: AtomicBool,
    pub counters: TopicCounters,
    pub subs: RwLock<Vec<Arc<Subscription>>>,
}

impl Topic {
    pub fn new(name: &str) -> Topic {
        Topic {
            name: name.to_owned(),
            registered: AtomicBool::new(false),
            counters: TopicCounters::default(),
            subs: RwLock::new(Vec::new()),
        }
    }

    /// Whether any subscriber is active now (a publish then needs memory for its content);
    /// expired ones are removed.
    pub fn has_subscribers(&self, now_ms: u64) -> bool {
        let (active, expired) = self.read_subs().iter().fold((false, false), |(a, e), s| {
            let on = s.is_active(now_ms);
            (a || on, e || !on)
        });
        if expired {
            self.remove_where(|s| !s.is_active(now_ms));
        }
        active
    }

    /// Offer a delivery to every active subscriber, through the hub-wide queue when there is
    /// one (`--delivery-workers`); expired subscribers are removed.
    pub fn fan_out(
        self: &Arc<Self>,
        content: &Arc<Content>,
        now_ms: u64,
        counters: &Counters,
        hub_queue: Option<&dyn Enqueue>,
    ) {
        let mut expired = false;
        for s in self.read_subs().iter() {
            if !s.is_active(now_ms) {
                expired = true;
                continue;
            }
            counters.pending.fetch_add(1, Relaxed);
            self.counters.pending.fetch_add(1, Relaxed);
            let offered = match hub_queue {
                None => s.offer(content),
                Some(q) => s.admit(content).and_then(|item| q.enqueue(s, self, item)),
            };
            if let Err(reason) = offered {
                counters.pending.fetch_sub(1, Relaxed);
                self.counters.pending.fetch_sub(1, Relaxed);
                counters.drop(reason);
                self.counters.dropped.fetch_add(1, Relaxed);
            }
        }
        if expired {
            self.remove_where(|s| !s.is_active(now_ms));
        }
    }

    /// Remove (and stop) the subscriptions matching `pred`; returns how many.
    pub fn remove_where(&self, pred: impl Fn(&Subscription) -> bool) -> usize {
        self.end_where(pred, Subscription::stop)
    }

    /// Remove the subscriptions matching `pred` and [`close`](Subscription::close) them (an
    /// unsubscribe): what they have queued is still delivered. Returns how many.
    pub fn unsubscribe_where(&self, pred: impl Fn(&Subscription) -> bool) -> usize {
        self.end_where(pred, Subscription::close)
    }

    /// Remove the subscriptions matching `pred`, ending each with `end`; returns how many.
    fn end_where(
        &self,
        pred: impl Fn(&Subscription) -> bool,
        end: impl Fn(&Subscription),
    ) -> usize {
        let mut subs = self.subs.write().unwrap_or_else(|e| e.into_inner());
        let before = subs.len();
        subs.retain(|s| {
            let gone = pred(s);
            if gone {
                end(s);
            }
            !gone
        });
        before - subs.len()
    }

    /// Remove and [`close`](Subscription::close) every subscription (a deregistration): what
    /// they have queued is still delivered.
    pub fn remove_all(&self) {
        let subs = std::mem::take(&mut *self.subs.write().unwrap_or_else(|e| e.into_inner()));
        for s in subs {
            s.close();
        }
    }

    pub fn read_subs(&self) -> std::sync::RwLockReadGuard<'_, Vec<Arc<Subscription>>> {
        self.subs.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes held by this topic's subscribers' queues (each subscriber's full share).
    pub fn queued_bytes(&self) -> u64 {
        self.read_subs().iter().map(|s| s.bytes.used()).sum()
    }

    pub fn snapshot(&self, now_ms: u64) -> TopicStats {
        let c = &self.counters;
        // First: with it 0 and nothing being published, every count read below is final.
        let pending = c.pending.load(Acquire);
        let subscribers = self
            .read_subs()
            .iter()
            .filter(|s| s.is_active(now_ms))
            .count() as u64;
        TopicStats {
            published: c.published.load(Relaxed),
            denied: c.denied.load(Relaxed),
            subscribers,
            attempts: c.attempts.load(Relaxed),
            delivered: c.delivered.load(Relaxed),
            retried: c.retried.load(Relaxed),
            failed: c.failed.load(Relaxed),
            dropped: c.dropped.load(Relaxed),
            pending,
            queued_bytes: self.queued_bytes(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_places_are_freed_when_taken_and_bytes_when_done() {
        let memory = Budget::new(1 << 20);
        let content = Content::new(
            Bytes::from_static(b"0123456789"),
            None,
            Charge::take(&memory, 10).unwrap(),
            None,
        );
        let stop = CancellationToken::new();
        let (sub, rx) = Subscription::new("http://127.0.0.1:1/cb", None, u64::MAX, (2, 35), stop);
        assert_eq!(sub.offer(&content), Ok(()));
        assert_eq!(sub.offer(&content), Ok(()));
        assert_eq!(sub.offer(&content), Err(DropReason::QueueFull));
        // A worker takes one: its place is free, its 10 bytes stay charged while in flight.
        let mut first = rx.try_recv().unwrap();
        first.taken();
        assert_eq!(sub.offer(&content), Ok(()));
        assert_eq!(sub.bytes.used(), 30);
        // 30 + 10 > 35: over the byte budget before the (full) queue is looked at.
        assert_eq!(sub.offer(&content), Err(DropReason::QueueBytes));
        drop(first);
        assert_eq!(sub.bytes.used(), 20);
        assert_eq!(sub.offer(&content), Err(DropReason::QueueFull));
        sub.stop();
        assert_eq!(sub.offer(&content), Err(DropReason::Ended));
        // What was queued gives back its bytes and places when dropped.
        while rx.try_recv().is_ok() {}
        assert_eq!((sub.bytes.used(), sub.slots.used()), (0, 0));
    }

    /// An unsubscribed (closed) subscription queues nothing more but still hands out what it
    /// had queued, in order; then its queue ends.
    #[tokio::test]
    async fn a_closed_subscription_still_hands_out_what_it_had_queued() {
        let memory = Budget::new(1 << 20);
        let content = |b: &'static [u8]| {
            Arc::new(Content::new(
                Bytes::from_static(b),
                None,
                Charge::take(&memory, b.len() as u64).unwrap(),
                None,
            ))
        };
        let (a, b) = (content(b"a"), content(b"b"));
        let stop = CancellationToken::new();
        let (sub, rx) = Subscription::new(
            "http://127.0.0.1:1/cb",
            None,
            u64::MAX,
            (8, 1 << 10),
            stop.clone(),
        );
        assert_eq!(sub.offer(&a), Ok(()));
        assert_eq!(sub.offer(&b), Ok(()));
        sub.close();
        assert_eq!(sub.offer(&a), Err(DropReason::Ended));
        assert!(!stop.is_cancelled(), "its workers go on");
        assert_eq!(&rx.recv().await.unwrap().content.body[..], b"a");
        assert_eq!(&rx.recv().await.unwrap().content.body[..], b"b");
        assert!(rx.recv().await.is_err(), "then its queue ends");
    }
}
