//! The `Report`: the one serializable document every reporter reads (and `summary.json` is).

pub use super::latency::LatencyUs;
use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::kind::{Model, TargetKind};
use crate::result::Class;
use crate::stats::{LevelStats, SecondHistograms, TimelineBucket};
use crate::summary::verdict::{CapacityResult, Verdict, WhatIfTable};
use crate::targets::PhaseResult;

/// A whole run: metadata, phases, one row per level and the total.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Report {
    /// Always "hubload".
    pub tool: String,
    /// hubload's version.
    pub version: String,
    /// The protocol loaded ("websub" or "servicebus").
    pub target: TargetKind,
    /// Where the load went (hub URL or Service Bus endpoint; never a secret).
    pub target_url: String,
    /// "closed" (concurrency levels) or "open" (rate levels).
    pub model: Model,
    /// RFC 3339 UTC.
    pub started_at: String,
    /// RFC 3339 UTC; updated every time the report is rewritten.
    pub finished_at: String,
    /// True when the run was interrupted (Ctrl-C, SIGTERM) or is still running.
    pub partial: bool,
    /// The resolved run configuration, secrets redacted.
    pub config: serde_json::Value,
    /// Topic names, indexed as in `LevelReport::topic_attempts`.
    pub topics: Vec<String>,
    /// The tenant of each topic, indexed as `topics` (`null` for a topic shared by tenants);
    /// empty in summaries written before it existed and in merged runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topic_tenants: Vec<Option<u32>>,
    /// The topic registration phase.
    pub registration: Option<PhaseReport>,
    /// The deregistration phase (`--deregister`).
    pub deregistration: Option<PhaseReport>,
    /// The subscription phase (`--subscribers`); absent when there were no subscribers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription: Option<super::delivery_report::SubscriptionReport>,
    /// The unsubscription phase at the end (`--subscribers`, unless `--no-unsubscribe`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsubscription: Option<super::delivery_report::SubscriptionReport>,
    /// One entry per level, in run order.
    pub levels: Vec<LevelReport>,
    /// All levels merged (`TOTAL` row); throughput over the whole span.
    pub total: Option<LevelReport>,
    /// Thresholds judged (empty when none were given).
    #[serde(default)]
    pub verdicts: Vec<Verdict>,
    /// Open model: achieved vs target rate per level.
    #[serde(default)]
    pub rate_checks: Vec<RateCheck>,
    /// The timeout what-if table (`--what-if-timeouts`), levels then TOTAL.
    #[serde(default)]
    pub what_if: Option<WhatIfTable>,
    /// The capacity finder's result (`--find-capacity`).
    #[serde(default)]
    pub capacity: Option<CapacityResult<LevelReport>>,
    /// Service Bus runs: the sender's reconnects and rejection conditions.
    #[serde(default)]
    pub servicebus: Option<ServiceBusInfo>,
    /// WebSub runs: the hub's addresses in use and the TLS handshakes.
    #[serde(default)]
    pub hub: Option<HubHost>,
    /// What the run warned about that the numbers alone do not say: e.g. a level whose
    /// attempts the generator itself failed (`client_error`), not the hub.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// At the first level that broke, the server series that changed most against the level
    /// before it (a correlation; absent without server series or without a broken level).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee: Option<super::server::KneeSeries>,
    /// `--prometheus-remote-write`: pushes and push failures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exporter: Option<super::server::ExporterReport>,
}

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

