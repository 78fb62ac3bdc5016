//! A level's subscription churn counts and latencies (`--subscriber-churn`): plain data that adds with `+=`.

use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

use crate::stats::{new_histogram, Histogram};

/// One level's subscription churn. Serialized whole into shard artifacts and into a level's
/// `delivery.churn` in summary.json; adds with `+=`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct ChurnStats {
    /// Unsubscribe requests the hub verified.
    pub unsubscribed: u64,
    /// Re-subscriptions the hub verified.
    pub resubscribed: u64,
    /// Cycles with a request refused or not verified in time (the subscriber is owed nothing
    /// from its unsubscribe request to the end of the level).
    pub failed: u64,
    /// Cycles not started because every eligible subscriber was already in one.
    pub skipped: u64,
    /// Deliveries received after an unsubscribe was verified and before the re-subscription was.
    pub after_unsubscribe: u64,
    /// Events accepted inside a subscriber's churn gap that it never acknowledged: not owed,
    /// not lost (gap events that did arrive count as delivered).
    pub ambiguous: u64,
    /// Subscribe request sent → the hub's verification received, µs.
    #[serde(with = "crate::stats::hist_serde")]
    #[schemars(with = "String")]
    pub subscribe_latency: Histogram,
    /// Re-verification → the subscriber's first acknowledged delivery after it, µs.
    #[serde(with = "crate::stats::hist_serde")]
    #[schemars(with = "String")]
    pub time_to_first_delivery: Histogram,
    /// Verified unsubscribes and re-subscriptions per second since the level's measured start
    /// (the churn events on the delivery timeline); absent when none (TOTAL).
    #[serde(skip_serializing_if = "ChurnSeconds::is_empty")]
    pub per_second: ChurnSeconds,
}

/// Churn events per second of a level, keyed like the delivery series: second `s` is
/// `[origin + s, origin + s + 1)`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChurnSeconds {
    /// Unsubscribes the hub verified in the second.
    pub unsubscribed: Vec<u64>,
    /// Re-subscriptions the hub verified in the second.
    pub resubscribed: Vec<u64>,
}

impl ChurnSeconds {
    /// Count one event in `series` at second `s` (the series grows as needed).
    pub fn bump(series: &mut Vec<u64>, s: usize, n: u64) {
        if series.len() <= s {
            series.resize(s + 1, 0);
        }
        series[s] += n;
    }

    /// Whether no second has anything.
    pub fn is_empty(&self) -> bool {
        self.unsubscribed.is_empty() && self.resubscribed.is_empty()
    }
}

impl AddAssign<&ChurnSeconds> for ChurnSeconds {
    fn add_assign(&mut self, o: &ChurnSeconds) {
        for (mine, theirs) in [
            (&mut self.unsubscribed, &o.unsubscribed),
            (&mut self.resubscribed, &o.resubscribed),
        ] {
            for (s, n) in theirs.iter().enumerate() {
                ChurnSeconds::bump(mine, s, *n);
            }
        }
    }
}

impl Default for ChurnStats {
    fn default() -> Self {
        ChurnStats {
            unsubscribed: 0,
            resubscribed: 0,
            failed: 0,
            skipped: 0,
            after_unsubscribe: 0,
            ambiguous: 0,
            subscribe_latency: new_histogram(),
            time_to_first_delivery: new_histogram(),
            per_second: ChurnSeconds::default(),
        }
    }
}

impl AddAssign<&ChurnStats> for ChurnStats {
    fn add_assign(&mut self, o: &ChurnStats) {
        self.unsubscribed += o.unsubscribed;
        self.resubscribed += o.resubscribed;
        self.failed += o.failed;
        self.skipped += o.skipped;
        self.after_unsubscribe += o.after_unsubscribe;
        self.ambiguous += o.ambiguous;
        // Same layout and auto-resize: adding cannot fail.
        let _ = self.subscribe_latency.add(&o.subscribe_latency);
        let _ = self.time_to_first_delivery.add(&o.time_to_first_delivery);
        self.per_second += &o.per_second;
    }
}
