//! Delivery statistics of one level as plain, mergeable data: counters, end-to-end histograms and the per-second series.
//!
//! What each counter means is in docs/delivery.md. Shards' stats add with `+=` exactly (the
//! histograms share the one layout of `stats::new_histogram`).

use std::collections::BTreeMap;
use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

use super::churn_stats::ChurnStats;
use crate::stats::{new_histogram, Histogram, ServerTimingStats, TopicStats};

/// Delivery counters of one subscriber (or of many, added up).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct DeliveryCounts {
    /// Accepted publishes of the subscriber's topic in the level, for a verified subscriber
    /// (what it should receive; 0 for one the hub never verified).
    pub expected: u64,
    /// Events received intact and acknowledged (2xx), each counted once.
    pub delivered: u64,
    /// Expected events not delivered within the grace, for subscribers still listening
    /// (verified, and not gone: one that answered 410 expects nothing more).
    pub lost: u64,
    /// Expected events not yet delivered when the run was stopped (a signal) before the grace
    /// had passed: not counted lost, since the hub was not given its grace.
    #[serde(default)]
    pub not_yet_delivered: u64,
    /// An event received again after it had been acknowledged.
    pub duplicates: u64,
    /// An event received again after the subscriber had answered it with an error: the hub retrying.
    pub redeliveries: u64,
    /// A first receipt of an event accepted before the publish of an event already delivered.
    pub out_of_order: u64,
    /// `X-Hub-Signature` missing or not the HMAC-SHA256 of the body.
    pub bad_signature: u64,
    /// Names one of our events but is not byte-identical to it.
    pub body_mismatch: u64,
    /// Not an event hubload published (to this subscriber's topic).
    pub unexpected: u64,
    /// An event of an earlier level (already counted lost there).
    pub late: u64,
    /// Every POST received, whatever it was.
    pub received: u64,
    /// Answered 500 by the behaviour knobs.
    pub answered_error: u64,
    /// Answered 410 by the behaviour knobs.
    pub answered_gone: u64,
    /// Delivered before hubload had read the publish's accepted answer (no accepted → received sample).
    pub before_accepted: u64,
    /// Latency taken from the body's wall-clock `sent_us` (another process published it).
    pub e2e_from_body: u64,
    /// Broker subscribers: events of the level read from the subscription's dead-letter
    /// sub-queue (the broker gave up on them, or the subscriber dead-lettered them), each
    /// counted once; not counted in `lost`.
    #[serde(default)]
    pub dead_lettered: u64,
}

impl AddAssign<&DeliveryCounts> for DeliveryCounts {
    fn add_assign(&mut self, o: &DeliveryCounts) {
        self.expected += o.expected;
        self.delivered += o.delivered;
        self.lost += o.lost;
        self.not_yet_delivered += o.not_yet_delivered;
        self.duplicates += o.duplicates;
        self.redeliveries += o.redeliveries;
        self.out_of_order += o.out_of_order;
        self.bad_signature += o.bad_signature;
        self.body_mismatch += o.body_mismatch;
        self.unexpected += o.unexpected;
        self.late += o.late;
        self.received += o.received;
        self.answered_error += o.answered_error;
        self.answered_gone += o.answered_gone;
        self.before_accepted += o.before_accepted;
        self.e2e_from_body += o.e2e_from_body;
        self.dead_lettered += o.dead_lettered;
    }
}

/// Deliveries per second of a level, keyed like the publish timeline: second `s` is
/// `[origin + s, origin + s + 1)`, `origin` being the level's measured start.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeliverySeconds {
    /// Deliveries owed: accepted publishes whose accepted answer was read in the second, each
    /// times the subscribers of its topic listening when the level opened.
    pub expected: Vec<u64>,
    /// Events delivered (first acknowledged, as `delivered` counts them) in the second.
    pub delivered: Vec<u64>,
}

impl DeliverySeconds {
    /// Count `n` in `series` at second `s` (the series grows as needed).
    pub fn bump(series: &mut Vec<u64>, s: usize, n: u64) {
        if series.len() <= s {
            series.resize(s + 1, 0);
        }
        series[s] += n;
    }

