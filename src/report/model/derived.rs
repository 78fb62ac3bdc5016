//! A level's derived figures (JMeter's aggregate numbers, percentiles, rates, error %),
//! computed in one place from its `LevelStats`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::latency::{latency, LatencyUs};
use super::server_timing::{server_timing_report, ServerTimingReport};
use crate::result::Class;
use crate::stats::LevelStats;

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

/// What a level's row shows beside its statistics, all read off them by [`Derived::of`]
/// (and [`unpause`](Derived::unpause)). summary.json writes them beside `stats` for the
/// tables, `jq` and `hubload report`, which read them back as written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Derived {
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
    /// Attempts per second over first start → last end, less any time paused (`paused_s`).
    pub throughput: f64,
    /// KB (1024 B) per second received.
    pub received_kb_per_sec: f64,
    /// KB (1024 B) per second sent.
    pub sent_kb_per_sec: f64,
    /// Timeouts split by kind.
    pub timeouts: TimeoutSplit,
    /// Connection errors (refused + reset + closed).
    pub connection_errors: u64,
    /// Attempts per non-2xx HTTP status.
    pub status_codes: BTreeMap<String, u64>,
    pub events: EventSummary,
    /// First start → last end, seconds.
    pub span_s: f64,
    /// Latency of all attempts from their actual start (raw), µs.
    pub latency_us: LatencyUs,
    /// Latency from the intended start (coordinated-omission corrected), µs. Open model only.
    pub corrected_latency_us: Option<LatencyUs>,
    /// Latency of accepted attempts, µs.
    pub accepted_latency_us: LatencyUs,
    /// What the responses declared in `Server-Timing`, per metric name (absent when no
    /// response carried the header).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub server_timing: BTreeMap<String, ServerTimingReport>,
}

impl Derived {
    /// The figures of `s`; `open` adds the corrected latency.
    pub fn of(s: &LevelStats, open: bool) -> Derived {
        let samples = s.attempts();
        let exact = s.min_us.zip(s.max_us).map(|(a, b)| (a, b, s.sum_us));
        let lat = latency(&s.latency, exact);
        let span = s.span_secs();
        let per_sec = |x: f64| if span > 0.0 { x / span } else { 0.0 };
        let ms = |us: u64| us / 1000;
        Derived {
            samples,
            average_ms: s.sum_us.checked_div(samples).unwrap_or(0) / 1000,
            median_ms: ms(lat.p50),
            p90_ms: ms(lat.p90),
            p95_ms: ms(lat.p95),
            p99_ms: ms(lat.p99),
            min_ms: ms(lat.min),
            max_ms: ms(lat.max),
            error_pct: if samples == 0 {
                0.0
            } else {
                // Not `samples - accepted`: an expected refusal (topic churn) is no error.
                s.counts.sum_where(Class::is_error) as f64 * 100.0 / samples as f64
            },
            throughput: per_sec(samples as f64),
            received_kb_per_sec: per_sec(s.bytes_received as f64 / 1024.0),
            sent_kb_per_sec: per_sec(s.bytes_sent as f64 / 1024.0),
            timeouts: TimeoutSplit {
                connect: s.counts.get(Class::TimeoutConnect),
                pool_wait: s.counts.get(Class::TimeoutPoolWait),
                response: s.counts.get(Class::TimeoutResponse),
            },
            connection_errors: s.counts.sum_where(Class::is_conn_error),
            status_codes: s
                .status_codes
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
            events: EventSummary {
                total: s.events,
                succeeded: s.events - s.events_failed,
                failed: s.events_failed,
                retries: s.retries,
            },
            span_s: span,
            latency_us: lat,
            corrected_latency_us: open.then(|| latency(&s.corrected, None)),
            accepted_latency_us: latency(&s.accepted_latency, None),
            server_timing: server_timing_report(&s.server_timing),
        }
    }

    /// Leave `paused` seconds (paused through the control API) out of the rates.
    pub fn unpause(&mut self, paused: f64) {
        let (span, active) = (self.span_s, self.span_s - paused);
        if span > 0.0 && active > 0.0 {
            let k = span / active;
            self.throughput *= k;
            self.received_kb_per_sec *= k;
            self.sent_kb_per_sec *= k;
        }
    }
}