impl Report {
    /// A report with no phases or levels yet: a WebSub run in progress (`partial`), by this
    /// hubload version.
    pub fn new_empty(model: Model, config: serde_json::Value, topics: Vec<String>) -> Self {
        Report {
            tool: "hubload".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            target: TargetKind::Websub,
            target_url: String::new(),
            model,
            started_at: String::new(),
            finished_at: String::new(),
            partial: true,
            config,
            topics,
            topic_tenants: Vec::new(),
            registration: None,
            deregistration: None,
            subscription: None,
            unsubscription: None,
            levels: Vec::new(),
            total: None,
            verdicts: Vec::new(),
            rate_checks: Vec::new(),
            what_if: None,
            capacity: None,
            servicebus: None,
            hub: None,
            warnings: Vec::new(),
            knee: None,
            exporter: None,
        }
    }
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

/// The outcome of a registration or deregistration phase.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PhaseReport {
    /// Topics attempted.
    pub topics: u64,
    /// Accepted.
    pub accepted: u64,
    /// Register only: answered 409, already registered (fine).
    pub already_registered: u64,
    /// Failed (anything else).
    pub failed: u64,
    /// Per-class counts.
    pub counts: BTreeMap<String, u64>,
    /// Per `class.reason` (`tls_error.unknown_issuer`, ...), only reasons seen.
    #[serde(default)]
    pub reasons: BTreeMap<String, u64>,
    /// Seconds.
    pub duration_s: f64,
    /// The first failure seen, if any.
    pub first_error: Option<String>,
}

impl From<&PhaseResult> for PhaseReport {
    fn from(p: &PhaseResult) -> Self {
        PhaseReport {
            topics: p.topics,
            accepted: p.counts.get(Class::Accepted),
            already_registered: p.already_registered,
            failed: p.failed(),
            counts: p.counts.to_map(),
            reasons: p.reasons.to_map(),
            duration_s: p.duration_s,
            first_error: p.first_error.clone(),
        }
    }
}

/// One topic in one level (`summary.json` `levels[].topics[]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TopicReport {
    /// Index into `Report::topics`.
    pub topic: usize,
    /// Attempts.
    pub attempts: u64,
    /// Attempts per class name (non-zero classes only).
    pub counts: BTreeMap<String, u64>,
    /// Nearest-rank percentiles from the topic's compact histogram (≤ 12.5% high), µs.
    pub p50_us: u64,
    pub p99_us: u64,
    /// Exact largest latency, µs.
    pub max_us: u64,
    /// Every non-empty bucket of the 200-bucket layout (README: "Per-topic statistics") as
    /// `bucket:count` pairs separated by spaces (`"3:12 17:40"`), so tenants roll up exactly.
    #[serde(with = "sparse_buckets")]
    #[schemars(with = "String")]
    pub buckets: Vec<(usize, u32)>,
}

/// `[(bucket, count)]` ⇄ `"bucket:count bucket:count"`: one short string per topic keeps
/// summary.json small (a pretty-printed array would take a line per number).
mod sparse_buckets {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[(usize, u32)], s: S) -> Result<S::Ok, S::Error> {
        let text: Vec<String> = v.iter().map(|(i, c)| format!("{i}:{c}")).collect();
        s.serialize_str(&text.join(" "))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(usize, u32)>, D::Error> {
        let text = String::deserialize(d)?;
        text.split_whitespace()
            .map(|pair| {
                pair.split_once(':')
                    .and_then(|(i, c)| Some((i.parse().ok()?, c.parse().ok()?)))
                    .ok_or_else(|| {
                        serde::de::Error::custom(format!("bucket pair {pair:?} is not INDEX:COUNT"))
                    })
            })
            .collect()
    }
}

/// A level's HdrHistograms in the HdrHistogram interchange encoding: V2, DEFLATE-compressed,
/// standard base64 (the payload of an interval log line; it begins `HISTF`). Values in µs;
/// layout: lowest 1 µs, 3 significant digits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReportHistograms {
    /// Latency of every attempt, actual start → end.
    pub latency: String,
    /// Latency from the intended start (open model only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrected: Option<String>,
    /// The same histograms per second of the level (the `latency.hlog` per-second intervals;
    /// absent from summaries written before them).
    #[serde(default, skip_serializing_if = "SecondHistograms::is_empty")]
    pub per_second: SecondHistograms,
}

/// Client-side timeouts by the deadline they hit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TimeoutSplit {
    pub connect: u64,
    pub pool_wait: u64,
    pub response: u64,
}

