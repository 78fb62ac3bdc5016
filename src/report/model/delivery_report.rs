//! The delivery side of the report: the subscription phase and each level's `delivery` section, built from the fleet's stats.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::latency::{latency, LatencyUs};
use super::server_timing::{server_timing_report, ServerTimingReport};
use crate::stats::Histogram;
use crate::subscriber::{
    ChurnSeconds, ChurnStats, DeliveryCounts, DeliveryLevelStats, DeliverySeconds,
    SubscriptionPhase,
};

/// A subscription (or unsubscription) phase, in subscribers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubscriptionReport {
    /// Requests sent.
    pub requested: u64,
    /// Answered 2xx (202).
    pub accepted: u64,
    /// Verified by the hub (challenge echoed).
    pub verified: u64,
    /// Denied by the hub (`hub.mode=denied`).
    pub denied: u64,
    /// Accepted but neither verified nor denied within the timeout.
    pub unverified: u64,
    /// Not accepted: another status or no answer.
    pub refused: u64,
    /// Seconds.
    pub duration_s: f64,
    /// The first refusal, with the hub's reason.
    pub first_error: Option<String>,
}

impl From<&SubscriptionPhase> for SubscriptionReport {
    fn from(p: &SubscriptionPhase) -> Self {
        SubscriptionReport {
            requested: p.requested,
            accepted: p.accepted,
            verified: p.verified,
            denied: p.denied,
            unverified: p.unverified,
            refused: p.refused,
            duration_s: p.duration_s,
            first_error: p.first_error.clone(),
        }
    }
}

/// The end-to-end histograms, V2+DEFLATE base64 like the publish ones (µs, same layout).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DeliveryHistograms {
    /// Publish start → delivery received.
    pub from_start: String,
    /// Accepted answer → delivery received.
    pub from_accepted: String,
}

/// One level's deliveries, as every subscriber saw them (docs/delivery.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DeliveryReport {
    /// Every subscriber's counters added up.
    pub counts: DeliveryCounts,
    /// Subscribers that answered 410.
    pub gone_subscribers: u64,
    /// Subscribers the hub had not verified.
    pub unverified_subscribers: u64,
    /// Publish start → delivery received, µs.
    pub e2e_us: LatencyUs,
    /// Accepted answer → delivery received, µs (no sample for `before_accepted` deliveries).
    pub e2e_from_accepted_us: LatencyUs,
    /// Delivered per second over the level's span plus the wait for its deliveries.
    pub delivered_per_sec: f64,
    /// Accepted × listening subscribers − delivered, when the level ended (before the grace).
    pub backlog_at_level_end: u64,
    /// The longest interval between two consecutive deliveries to one subscriber, µs, over
    /// every subscriber (0 when none got two): the time delivery stopped, e.g. while the
    /// broker behind a hub was away (docs/delivery.md).
    #[serde(default)]
    pub longest_gap_us: u64,
    /// Per subscriber, keyed `<topic index>/<subscriber index>`: in memory, and in
    /// `Report::subscribers_file`; inline only in summaries before `schema_version` 4, never
    /// written.
    #[serde(default, skip_serializing_if = "crate::report::model::never_written")]
    pub per_subscriber: BTreeMap<String, DeliveryCounts>,
    /// The two histograms, for exact merging and redrawing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histograms: Option<DeliveryHistograms>,
    /// Deliveries owed and delivered per second since the level's measured start (the
    /// backlog chart); absent in TOTAL and in summaries from before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_second: Option<DeliverySeconds>,
    /// Subscription churn (`--subscriber-churn`); absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub churn: Option<ChurnReport>,
    /// Broker subscribers: `counts.dead_lettered` by the message's `DeadLetterReason`
    /// (e.g. `MaxDeliveryCountExceeded`); absent when nothing was dead-lettered.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dead_letter_reasons: BTreeMap<String, u64>,
    /// Where the end-to-end latency went, per stage: the hub's `Hub-Timing` on each delivery
    /// (`hub`, `broker`, `queue`) and hubload's `rest` (end-to-end less those), over the
    /// deliveries counted delivered that carried it; absent when none did.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub stages: BTreeMap<String, ServerTimingReport>,
    /// `Hub-Timing` metrics that could not be read, counted and skipped (absent when 0).
    #[serde(default, skip_serializing_if = "super::rows::is_zero")]
    pub stages_malformed: u64,
}

/// A level's subscription churn (docs/delivery.md, "Subscription churn"): the statistics as
/// the subscribers recorded them and shard artifacts carry them, and the figures read off them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChurnReport {
    /// Verified unsubscribes and re-subscriptions, failed and skipped cycles, deliveries after
    /// an unsubscribe, ambiguous events, the two latency histograms and the churn per second.
    #[serde(flatten)]
    pub stats: ChurnStats,
    /// What is read off `stats` ([`ChurnFigures::of`]): written beside them, read back as
    /// written (summaries before the histograms were written have only these).
    #[serde(flatten)]
    pub derived: ChurnFigures,
}

/// What a churn section shows beside its statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChurnFigures {
    /// Subscribe request → the hub's verification, µs.
    pub subscribe_latency_us: LatencyUs,
    /// Re-verification → first delivery acknowledged after it, µs.
    pub time_to_first_delivery_us: LatencyUs,
    /// Re-subscriptions that got a first delivery (the samples of the line above).
    pub first_deliveries: u64,
}

impl ChurnFigures {
    /// The figures of `c`.
    pub fn of(c: &ChurnStats) -> Self {
        ChurnFigures {
            subscribe_latency_us: latency(&c.subscribe_latency, None),
            time_to_first_delivery_us: latency(&c.time_to_first_delivery, None),
            first_deliveries: c.time_to_first_delivery.len(),
        }
    }
}

