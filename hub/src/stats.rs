//! The hub's own counters (atomics, shared by every request) and their serializable snapshot.
//!
//! Each hub request is counted exactly once, in exactly one key of its mode, at the moment its
//! answer is decided; a request whose client leaves before that is counted `abandoned` by the
//! [`Tally`] drop guard. This is what lets a load generator reconcile its own counts exactly.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Acquire, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

/// Which operation a hub request asked for (from `hub.mode` in the query string or form body).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `publish` (content in the body, or a thin ping).
    Publish,
    /// `register` a topic.
    Register,
    /// `deregister` a topic.
    Deregister,
    /// `subscribe` or `unsubscribe`.
    Subscribe,
    /// `hub.mode` missing or unknown.
    Other,
}

impl Mode {
    /// The mode named by a `hub.mode` value; `None` for a missing value is [`Mode::Other`].
    pub fn parse(value: Option<&str>) -> Mode {
        match value {
            Some("publish") => Mode::Publish,
            Some("register") => Mode::Register,
            Some("deregister") => Mode::Deregister,
            Some("subscribe" | "unsubscribe") => Mode::Subscribe,
            _ => Mode::Other,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// How the hub answered a request: one key of [`ModeCounts`] (besides `abandoned`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// 200/202 `hub.mode=accepted` (or 202 for a subscription request).
    Accepted,
    /// 404 `hub.mode=denied` (publish to an unregistered topic, subscribe to one).
    Denied,
    /// 400 text/plain: bad or missing parameters.
    BadRequest,
    /// 401: missing or wrong bearer token.
    Unauthorized,
    /// 413: body over the size limit.
    TooLarge,
    /// 502 injected by the fault layer.
    Fault502,
    /// 503 injected by the fault layer (ratio, every N, or over `max_inflight`).
    Fault503,
    /// Connection reset injected by the fault layer.
    FaultReset,
    /// 409: the topic is already registered.
    Conflict,
    /// 404: deregister of a topic that is not registered.
    NotFound,
    /// 503: a publish whose content would take the hub over its memory budget.
    OverMemory,
    /// 5xx: the broker behind the hub refused or failed the send (broker mode;
    /// docs/hub-servicebus.md has the map).
    Broker,
    /// 429: a publish over its tenant's admission limit (`--tenant-rate-limit`).
    Throttled,
}

const VERDICTS: usize = 13;
const ABANDONED: usize = VERDICTS;
const MODES: usize = 5;

/// Per-mode counters as plain numbers; every key is always present, zeros included.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ModeCounts {
    /// Answered `hub.mode=accepted` (202 for subscription requests).
    pub accepted: u64,
    /// Answered 404 `hub.mode=denied`.
    pub denied: u64,
    /// Answered 400.
    pub bad_request: u64,
    /// Answered 401.
    pub unauthorized: u64,
    /// Answered 413.
    pub too_large: u64,
    /// Answered 502 by the fault layer.
    pub fault_502: u64,
    /// Answered 503 by the fault layer.
    pub fault_503: u64,
    /// Connection reset by the fault layer.
    pub fault_reset: u64,
    /// The client went away before the hub decided its answer.
    pub abandoned: u64,
    /// Answered 409 (duplicate register).
    pub conflict: u64,
    /// Answered 404 (deregister of an unknown topic).
    pub not_found: u64,
    /// Answered 503 because the content would take the hub over `--max-memory`.
    #[serde(default)]
    pub over_memory: u64,
    /// Answered 5xx because the broker behind the hub failed the send (broker mode).
    #[serde(default)]
    pub broker_error: u64,
    /// Answered 429 with `Retry-After`: a publish over its tenant's `--tenant-rate-limit`.
    #[serde(default)]
    pub throttled: u64,
}

impl ModeCounts {
    /// Every request of this mode, whatever its answer.
    pub fn total(&self) -> u64 {
        self.accepted
            + self.denied
            + self.bad_request
            + self.unauthorized
            + self.too_large
            + self.fault_502
            + self.fault_503
            + self.fault_reset
            + self.abandoned
            + self.conflict
            + self.not_found
            + self.over_memory
            + self.broker_error
            + self.throttled
    }
}

/// Per-topic counters in a snapshot.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct TopicStats {
    /// Publishes accepted for this topic.
    pub published: u64,
    /// Publishes denied (topic not registered at the time).
    pub denied: u64,
    /// Active (verified, unexpired) subscribers now.
    pub subscribers: u64,
    /// Delivery attempts (POSTs to a callback), retries included.
    pub attempts: u64,
    /// Deliveries answered 2xx by a subscriber.
    pub delivered: u64,
    /// Delivery attempts beyond the first.
    pub retried: u64,
    /// Deliveries given up after the last attempt (or answered 410).
    pub failed: u64,
    /// Deliveries never (fully) attempted: queue full, over the subscriber's byte budget, or
    /// the subscription went away first.
    pub dropped: u64,
    /// Deliveries queued or in flight now.
    pub pending: u64,
    /// Bytes those deliveries hold, each subscriber's share counted.
    pub queued_bytes: u64,
}