    /// Seconds covered: the longer series.
    pub fn len(&self) -> usize {
        self.expected.len().max(self.delivered.len())
    }

    /// Whether no second has anything.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The backlog at the end of each second: deliveries owed so far less delivered so far,
    /// never below 0 (a hub may deliver before hubload has read the accepted answer).
    pub fn backlog(&self) -> Vec<u64> {
        let (mut owed, mut got) = (0u64, 0u64);
        (0..self.len())
            .map(|s| {
                owed += self.expected.get(s).copied().unwrap_or(0);
                got += self.delivered.get(s).copied().unwrap_or(0);
                owed.saturating_sub(got)
            })
            .collect()
    }
}

/// Second by second, exactly.
fn add_series(a: &mut Vec<u64>, b: &[u64]) {
    for (s, n) in b.iter().enumerate() {
        DeliverySeconds::bump(a, s, *n);
    }
}

impl AddAssign<&DeliverySeconds> for DeliverySeconds {
    fn add_assign(&mut self, o: &DeliverySeconds) {
        add_series(&mut self.expected, &o.expected);
        add_series(&mut self.delivered, &o.delivered);
    }
}

/// One level's deliveries: totals, per subscriber, and end-to-end latency in µs. Serialized
/// whole into shard artifacts (histograms as interchange strings); a field missing from an
/// older artifact reads as its default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DeliveryLevelStats {
    /// Every subscriber added up.
    pub counts: DeliveryCounts,
    /// Per subscriber, keyed `<topic index>/<subscriber index>` (the callback path's tail).
    pub per_subscriber: BTreeMap<String, DeliveryCounts>,
    /// Per workload topic index, its subscribers' delivered events' end-to-end latency
    /// (publish start → received, µs) in the compact per-topic layout (each counted
    /// `accepted`); the per-tenant delivery figures roll these up.
    pub per_topic: BTreeMap<usize, TopicStats>,
    /// Subscribers that have answered 410 (the hub should have removed them).
    pub gone_subscribers: u64,
    /// Subscribers the hub has not verified (or has unsubscribed): they expect nothing.
    pub unverified_subscribers: u64,
    /// Publish start → delivery received, µs.
    #[serde(with = "crate::stats::hist_serde")]
    pub e2e_from_start: Histogram,
    /// Accepted answer read → delivery received, µs.
    #[serde(with = "crate::stats::hist_serde")]
    pub e2e_from_accepted: Histogram,
    /// The hub's `Hub-Timing` stages of the deliveries, and the rest, µs.
    #[serde(with = "super::stages")]
    pub stages: ServerTimingStats,
    /// Owed and delivered per second since the level's measured start.
    pub seconds: DeliverySeconds,
    /// Subscription churn (`--subscriber-churn`); `None` without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub churn: Option<ChurnStats>,
    /// The longest interval between two consecutive deliveries to one subscriber, µs, over
    /// every subscriber (0 when none got two): how long delivery stopped.
    pub longest_gap_us: u64,
    /// With a surge: the quiet tenants' delivered events' latency by the second of the level
    /// each was sent in (compact per-topic layout); empty otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub quiet_seconds: Vec<TopicStats>,
    /// With a surge: the quiet tenants' lost deliveries (owed, never delivered within the
    /// grace) by the second of the level each event was sent in; empty otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub quiet_lost: Vec<u64>,
    /// Broker subscribers: `counts.dead_lettered` by the message's `DeadLetterReason`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub dead_letter_reasons: BTreeMap<String, u64>,
}

impl Default for DeliveryLevelStats {
    fn default() -> Self {
        DeliveryLevelStats {
            counts: DeliveryCounts::default(),
            per_subscriber: BTreeMap::new(),
            per_topic: BTreeMap::new(),
            gone_subscribers: 0,
            unverified_subscribers: 0,
            e2e_from_start: new_histogram(),
            e2e_from_accepted: new_histogram(),
            stages: ServerTimingStats::default(),
            seconds: DeliverySeconds::default(),
            churn: None,
            longest_gap_us: 0,
            quiet_seconds: Vec::new(),
            quiet_lost: Vec::new(),
            dead_letter_reasons: BTreeMap::new(),
        }
    }
}