/// Events (one or more attempts each, with retries) as opposed to attempts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EventSummary {
    pub total: u64,
    pub succeeded: u64,
    pub failed: u64,
    /// Attempts beyond the first.
    pub retries: u64,
}

/// One row of the aggregate table, plus what the JSON adds.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LevelReport {
    /// Row label: the concurrency ("200"), the rate ("500/s"), or "TOTAL".
    pub label: String,
    /// Concurrency of the level (closed model).
    pub concurrency: Option<u64>,
    /// Target rate, events per second (open model).
    pub rate: Option<f64>,
    /// Attempts (JMeter "# Samples").
    pub samples: u64,
    /// Mean latency, ms, truncated (JMeter "Average").
    pub average_ms: u64,
    pub median_ms: u64,
    pub p90_ms: u64,
    pub p95_ms: u64,
    pub p99_ms: u64,
    pub min_ms: u64,
    pub max_ms: u64,
    /// Attempts not accepted, percent.
    pub error_pct: f64,
    /// Attempts per second over first start → last end.
    pub throughput: f64,
    /// KB (1024 B) per second received.
    pub received_kb_per_sec: f64,
    /// KB (1024 B) per second sent.
    pub sent_kb_per_sec: f64,
    /// Attempts per outcome class (every class present).
    pub counts: BTreeMap<String, u64>,
    /// Attempts per `class.reason` for the classes that carry one (`other`, `tls_error`,
    /// `client_error`, `stream_reset`, and `timeout_response.flow_control`); only reasons seen.
    #[serde(default)]
    pub reasons: BTreeMap<String, u64>,
    /// Timeouts split by kind.
    pub timeouts: TimeoutSplit,
    /// Connection errors (refused + reset + closed).
    pub connection_errors: u64,
    /// Attempts per non-2xx HTTP status.
    pub status_codes: BTreeMap<String, u64>,
    pub events: EventSummary,
    /// Open model: sends skipped because `--max-inflight` was reached.
    pub dropped: u64,
    /// First start → last end, seconds.
    pub span_s: f64,
    /// Earliest attempt start, µs since the Unix epoch (absent from older summaries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_start_us: Option<u64>,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Latency of all attempts from their actual start (raw), µs.
    pub latency_us: LatencyUs,
    /// Latency from the intended start (coordinated-omission corrected), µs. Open model only.
    pub corrected_latency_us: Option<LatencyUs>,
    /// Latency of accepted attempts, µs.
    pub accepted_latency_us: LatencyUs,
    /// Attempts per topic index (see `Report::topics`).
    pub topic_attempts: Vec<u64>,
    /// Per-second buckets since the level started.
    pub timeline: Vec<TimelineBucket>,
    /// Per topic that saw an attempt: counts, p50/p99/max and the compact histogram.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topics: Vec<TopicReport>,
    /// The level's latency histograms, so `hubload report` can redraw the distribution and
    /// rewrite `latency.hlog` (absent from summaries written before they were added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histograms: Option<ReportHistograms>,
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
    /// What the subscribers received (`--subscribers`); absent without subscribers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<super::delivery_report::DeliveryReport>,
    /// The server's series over this level (`--server-metrics`, `--server-query`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<super::server::ServerLevel>,
    /// The generator's own CPU and scheduling delay over this level (absent from TOTAL, merged
    /// runs and summaries written before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<super::server::GeneratorLevel>,
    /// hubload itself was the bottleneck of this level (see `generator.bound_because`): its
    /// latencies say more about the generator than about the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_bound: Option<bool>,
    /// What the responses declared in `Server-Timing`, per metric name (absent when no
    /// response carried the header).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub server_timing: BTreeMap<String, super::server_timing::ServerTimingReport>,
    /// `Server-Timing` metrics that could not be read, counted and skipped (absent when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub server_timing_malformed: u64,
    /// The raw statistics, for reporters that need histograms. Not serialized.
    #[serde(skip)]
    pub stats: Option<LevelStats>,
}

/// For `skip_serializing_if`: a zero count is left out.
pub(super) fn is_zero(n: &u64) -> bool {
    *n == 0
}