impl From<&ChurnStats> for ChurnReport {
    fn from(c: &ChurnStats) -> Self {
        ChurnReport {
            stats: c.clone(),
            derived: ChurnFigures::of(c),
        }
    }
}

/// What a level's subscribers received, as the run path hands it to the record (and a shard
/// artifact carries it, whole).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LevelDelivery {
    /// The fleet's stats of the level.
    pub stats: DeliveryLevelStats,
    /// The level's span plus the wait for its deliveries, seconds.
    pub seconds: f64,
    /// Deliveries still missing when the level's last publish returned.
    pub backlog: u64,
}

impl std::ops::AddAssign<&LevelDelivery> for LevelDelivery {
    /// The TOTAL row: counts and histograms add, seconds add, the backlog is the last level's;
    /// no per-second series (each level's counts from its own start).
    fn add_assign(&mut self, o: &LevelDelivery) {
        self.stats += &o.stats;
        self.stats.seconds = DeliverySeconds::default();
        self.stats.quiet_seconds.clear();
        self.stats.quiet_lost.clear();
        if let Some(c) = &mut self.stats.churn {
            c.per_second = ChurnSeconds::default();
        }
        self.seconds += o.seconds;
        self.backlog = o.backlog;
    }
}

impl From<&LevelDelivery> for DeliveryReport {
    fn from(l: &LevelDelivery) -> Self {
        delivery_report(&l.stats, l.seconds, l.backlog)
    }
}

fn encode(name: &'static str, h: &Histogram) -> String {
    crate::stats::to_base64(h)
        .unwrap_or_else(|e| panic!("{name}: hubload histograms serialize: {e}"))
}

/// The `delivery` section of a level: `seconds` is the level's span plus the close wait;
/// `backlog` is what was still missing when the level's last publish returned.
pub fn delivery_report(s: &DeliveryLevelStats, seconds: f64, backlog: u64) -> DeliveryReport {
    DeliveryReport {
        counts: s.counts,
        gone_subscribers: s.gone_subscribers,
        unverified_subscribers: s.unverified_subscribers,
        e2e_us: latency(&s.e2e_from_start, None),
        e2e_from_accepted_us: latency(&s.e2e_from_accepted, None),
        delivered_per_sec: if seconds > 0.0 {
            s.counts.delivered as f64 / seconds
        } else {
            0.0
        },
        backlog_at_level_end: backlog,
        longest_gap_us: s.longest_gap_us,
        per_subscriber: s.per_subscriber.clone(),
        histograms: Some(DeliveryHistograms {
            from_start: encode("e2e_from_start", &s.e2e_from_start),
            from_accepted: encode("e2e_from_accepted", &s.e2e_from_accepted),
        }),
        per_second: (!s.seconds.is_empty()).then(|| s.seconds.clone()),
        churn: s.churn.as_ref().map(ChurnReport::from),
        dead_letter_reasons: s.dead_letter_reasons.clone(),
        stages: server_timing_report(&s.stages),
        stages_malformed: s.stages.malformed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::record;

    #[test]
    fn histograms_round_trip_and_rates() {
        let mut s = DeliveryLevelStats::default();
        s.counts.delivered = 40;
        for v in [1_000, 2_000, 3_000, 4_000] {
            record(&mut s.e2e_from_start, v);
        }
        let r = delivery_report(&s, 2.0, 7);
        assert_eq!(r.delivered_per_sec, 20.0);
        assert_eq!(r.backlog_at_level_end, 7);
        assert_eq!(r.e2e_us.min, 1_000);
        assert_eq!(r.e2e_from_accepted_us, LatencyUs::default());
        let h = r.histograms.unwrap();
        assert_eq!(
            crate::stats::from_base64(&h.from_start).unwrap(),
            s.e2e_from_start
        );
    }

    #[test]
    fn churn_is_written_as_its_stats_with_the_figures_and_read_from_a_summary_without_them() {
        let mut c = ChurnStats {
            unsubscribed: 5,
            resubscribed: 4,
            failed: 1,
            ..ChurnStats::default()
        };
        for v in [2_000, 4_000, 9_000] {
            record(&mut c.time_to_first_delivery, v);
        }
        record(&mut c.subscribe_latency, 700);
        ChurnSeconds::bump(&mut c.per_second.resubscribed, 2, 4);
        let r = ChurnReport::from(&c);
        assert_eq!(r.derived.first_deliveries, 3);
        let mut j = serde_json::to_value(&r).unwrap();
        assert_eq!(
            (&j["resubscribed"], &j["first_deliveries"]),
            (&4.into(), &3.into())
        );
        assert!(j["time_to_first_delivery"]
            .as_str()
            .unwrap()
            .starts_with("HISTF"));
        assert_eq!(serde_json::from_value::<ChurnReport>(j.clone()).unwrap(), r);
        // A summary before the histograms were written: the counts and the figures as written.
        let m = j.as_object_mut().unwrap();
        m.remove("time_to_first_delivery");
        m.remove("subscribe_latency");
        let old: ChurnReport = serde_json::from_value(j).unwrap();
        assert_eq!(old.derived, r.derived);
        assert_eq!((old.stats.unsubscribed, old.stats.failed), (5, 1));
        assert_eq!(old.stats.per_second, c.per_second);
        assert_eq!(old.stats.time_to_first_delivery.len(), 0);
        // Without churn events (TOTAL) there is no per_second.
        c.per_second = ChurnSeconds::default();
        let total = serde_json::to_value(ChurnReport::from(&c)).unwrap();
        assert!(total.get("per_second").is_none(), "{total}");
    }
}
