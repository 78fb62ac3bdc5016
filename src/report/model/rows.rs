//! The parts of the run's report below judging: a level's row (`LevelReport`) and its
//! sections, the phases, the hub's host and the Service Bus sender's figures. The whole
//! document, with the judging results, is `document::Report`.

pub use super::latency::LatencyUs;
use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::derived::Derived;
use super::topic_row::TopicReport;
use crate::result::Class;
use crate::stats::LevelStats;
use crate::targets::PhaseResult;

/// A WebSub run's view of the hub's host (`target` = "websub").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HubHost {
    /// Every address the load went to (those that accepted a connection at start), with
    /// the attempts each carried over every level.
    pub addresses: Vec<AddressAttempts>,
    /// TLS handshakes completed by the load's connections; `None` for an http hub.
    pub tls_handshakes: Option<Handshakes>,
    /// `--insecure`: the hub's certificate was not verified.
    pub tls_insecure: bool,
}

/// One address of the hub's host and its attempts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AddressAttempts {
    /// `ip:port`.
    pub address: String,
    /// Attempts sent to it.
    pub attempts: u64,
}

/// TLS handshakes: how many completed and their exact total time.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Handshakes {
    /// Handshakes completed.
    pub count: u64,
    /// Their total duration, µs (so `sum_us / count` is the exact mean).
    pub sum_us: u64,
}

/// What a Service Bus run adds to the report (`target` is Service Bus).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServiceBusInfo {
    /// Service Bus endpoint, `amqp(s)://host[:port]` (never the key).
    pub endpoint: String,
    /// Topic mapping: `per-topic` or `single:NAME`.
    pub topics: String,
    /// AMQP connections in the pool (`--sb-connections`).
    pub connections: u32,
    /// Links re-attached plus connections reopened after a drop, over the run.
    pub reconnects: u64,
    /// CBS put-tokens (first puts and refreshes) by the connections open at the end.
    pub token_puts: u64,
    /// Rejected sends per AMQP error condition (`rejected` class), over the run.
    pub conditions: BTreeMap<String, u64>,
    /// The embedded emulator's own counts, when the run started one.
    #[serde(default)]
    pub emulator: Option<EmulatorTotals>,
}

/// The embedded emulator's server-side counts, to reconcile with the client's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EmulatorTotals {
    /// Transfers settled *accepted*.
    pub accepted: u64,
    /// Transfers rejected with `com.microsoft:server-busy`.
    pub throttled: u64,
    /// Transfers rejected for want of a valid token.
    pub unauthorized: u64,
    /// Accepted transfers per Service Bus topic.
    pub accepted_per_topic: BTreeMap<String, u64>,
}

/// Open model: how close a level came to its target rate.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RateCheck {
    /// Level label.
    pub level: String,
    /// Target rate, events/s.
    pub target: f64,
    /// Events actually sent per second of measured time.
    pub achieved: f64,
    /// Sends scheduled (sent + dropped).
    pub scheduled: u64,
    /// Dropped because `--max-inflight` was reached.
    pub dropped: u64,
    /// Achieved below 95% of the target.
    pub below_target: bool,
}

/// The outcome of a registration or deregistration phase: the phase as the target recorded
/// it and shard artifacts carry it, and what is read off it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PhaseReport {
    /// Topics, per-class counts and reasons, already registered, duration, first error.
    #[serde(flatten)]
    pub result: PhaseResult,
    /// Accepted (from `counts`).
    pub accepted: u64,
    /// Failed: anything but accepted or already registered.
    pub failed: u64,
}

impl From<&PhaseResult> for PhaseReport {
    fn from(p: &PhaseResult) -> Self {
        PhaseReport {
            result: p.clone(),
            accepted: p.counts.get(Class::Accepted),
            failed: p.failed(),
        }
    }
}