/// Distribution totals over all topics (docs/hub.md lists how they reconcile).
///
/// Every delivery offered (accepted publish × active subscriber at that moment) ends in
/// exactly one of `delivered`, `failed`, `dropped`, or is still `pending`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct DistributionStats {
    /// Publishes accepted (each is fanned out to the topic's subscribers of that moment).
    pub published: u64,
    /// Delivery attempts (POSTs to a callback), retries included.
    pub attempts: u64,
    /// Deliveries answered 2xx.
    pub delivered: u64,
    /// Delivery attempts beyond the first (redeliveries after a failed attempt).
    pub retried: u64,
    /// Delivery rounds: one request each over TLS, else one write of one or several
    /// pipelined requests to an `http://` callback (`attempts / writes` is about the mean
    /// pipeline depth).
    pub writes: u64,
    /// Deliveries given up: the last attempt failed, or the subscriber answered 410.
    pub failed: u64,
    /// Failed attempts by cause: the HTTP status (`"500"`, `"410"`, …), `"timeout"`,
    /// `"connect"` (no connection) or `"error"` (the exchange broke off).
    pub failed_attempts: BTreeMap<String, u64>,
    /// Subscriptions removed because their callback answered 410.
    pub gone_removed: u64,
    /// Deliveries dropped, all reasons.
    pub dropped: u64,
    /// Dropped because the subscriber's queue held `--queue-size` messages.
    pub dropped_queue_full: u64,
    /// Dropped because the subscriber's queue held `--max-queue-bytes`.
    pub dropped_queue_bytes: u64,
    /// Dropped because the subscription ended (410, unsubscribe, deregister, lease end)
    /// before the delivery was made.
    pub dropped_ended: u64,
    /// Dropped because the hub-wide delivery queue held `--delivery-queue-size` deliveries
    /// (only with `--delivery-workers`).
    pub dropped_hub_queue_full: u64,
    /// Deliveries queued or in flight now.
    pub pending: u64,
    /// Bytes held by subscribers' queues now, each subscriber's share counted.
    pub queued_bytes: u64,
    /// Bytes of content held now, each publish's body counted once (the `--max-memory` budget).
    pub memory_bytes: u64,
    /// The `--max-memory` budget.
    pub memory_limit: u64,
}

/// Why a delivery was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DropReason {
    /// The subscriber's queue held its maximum number of messages.
    QueueFull,
    /// The subscriber's queue held its maximum number of bytes.
    QueueBytes,
    /// The subscription ended first.
    Ended,
    /// The hub-wide delivery queue held `--delivery-queue-size` deliveries.
    HubQueueFull,
}

