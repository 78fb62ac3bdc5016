//! The `Report`: the one serializable document every reporter reads (and `summary.json` is).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::kind::{Model, TargetKind};
use crate::result::Class;
use crate::stats::{LevelStats, TimelineBucket};
use crate::targets::PhaseResult;
use crate::verdict::{CapacityResult, Verdict, WhatIfTable};

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
    /// The topic registration phase.
    pub registration: Option<PhaseReport>,
    /// The deregistration phase (`--deregister`).
    pub deregistration: Option<PhaseReport>,
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
            registration: None,
            deregistration: None,
            levels: Vec::new(),
            total: None,
            verdicts: Vec::new(),
            rate_checks: Vec::new(),
            what_if: None,
            capacity: None,
            servicebus: None,
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
            duration_s: p.duration_s,
            first_error: p.first_error.clone(),
        }
    }
}

/// Latency summary in µs, from the HdrHistogram (percentiles) and exact counters (min, max, mean).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LatencyUs {
    pub mean: f64,
    pub min: u64,
    pub p50: u64,
    pub p90: u64,
    pub p95: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
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
    /// The first failure of each class in this level (class name → status and the hub's
    /// reason, as one line). Absent from summaries written before it existed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub first_failures: BTreeMap<String, String>,
    /// The raw statistics, for reporters that need histograms. Not serialized.
    #[serde(skip)]
    pub stats: Option<LevelStats>,
}