impl AddAssign<&DeliveryLevelStats> for DeliveryLevelStats {
    fn add_assign(&mut self, o: &DeliveryLevelStats) {
        self.counts += &o.counts;
        for (k, v) in &o.per_subscriber {
            *self.per_subscriber.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &o.per_topic {
            *self.per_topic.entry(*k).or_default() += v;
        }
        self.gone_subscribers += o.gone_subscribers;
        self.unverified_subscribers += o.unverified_subscribers;
        // Same layout and auto-resize: adding cannot fail.
        let _ = self.e2e_from_start.add(&o.e2e_from_start);
        let _ = self.e2e_from_accepted.add(&o.e2e_from_accepted);
        self.stages += &o.stages;
        self.seconds += &o.seconds;
        if let Some(c) = &o.churn {
            *self.churn.get_or_insert_with(ChurnStats::default) += c;
        }
        // Subscribers are not split across shards, so the longest of the parts is exact.
        self.longest_gap_us = self.longest_gap_us.max(o.longest_gap_us);
        super::delivery_hists::add_seconds(&mut self.quiet_seconds, &o.quiet_seconds);
        if self.quiet_lost.len() < o.quiet_lost.len() {
            self.quiet_lost.resize(o.quiet_lost.len(), 0);
        }
        for (a, b) in self.quiet_lost.iter_mut().zip(&o.quiet_lost) {
            *a += b;
        }
        for (reason, n) in &o.dead_letter_reasons {
            *self.dead_letter_reasons.entry(reason.clone()).or_default() += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::record;

    fn part(key: &str, delivered: u64, lat: &[u64]) -> DeliveryLevelStats {
        let mut s = DeliveryLevelStats::default();
        let c = DeliveryCounts {
            expected: delivered + 1,
            delivered,
            lost: 1,
            ..DeliveryCounts::default()
        };
        s.counts += &c;
        s.per_subscriber.insert(key.into(), c);
        lat.iter().for_each(|v| record(&mut s.e2e_from_start, *v));
        s.seconds.delivered = vec![delivered];
        s
    }

    #[test]
    fn merging_shards_equals_one_process() {
        let mut merged = part("0/0", 3, &[100, 2_000]);
        merged += &part("1/0", 4, &[50_000]);
        merged += &part("0/0", 1, &[7]);
        assert_eq!(
            (
                merged.counts.expected,
                merged.counts.delivered,
                merged.counts.lost
            ),
            (11, 8, 3)
        );
        assert_eq!(merged.per_subscriber["0/0"].delivered, 4);
        assert_eq!(merged.per_subscriber["1/0"].delivered, 4);
        let mut one = new_histogram();
        for v in [100, 2_000, 50_000, 7] {
            record(&mut one, v);
        }
        assert_eq!(merged.e2e_from_start, one);
        assert_eq!(merged.seconds.delivered, [8]);
    }

    #[test]
    fn seconds_add_second_by_second_and_give_the_backlog() {
        let mut a = DeliverySeconds {
            expected: vec![10, 10],
            delivered: vec![4, 12, 3],
        };
        a += &DeliverySeconds {
            expected: vec![1, 0, 0, 5],
            delivered: vec![0, 1],
        };
        assert_eq!(a.expected, [11, 10, 0, 5]);
        assert_eq!(a.delivered, [4, 13, 3]);
        // Owed so far 11, 21, 21, 26; delivered so far 4, 17, 20, 20.
        assert_eq!(a.backlog(), [7, 4, 1, 6]);
        // Delivered before the accepted answer was read: no negative backlog.
        let early = DeliverySeconds {
            expected: vec![0, 2],
            delivered: vec![2],
        };
        assert_eq!(early.backlog(), [0, 0]);
    }
}