/// Everything `GET /stats` shows.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StatsSnapshot {
    /// Hub requests (admin, `/stats` and `/metrics` excluded).
    pub requests: u64,
    /// Publish requests.
    pub publish: ModeCounts,
    /// Register requests.
    pub register: ModeCounts,
    /// Deregister requests.
    pub deregister: ModeCounts,
    /// Subscribe and unsubscribe requests.
    pub subscribe: ModeCounts,
    /// Requests whose `hub.mode` was missing or unknown.
    pub other: ModeCounts,
    /// Requests that entered a stall window (they are also counted under their answer).
    pub stalled: u64,
    /// Per topic, for every topic ever registered or published to.
    pub topics: BTreeMap<String, TopicStats>,
    /// Totals over all topics.
    pub distribution: DistributionStats,
    /// The broker's counts, when the hub runs on Service Bus (`--servicebus`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broker: Option<crate::broker_stats::BrokerStats>,
    /// Per tenant, the admission limit's counts (`--tenant-rate-limit`; absent without it).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tenants: BTreeMap<String, crate::admission::TenantAdmission>,
    /// The hub-wide delivery queue (`--delivery-workers`; absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_queue: Option<crate::delivery_limit::DeliveryQueueStats>,
    /// Connections the hub's client bounds cut off (zeros when it is not serving).
    #[serde(default)]
    pub serve: crate::serve_stats::ServeStats,
}

/// Live counters of one topic; shared by its registry entry and its subscribers' workers.
#[derive(Debug, Default)]
pub(crate) struct TopicCounters {
    pub published: AtomicU64,
    pub denied: AtomicU64,
    pub attempts: AtomicU64,
    pub pending: AtomicU64,
    pub delivered: AtomicU64,
    pub retried: AtomicU64,
    pub failed: AtomicU64,
    pub dropped: AtomicU64,
}

/// The hub-wide counters.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub requests: AtomicU64,
    pub stalled: AtomicU64,
    modes: [[AtomicU64; VERDICTS + 1]; MODES],
    pub published: AtomicU64,
    pub attempts: AtomicU64,
    pub delivered: AtomicU64,
    pub retried: AtomicU64,
    pub writes: AtomicU64,
    pub failed: AtomicU64,
    /// Failed attempts by cause (the failure path only: a lock is cheap there).
    failed_attempts: Mutex<BTreeMap<String, u64>>,
    pub gone_removed: AtomicU64,
    pub dropped: AtomicU64,
    dropped_by: [AtomicU64; 4],
    pub pending: AtomicU64,
    pub inflight: AtomicU64,
}

impl Counters {
    fn count(&self, mode: Mode, slot: usize) {
        self.modes[mode.index()][slot].fetch_add(1, Relaxed);
    }

    /// The per-mode part of a snapshot.
    pub fn mode_counts(&self, mode: Mode) -> ModeCounts {
        let c = &self.modes[mode.index()];
        let g = |v: Verdict| c[v as usize].load(Relaxed);
        ModeCounts {
            accepted: g(Verdict::Accepted),
            denied: g(Verdict::Denied),
            bad_request: g(Verdict::BadRequest),
            unauthorized: g(Verdict::Unauthorized),
            too_large: g(Verdict::TooLarge),
            fault_502: g(Verdict::Fault502),
            fault_503: g(Verdict::Fault503),
            fault_reset: g(Verdict::FaultReset),
            abandoned: c[ABANDONED].load(Relaxed),
            conflict: g(Verdict::Conflict),
            not_found: g(Verdict::NotFound),
            over_memory: g(Verdict::OverMemory),
            broker_error: g(Verdict::Broker),
            throttled: g(Verdict::Throttled),
        }
    }

    /// Count a dropped delivery (hub-wide; the caller counts the topic's).
    pub fn drop(&self, reason: DropReason) {
        self.dropped.fetch_add(1, Relaxed);
        self.dropped_by[reason as usize].fetch_add(1, Relaxed);
    }

    /// Count a failed attempt under its cause.
    pub fn failed_attempt(&self, cause: String) {
        let mut m = self
            .failed_attempts
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        *m.entry(cause).or_default() += 1;
    }

    /// Distribution totals; the byte gauges come from the registry.
    pub fn distribution(&self) -> DistributionStats {
        let by = |r: DropReason| self.dropped_by[r as usize].load(Relaxed);
        // First: with it 0 and nothing being published, every count read below is final.
        let pending = self.pending.load(Acquire);
        DistributionStats {
            published: self.published.load(Relaxed),
            attempts: self.attempts.load(Relaxed),
            delivered: self.delivered.load(Relaxed),
            retried: self.retried.load(Relaxed),
            writes: self.writes.load(Relaxed),
            failed: self.failed.load(Relaxed),
            failed_attempts: self
                .failed_attempts
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            gone_removed: self.gone_removed.load(Relaxed),
            dropped: self.dropped.load(Relaxed),
            dropped_queue_full: by(DropReason::QueueFull),
            dropped_queue_bytes: by(DropReason::QueueBytes),
            dropped_ended: by(DropReason::Ended),
            dropped_hub_queue_full: by(DropReason::HubQueueFull),
            pending,
            queued_bytes: 0,
            memory_bytes: 0,
            memory_limit: 0,
        }
    }
}

