//! The hub's shared state: settings, counters, fault settings, and the topic registry.
//!
//! Nothing here takes a global lock on the publish path: topics live in a sharded map,
//! counters are atomics, and the fault settings are read through an `ArcSwap`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arc_swap::ArcSwap;
use dashmap::DashMap;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use axum::http::HeaderValue;
use bytes::Bytes;

use crate::config::HubConfig;
use crate::delivery_queue::DeliveryQueue;
use crate::delivery_settings::{link_header, DeliverySettings};
use crate::distribute::Workers;
use crate::faults::FaultConfig;
use crate::server_timing::PublishTiming;
use crate::stats::{Counters, Mode, StatsSnapshot, TopicStats};
use crate::topic::{Budget, Charge, Content, Subscription, Topic};

/// The hub's state, cheap to clone (an `Arc` inside).
#[derive(Clone, Debug)]
pub struct HubState {
    pub(crate) inner: Arc<Inner>,
}

/// Fault settings in force, with the request sequence they number.
#[derive(Debug)]
pub(crate) struct FaultRuntime {
    pub cfg: FaultConfig,
    /// Whether the front fault layer has anything to do.
    pub active: bool,
    /// Requests seen since these settings were set (the `every N` counter).
    pub seq: AtomicU64,
}

impl FaultRuntime {
    fn new(cfg: FaultConfig) -> Self {
        FaultRuntime {
            active: cfg.is_active(),
            cfg,
            seq: AtomicU64::new(0),
        }
    }
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub cfg: HubConfig,
    pub counters: Arc<Counters>,
    pub faults: ArcSwap<FaultRuntime>,
    pub topics: DashMap<String, Arc<Topic>>,
    topic_count: AtomicUsize,
    /// Hub start: stall windows and leases are measured from here.
    pub started: Instant,
    /// `http://<bound address>/`, set by `serve`.
    pub bound_url: OnceLock<String>,
    /// What `serve`'s client bounds cut off, set by `serve`.
    pub serve_counts: OnceLock<Arc<crate::serve_limits::ServeCounts>>,
    /// Outgoing client for verification and distribution (built once).
    pub client: reqwest::Client,
    /// Cancelled when the hub state goes away: stops every delivery worker.
    pub stop_all: CancellationToken,
    /// Content held for delivery, each publish's body counted once (`--max-memory`).
    pub memory: Arc<Budget>,
    /// The broker, in broker mode (`--servicebus`); set once before serving.
    pub broker: OnceLock<Arc<crate::broker::Broker>>,
    /// The per-tenant admission limit on publishes, when set.
    pub admission: Option<crate::admission::Admission>,
    /// The hub-wide delivery queue (`--delivery-workers`), when set.
    pub delivery_queue: Option<Arc<DeliveryQueue>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop_all.cancel();
    }
}

/// Result of a register, deregister or publish on the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RegistryResult {
    Ok,
    /// Register: already registered.
    Exists,
    /// Deregister or publish: not registered.
    Unknown,
    /// Publish: the content would take the hub over its memory budget.
    OverMemory,
}

impl HubState {
    /// A hub with these settings and no topics. Needs no runtime.
    pub fn new(cfg: HubConfig) -> Self {
        let cfg_memory = cfg.max_memory_bytes;
        let admission = cfg
            .tenant_limit
            .clone()
            .map(crate::admission::Admission::new);
        let counters: Arc<Counters> = Arc::default();
        let delivery_queue = cfg
            .delivery_limit
            .map(|l| DeliveryQueue::new(l, counters.clone()));
        // One pooled keep-alive client for every callback; idle connections are kept for as
        // many deliveries as a subscriber can have in flight.
        let client = reqwest::Client::builder()
            .timeout(cfg.delivery_timeout.max(cfg.verify_timeout))
            .pool_max_idle_per_host(cfg.delivery_concurrency.max(1) * 4)
            .pool_idle_timeout(Duration::from_secs(60))
            .tcp_nodelay(true)
            .build()
            .unwrap_or_default();
        HubState {
            inner: Arc::new(Inner {
                faults: ArcSwap::from_pointee(FaultRuntime::new(cfg.faults.clone())),
                cfg,
                counters,
                topics: DashMap::new(),
                topic_count: AtomicUsize::new(0),
                started: Instant::now(),
                bound_url: OnceLock::new(),
                serve_counts: OnceLock::new(),
                client,
                stop_all: CancellationToken::new(),
                memory: Budget::new(cfg_memory),
                broker: OnceLock::new(),
                admission,
                delivery_queue,
            }),
        }
    }

