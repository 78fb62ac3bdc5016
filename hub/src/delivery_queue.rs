//! The hub-wide delivery limit (`--delivery-workers N`): at most N deliveries in flight over
//! every subscription, handed out from one bounded hub-wide queue in FIFO or fair order.
//!
//! Fan-out puts each delivery in the queue (beyond `--delivery-queue-size` it is dropped as
//! `dropped_hub_queue_full`); one dispatcher hands it, holding one of N permits until it ends,
//! to its subscription's workers. Fair order is a round robin over tenants (the topic's first
//! dot-separated part). One short-held lock guards the queue: hub-wide order needs one place
//! that decides (docs/hub.md).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::admission::tenant_of;
use crate::delivery_limit::{DeliveryLimit, DeliveryQueueStats, QueueOrder};
use crate::stats::{Counters, DropReason};
use crate::topic::{Enqueue, Queued, Subscription, Topic};

/// One waiting delivery: its subscription, its topic (for the counts), the item.
#[derive(Debug)]
struct Job {
    pub sub: Arc<Subscription>,
    pub topic: Arc<Topic>,
    pub item: Queued,
}

/// The waiting deliveries, in the chosen order.
#[derive(Debug, Default)]
struct Waiting {
    len: usize,
    /// FIFO: everything, in arrival order.
    fifo: VecDeque<Job>,
    /// Fair: each tenant's deliveries (only tenants with one queued have an entry, so the map
    /// is bounded by the queue's cap)…
    by_tenant: HashMap<Box<str>, VecDeque<Job>>,
    /// …and the tenants with any, in round-robin order.
    ring: VecDeque<Box<str>>,
}

impl Waiting {
    fn push(&mut self, order: QueueOrder, job: Job) {
        self.len += 1;
        match order {
            QueueOrder::Fifo => self.fifo.push_back(job),
            QueueOrder::Fair => {
                let tenant = tenant_of(&job.topic.name);
                match self.by_tenant.get_mut(tenant) {
                    Some(q) => q.push_back(job),
                    None => {
                        let t: Box<str> = tenant.into();
                        self.ring.push_back(t.clone());
                        self.by_tenant.insert(t, VecDeque::from([job]));
                    }
                }
            }
        }
    }

    fn pop(&mut self) -> Option<Job> {
        let job = match self.fifo.pop_front() {
            Some(j) => j,
            None => {
                let tenant = self.ring.pop_front()?;
                let q = self.by_tenant.get_mut(&tenant)?;
                let job = q.pop_front()?;
                if q.is_empty() {
                    self.by_tenant.remove(&tenant);
                } else {
                    self.ring.push_back(tenant);
                }
                job
            }
        };
        self.len -= 1;
        Some(job)
    }
}

/// The hub-wide queue, its permits and its counts.
#[derive(Debug)]
pub(crate) struct DeliveryQueue {
    limit: DeliveryLimit,
    waiting: Mutex<Waiting>,
    ready: Notify,
    permits: Arc<Semaphore>,
    counters: Arc<Counters>,
    running: AtomicBool,
    /// The dispatcher holds a permit and waits for a delivery to give it to.
    holding: AtomicBool,
    max_queued: AtomicU64,
    dispatched: AtomicU64,
    overflow: AtomicU64,
}