/// The accounting guard of one in-flight hub request.
///
/// Created when the request enters the hub (it counts `requests` and the in-flight gauge);
/// [`Tally::decide`] counts the answer. If the guard is dropped undecided (the connection
/// task dropped the handler because the client left), it counts `abandoned` instead.
#[derive(Debug)]
pub(crate) struct Tally {
    counters: Arc<Counters>,
    mode: Mode,
    decided: bool,
}

impl Tally {
    /// Enter a request; returns the guard and the number of requests in flight, this one included.
    pub fn enter(counters: Arc<Counters>, mode: Mode) -> (Tally, u64) {
        counters.requests.fetch_add(1, Relaxed);
        let inflight = counters.inflight.fetch_add(1, Relaxed) + 1;
        let tally = Tally {
            counters,
            mode,
            decided: false,
        };
        (tally, inflight)
    }

    /// The mode the request is counted under.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Re-attribute the request once its mode is known from the body.
    pub fn set_mode(&mut self, mode: Mode) {
        self.mode = mode;
    }

    /// Count the answer. Only the first decision counts.
    pub fn decide(&mut self, verdict: Verdict) {
        if !self.decided {
            self.decided = true;
            self.counters.count(self.mode, verdict as usize);
        }
    }
}

impl Drop for Tally {
    fn drop(&mut self) {
        if !self.decided {
            self.counters.count(self.mode, ABANDONED);
        }
        self.counters.inflight.fetch_sub(1, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_request_counted_once() {
        let c = Arc::new(Counters::default());
        {
            let (mut t, inflight) = Tally::enter(c.clone(), Mode::Publish);
            assert_eq!(inflight, 1);
            t.decide(Verdict::Accepted);
            t.decide(Verdict::Fault502); // ignored: already decided
        }
        {
            let (_t, inflight) = Tally::enter(c.clone(), Mode::Publish);
            assert_eq!(inflight, 1);
        } // dropped undecided → abandoned
        {
            let (mut t, _) = Tally::enter(c.clone(), Mode::Other);
            t.set_mode(Mode::Register);
            t.decide(Verdict::Conflict);
        }
        let p = c.mode_counts(Mode::Publish);
        assert_eq!((p.accepted, p.fault_502, p.abandoned), (1, 0, 1));
        assert_eq!(p.total(), 2);
        assert_eq!(c.mode_counts(Mode::Register).conflict, 1);
        assert_eq!(c.mode_counts(Mode::Other).total(), 0);
        assert_eq!(c.requests.load(Relaxed), 3);
        assert_eq!(c.inflight.load(Relaxed), 0);
    }

    #[test]
    fn mode_names() {
        assert_eq!(Mode::parse(Some("publish")), Mode::Publish);
        assert_eq!(Mode::parse(Some("unsubscribe")), Mode::Subscribe);
        assert_eq!(Mode::parse(Some("unregister")), Mode::Other);
        assert_eq!(Mode::parse(None), Mode::Other);
    }

    #[test]
    fn snapshot_shape_has_every_key() {
        let v = serde_json::to_value(StatsSnapshot::default()).unwrap();
        for mode in ["publish", "register", "deregister", "subscribe", "other"] {
            let keys: Vec<_> = v[mode].as_object().unwrap().keys().cloned().collect();
            assert_eq!(keys.len(), 14, "{mode}: {keys:?}");
        }
        assert_eq!(v["distribution"].as_object().unwrap().len(), 17);
        assert!(v["topics"].as_object().unwrap().is_empty());
        // `broker` only in broker mode.
        assert!(v.get("broker").is_none());
        // `tenants` only with an admission limit.
        assert!(v.get("tenants").is_none());
        // `delivery_queue` only with a hub-wide delivery limit.
        assert!(v.get("delivery_queue").is_none());
    }
}