    /// Run on Service Bus from now on (broker mode): topics, publishes and subscriptions go
    /// through `broker`. Call before serving; `false` if a broker was set already.
    pub fn set_broker(&self, mut broker: crate::broker::Broker) -> bool {
        let cfg = &self.inner.cfg;
        broker.set_in_flight(cfg.delivery_concurrency.max(1) * cfg.delivery_pipeline.max(1));
        self.inner.broker.set(Arc::new(broker)).is_ok()
    }

    /// The settings the hub was built with (faults as at start).
    pub fn config(&self) -> &HubConfig {
        &self.inner.cfg
    }

    /// Replace the fault settings now; the `every N` counters restart at this request.
    pub fn set_faults(&self, f: FaultConfig) {
        self.inner.faults.store(Arc::new(FaultRuntime::new(f)));
    }

    /// The fault settings in force.
    pub fn faults(&self) -> FaultConfig {
        self.inner.faults.load().cfg.clone()
    }

    /// Everything `GET /stats` shows.
    pub fn stats(&self) -> StatsSnapshot {
        let c = &self.inner.counters;
        let now = self.inner.now_ms();
        // The totals before the topics (each reads its `pending` first): when the total
        // pending is 0 and nothing is being published, every topic's counts are final too.
        let mut distribution = c.distribution();
        let topics: BTreeMap<String, TopicStats> = self
            .inner
            .topics
            .iter()
            .map(|e| (e.key().clone(), e.value().snapshot(now)))
            .collect();
        distribution.queued_bytes = topics.values().map(|t| t.queued_bytes).sum();
        distribution.memory_bytes = self.inner.memory.used();
        distribution.memory_limit = self.inner.memory.max();
        StatsSnapshot {
            requests: c.requests.load(Relaxed),
            publish: c.mode_counts(Mode::Publish),
            register: c.mode_counts(Mode::Register),
            deregister: c.mode_counts(Mode::Deregister),
            subscribe: c.mode_counts(Mode::Subscribe),
            other: c.mode_counts(Mode::Other),
            stalled: c.stalled.load(Relaxed),
            topics,
            distribution,
            broker: self.inner.broker.get().map(|b| b.stats()),
            delivery_queue: self.inner.delivery_queue.as_ref().map(|q| q.snapshot()),
            tenants: (self.inner.admission.as_ref())
                .map(|a| a.snapshot())
                .unwrap_or_default(),
            serve: self
                .inner
                .serve_counts
                .get()
                .map(|c| c.snapshot())
                .unwrap_or_default(),
        }
    }

    /// Time since the hub state was created (stall windows are measured from there).
    pub fn uptime(&self) -> Duration {
        self.inner.started.elapsed()
    }

    /// Requests in flight now (the gauge `max_inflight` is checked against).
    pub fn inflight(&self) -> u64 {
        self.inner.counters.inflight.load(Relaxed)
    }
}

impl Inner {
    /// Milliseconds since hub start.
    pub fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Microseconds since hub start.
    pub fn now_us(&self) -> u64 {
        self.started.elapsed().as_micros() as u64
    }

    /// The instant `ms` milliseconds after hub start.
    pub fn at_ms(&self, ms: u64) -> Instant {
        self.started + Duration::from_millis(ms)
    }