/// One row of the aggregate table, plus what the JSON adds. Read through
/// `level_v4.rs` when written before `schema_version` 5.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(remote = "Self")]
pub struct LevelReport {
    /// Row label: the concurrency ("200"), the rate ("500/s"), or "TOTAL".
    pub label: String,
    /// Concurrency of the level (closed model).
    pub concurrency: Option<u64>,
    /// Target rate, events per second (open model).
    pub rate: Option<f64>,
    /// What the row shows, read off `stats` ([`Derived::of`]): written beside them, read back
    /// as written.
    #[serde(flatten)]
    pub derived: Derived,
    /// The level's statistics as the workers recorded them and shard artifacts hold them,
    /// less the per-topic vectors (those rows live in `Report::topics_file`). Rows before
    /// `schema_version` 5 held copies of some of them instead (`counts`, `timeline`,
    /// `histograms`, …): `stats` is rebuilt from those (`level_v4.rs`).
    #[serde(default)]
    pub stats: LevelStats,
    /// What a row before `schema_version` 5 held of `stats`; read, never written.
    #[serde(flatten)]
    #[schemars(skip)]
    pub(super) v4: super::level_v4::LevelV4,
    /// Per topic that saw an attempt: counts, p50/p99/max and the compact histogram. Held in
    /// memory and written to `Report::topics_file` as the level ends, never into summary.json;
    /// read from summaries written before that file (`schema_version` 1).
    #[serde(default, skip_serializing)]
    #[schemars(with = "Option<Vec<super::topic_row::TopicRowSchema>>")]
    pub topics: Vec<TopicReport>,
    /// Topics with an attempt, when `topics` holds only the worst of them: a run in progress
    /// keeps those (for report.html) once every row is in `topics_file`. Never serialized.
    #[serde(skip)]
    #[schemars(skip)]
    pub topics_with_attempts: Option<usize>,
    /// The first failure of each class in this level (class name → status and the hub's
    /// reason, as one line). Absent from summaries written before it existed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub first_failures: BTreeMap<String, String>,
    /// Websub dialect: the hub's fetches of hubload's topic server during this level (absent
    /// in the other dialect, in merged sharded runs and in summaries written before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_server: Option<crate::topic_server::TopicFetchStats>,
    /// `--topic-churn`: the level's topic deregistrations, re-registrations and expected
    /// refusals (docs/topic-churn.md); absent without topic churn and from TOTAL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_churn: Option<crate::stats::TopicChurnStats>,
    /// Seconds the level was paused through the control API (`--web`), left out of its
    /// rates (TOTAL: the levels' sum, left out of its rates too); absent when it never was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_s: Option<f64>,
    /// What the subscribers received (`--subscribers`); absent without subscribers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<super::delivery_report::DeliveryReport>,
    /// The server's series over this level (`--server-metrics`, `--server-query`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<super::observations::ServerLevel>,
    /// The generator's own CPU and scheduling delay over this level (absent from TOTAL, merged
    /// runs and summaries written before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<super::observations::GeneratorLevel>,
    /// hubload itself was the bottleneck of this level (see `generator.bound_because`): its
    /// latencies say more about the generator than about the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_bound: Option<bool>,
    /// Fairness between tenants (docs/fairness.md): shares, Jain's index, spreads, the worst
    /// tenants (TOTAL: over the whole run). Absent with fewer than two tenants with attempts
    /// and from older summaries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fairness: Option<crate::fairness::Fairness>,
    /// `--surge`: the quiet tenants before and during the surge, and the verdict
    /// (docs/fairness.md). Absent without a surge, on TOTAL, and when a window had no attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<crate::fairness::isolation::Isolation>,
    /// `--surge` with subscribers: the same verdict on the quiet tenants' delivery latency,
    /// by the second each event was sent in (no error figures). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_isolation: Option<crate::fairness::isolation::Isolation>,
}

impl LevelReport {
    /// Attempts per topic index, up to the last topic with one (from `topics`).
    pub fn topic_attempts(&self) -> Vec<u64> {
        let mut v = vec![0; self.topics.last().map_or(0, |t| t.topic + 1)];
        for t in &self.topics {
            v[t.topic] = t.stats.counts.total();
        }
        v
    }
}

/// For `skip_serializing_if`: a zero count is left out.
pub(super) fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Serialize for LevelReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        LevelReport::serialize(self, s)
    }
}

impl<'de> Deserialize<'de> for LevelReport {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut row = LevelReport::deserialize(d)?;
        if row.v4.is_present() {
            let v4 = std::mem::take(&mut row.v4);
            v4.into_stats(&row.derived, &mut row.stats)
                .map_err(serde::de::Error::custom)?;
        }
        Ok(row)
    }
}