impl DeliveryQueue {
    pub fn new(limit: DeliveryLimit, counters: Arc<Counters>) -> Arc<DeliveryQueue> {
        let limit = DeliveryLimit {
            workers: limit.workers.clamp(1, Semaphore::MAX_PERMITS),
            queue_size: limit.queue_size.max(1),
            ..limit
        };
        Arc::new(DeliveryQueue {
            permits: Arc::new(Semaphore::new(limit.workers)),
            limit,
            waiting: Mutex::default(),
            ready: Notify::new(),
            counters,
            running: AtomicBool::new(false),
            holding: AtomicBool::new(false),
            max_queued: AtomicU64::new(0),
            dispatched: AtomicU64::new(0),
            overflow: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Start the dispatcher (once; needs a runtime), ending when `stop` is cancelled.
    pub fn start(self: &Arc<Self>, stop: CancellationToken) {
        if !self.running.swap(true, Relaxed) {
            tokio::spawn(self.clone().dispatch(stop));
        }
    }

    /// Queue a delivery; `Err` when the queue is full (counted; the caller drops it).
    fn push(&self, job: Job) -> Result<(), DropReason> {
        let mut w = self.lock();
        if w.len >= self.limit.queue_size {
            drop(w);
            self.overflow.fetch_add(1, Relaxed);
            return Err(DropReason::HubQueueFull);
        }
        w.push(self.limit.order, job);
        self.max_queued.fetch_max(w.len as u64, Relaxed);
        drop(w);
        self.ready.notify_one();
        Ok(())
    }

    /// Take a permit, then the next delivery, and hand it to its subscription's workers;
    /// until `stop`. What is still queued then is counted dropped (the subscriptions ended).
    async fn dispatch(self: Arc<Self>, stop: CancellationToken) {
        'run: loop {
            let permit = tokio::select! {
                _ = stop.cancelled() => break,
                p = self.permits.clone().acquire_owned() => match p {
                    Ok(p) => p,
                    Err(_) => break,
                },
            };
            self.holding.store(true, Relaxed);
            let job = loop {
                // A push between this pop and `notified` leaves a stored notification, so
                // nothing is missed.
                let next = self.lock().pop();
                if let Some(j) = next {
                    break j;
                }
                tokio::select! {
                    _ = stop.cancelled() => break 'run,
                    _ = self.ready.notified() => {}
                }
            };
            let Job {
                sub,
                topic,
                mut item,
            } = job;
            item.hold(permit);
            self.holding.store(false, Relaxed);
            self.dispatched.fetch_add(1, Relaxed);
            if let Err(reason) = sub.hand(item) {
                self.dropped(&topic, reason);
            }
        }
        loop {
            let next = self.lock().pop();
            let Some(job) = next else { break };
            self.dropped(&job.topic, DropReason::Ended);
        }
    }

    /// Count a delivery of `topic` dropped for `reason` (it was pending).
    fn dropped(&self, topic: &Topic, reason: DropReason) {
        topic.counters.dropped.fetch_add(1, Relaxed);
        Counters::drop(&self.counters, reason);
        topic.counters.pending.fetch_sub(1, Relaxed);
        self.counters.pending.fetch_sub(1, Relaxed);
    }

    /// What `/stats` shows (`delivery_queue`).
    pub fn snapshot(&self) -> DeliveryQueueStats {
        let queued = self.lock().len as u64;
        DeliveryQueueStats {
            workers: self.limit.workers as u64,
            order: self.limit.order,
            capacity: self.limit.queue_size as u64,
            queued,
            max_queued: self.max_queued.load(Relaxed),
            dispatched: self.dispatched.load(Relaxed),
            in_flight: (self.limit.workers - self.permits.available_permits())
                .saturating_sub(usize::from(self.holding.load(Relaxed)))
                as u64,
            overflow: self.overflow.load(Relaxed),
        }
    }
}

impl Enqueue for DeliveryQueue {
    fn enqueue(
        &self,
        sub: &Arc<Subscription>,
        topic: &Arc<Topic>,
        item: Queued,
    ) -> Result<(), DropReason> {
        self.push(Job {
            sub: sub.clone(),
            topic: topic.clone(),
            item,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topic::{Budget, Charge, Content};
    use bytes::Bytes;

    fn topic(name: &str) -> Arc<Topic> {
        Arc::new(Topic::new(name))
    }

    /// A job of `topic` for `sub`, its body naming it.
    fn job(sub: &Arc<Subscription>, topic: &Arc<Topic>, body: &'static str) -> Job {
        let memory = Budget::new(1 << 20);
        let content = Content::new(
            Bytes::from_static(body.as_bytes()),
            None,
            Charge::take(&memory, body.len() as u64).unwrap(),
            None,
        );
        Job {
            sub: sub.clone(),
            topic: topic.clone(),
            item: sub.admit(&content).unwrap(),
        }
    }

    fn order_of(order: QueueOrder) -> Vec<&'static str> {
        let (sub, _rx) = Subscription::new(
            "http://127.0.0.1:1/cb",
            None,
            u64::MAX,
            (64, 1 << 20),
            CancellationToken::new(),
        );
        let (noisy, a, b) = (topic("tenant0001.x"), topic("tenant0002.x"), topic("t3"));
        let mut w = Waiting::default();
        for (t, body) in [
            (&noisy, "n1"),
            (&noisy, "n2"),
            (&noisy, "n3"),
            (&noisy, "n4"),
            (&a, "a1"),
            (&noisy, "n5"),
            (&b, "b1"),
            (&a, "a2"),
        ] {
            w.push(order, job(&sub, t, body));
        }
        assert_eq!(w.len, 8);
        let mut out = Vec::new();
        while let Some(j) = w.pop() {
            out.push(match &j.item.content.body[..] {
                b"n1" => "n1",
                b"n2" => "n2",
                b"n3" => "n3",
                b"n4" => "n4",
                b"n5" => "n5",
                b"a1" => "a1",
                b"a2" => "a2",
                _ => "b1",
            });
        }
        assert_eq!(w.len, 0);
        assert!(w.by_tenant.is_empty() && w.ring.is_empty());
        out
    }

    /// Through the hub: with a queue of 1 and nothing run in between, the first publish's
    /// delivery waits and the next two overflow, counted as drops in `/stats` and `/metrics`.
    #[tokio::test]
    async fn a_full_hub_queue_drops_and_counts_in_stats_and_metrics() {
        let hub = crate::HubState::new(crate::HubConfig {
            delivery_limit: Some(DeliveryLimit {
                workers: 1,
                order: QueueOrder::Fair,
                queue_size: 1,
            }),
            ..crate::HubConfig::default()
        });
        let inner = &hub.inner;
        let name = "tenant0001.t";
        inner.register(name).unwrap();
        let t = inner.topic(name).unwrap();
        inner.subscribe(&t, "http://127.0.0.1:1/cb", None, u64::MAX);
        for _ in 0..3 {
            let body = Some((Bytes::from_static(b"{}"), None));
            assert_eq!(
                inner.publish(name, body, None),
                crate::state::RegistryResult::Ok
            );
        }
        let s = hub.stats();
        let d = &s.distribution;
        assert_eq!((d.dropped, d.dropped_hub_queue_full), (2, 2));
        let q = s.delivery_queue.clone().unwrap();
        assert_eq!((q.queued, q.overflow, q.capacity), (1, 2, 1));
        assert_eq!(q.order, QueueOrder::Fair);
        assert_eq!(s.topics[name].dropped, 2);
        let text = crate::metrics::render(&s, 0);
        assert!(text.contains("hub_distribution_dropped_total{reason=\"hub_queue_full\"} 2\n"));
        assert!(text.contains("hub_delivery_queue_overflow_total{order=\"fair\"} 2\n"));
    }

    #[test]
    fn fifo_hands_out_in_arrival_order() {
        assert_eq!(
            order_of(QueueOrder::Fifo),
            ["n1", "n2", "n3", "n4", "a1", "n5", "b1", "a2"]
        );
    }

    /// Round robin over tenants in the order they first had something queued: the quiet
    /// tenants' deliveries wait for one of the noisy tenant's each, not for its backlog.
    #[test]
    fn fair_takes_one_per_tenant_in_turn() {
        assert_eq!(
            order_of(QueueOrder::Fair),
            ["n1", "a1", "b1", "n2", "a2", "n3", "n4", "n5"]
        );
    }

    /// A full queue gives the delivery back and counts it; a dispatched one holds a permit
    /// until it is dropped (its delivery ended).
    #[tokio::test]
    async fn the_queue_is_bounded_and_permits_follow_deliveries() {
        let counters = Arc::new(Counters::default());
        let q = DeliveryQueue::new(
            DeliveryLimit {
                workers: 1,
                order: QueueOrder::Fifo,
                queue_size: 2,
            },
            counters,
        );
        let (sub, rx) = Subscription::new(
            "http://127.0.0.1:1/cb",
            None,
            u64::MAX,
            (64, 1 << 20),
            CancellationToken::new(),
        );
        let t = topic("tenant0001.x");
        assert!(q.push(job(&sub, &t, "1")).is_ok());
        assert!(q.push(job(&sub, &t, "2")).is_ok());
        assert_eq!(q.push(job(&sub, &t, "3")), Err(DropReason::HubQueueFull));
        let stop = CancellationToken::new();
        q.start(stop.clone());
        // One permit: the first is handed out, the second waits for it.
        let first = rx.recv().await.unwrap();
        assert_eq!(&first.content.body[..], b"1");
        let s = q.snapshot();
        assert_eq!(
            (s.queued, s.max_queued, s.in_flight, s.overflow),
            (1, 2, 1, 1)
        );
        assert!(rx.try_recv().is_err());
        drop(first);
        let second = rx.recv().await.unwrap();
        assert_eq!(&second.content.body[..], b"2");
        assert_eq!(q.snapshot().dispatched, 2);
        stop.cancel();
    }
}