    /// The URL written as `rel="hub"` in distributions.
    pub fn hub_url(&self) -> &str {
        self.cfg
            .public_url
            .as_deref()
            .or(self.bound_url.get().map(String::as_str))
            .unwrap_or("http://localhost/")
    }

    /// How deliveries to callbacks are sent, on either path.
    pub(crate) fn delivery_settings(&self) -> DeliverySettings {
        DeliverySettings::new(&self.cfg, self.client.clone())
    }

    /// The topic, if it has an entry (registered or not).
    pub fn topic(&self, name: &str) -> Option<Arc<Topic>> {
        self.topics.get(name).map(|e| e.value().clone())
    }

    /// The topic's entry, created (unregistered) if there is room.
    fn topic_or_create(&self, name: &str) -> Option<Arc<Topic>> {
        if let Some(t) = self.topic(name) {
            return Some(t);
        }
        if self.topic_count.load(Relaxed) >= self.cfg.max_topics {
            return None;
        }
        let entry = self.topics.entry(name.to_owned()).or_insert_with(|| {
            self.topic_count.fetch_add(1, Relaxed);
            Arc::new(Topic::new(name))
        });
        Some(entry.value().clone())
    }

    /// Register a topic. `None` when the hub keeps no more topics.
    pub fn register(&self, name: &str) -> Option<RegistryResult> {
        let t = self.topic_or_create(name)?;
        Some(if t.registered.swap(true, Relaxed) {
            RegistryResult::Exists
        } else {
            RegistryResult::Ok
        })
    }

    /// Deregister a topic; its subscriptions end (what they had queued is still delivered).
    pub fn deregister(&self, name: &str) -> RegistryResult {
        match self.topic(name) {
            Some(t) if t.registered.swap(false, Relaxed) => {
                t.remove_all();
                RegistryResult::Ok
            }
            _ => RegistryResult::Unknown,
        }
    }

    /// Publish to a topic: count it, and offer the content (`body`, with its content type)
    /// to every active subscriber. Never waits on delivery. The content is charged once to
    /// the hub's memory budget; a publish it does not fit is refused (`OverMemory`).
    pub fn publish(
        &self,
        name: &str,
        content: Option<(Bytes, Option<HeaderValue>)>,
        timing: Option<PublishTiming>,
    ) -> RegistryResult {
        let topic = match self.topic(name) {
            Some(t) if t.registered.load(Relaxed) => t,
            other => {
                if let Some(t) = other.or_else(|| self.topic_or_create(name)) {
                    t.counters.denied.fetch_add(1, Relaxed);
                }
                return RegistryResult::Unknown;
            }
        };
        let now = self.now_ms();
        let content = match content {
            Some((body, ct)) if topic.has_subscribers(now) => {
                let Some(charge) = Charge::take(&self.memory, body.len() as u64) else {
                    return RegistryResult::OverMemory;
                };
                Some(Content::new(body, ct, charge, timing))
            }
            _ => None,
        };
        topic.counters.published.fetch_add(1, Relaxed);
        self.counters.published.fetch_add(1, Relaxed);
        if let Some(c) = content {
            let queue = self.delivery_queue.as_deref();
            topic.fan_out(&c, now, &self.counters, queue.map(|q| q as _));
        }
        RegistryResult::Ok
    }

    /// Add (or renew) the subscription of `callback` to `topic`, starting its workers if new.
    pub fn subscribe(
        &self,
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
        let limits = (self.cfg.queue_size, self.cfg.max_queue_bytes);
        let stop = self.stop_all.child_token();
        let (sub, rx) = Subscription::new(callback, secret, expires_ms, limits, stop);
        subs.push(sub.clone());
        if let Some(q) = &self.delivery_queue {
            q.start(self.stop_all.child_token());
        }
        let workers = Workers {
            topic: topic.clone(),
            counters: self.counters.clone(),
            link: link_header(self.hub_url(), &topic.name),
            retry: self.cfg.retry.clone(),
            started: self.started,
            settings: self.delivery_settings(),
        };
        workers.spawn(sub, rx);
    }
}
