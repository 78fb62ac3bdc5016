//! What a level's observers saw, as the report carries it: the server's series
//! (`--server-metrics`, `--server-query`), the generator's own health, and the knee's
//! correlated series. Plain data; `observe/` fills it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The server's series over one level.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerLevel {
    /// Per source: scrapes, failures and skipped lines during the level.
    pub sources: Vec<SourceHealth>,
    /// One entry per source and series seen during the level, sorted by source, name, labels.
    pub series: Vec<ServerSeries>,
}

/// How one metrics source answered during a level.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SourceHealth {
    /// The source as shown: `host:port/path` (never credentials), or `promql`.
    pub source: String,
    /// Scrapes (or query rounds) that answered.
    pub scrapes: u64,
    /// Scrapes that failed (no answer, non-2xx, a query error).
    pub failures: u64,
    /// Exposition lines that could not be read and were skipped.
    pub malformed_lines: u64,
    /// The first failure's reason, one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
}

/// One server series over one level (a row of `server.csv`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerSeries {
    /// Where it came from (see [`SourceHealth::source`]).
    pub source: String,
    /// The metric name (`--server-query`: the NAME given).
    pub series: String,
    /// `{k="v",…}`, sorted by label name; empty without labels.
    pub labels: String,
    /// `counter`, `gauge` or `untyped`.
    pub kind: String,
    /// Samples taken in the level (its first and last are at the level's start and end).
    pub samples: u64,
    /// Counters: the increase from the level's first to its last sample, a reset counted as a
    /// restart from zero. Untyped: last − first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<f64>,
    /// Counters and untyped: `delta` per second between the first and last sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Gauges and untyped: the smallest sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// Gauges and untyped: the mean of the samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
    /// Gauges and untyped: the largest sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// Gauges and untyped: the last sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<f64>,
    /// Samples in time order as (seconds since the level started, value), for the HTML chart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub points: Vec<(f64, f64)>,
}

impl ServerSeries {
    /// The one figure that stands for this series in a level: a counter's rate, else the max.
    pub fn headline(&self) -> Option<f64> {
        match self.kind.as_str() {
            "counter" => self.rate,
            _ => self.max,
        }
    }

    /// What [`Self::headline`] is, for a reader: "rate" or "max".
    pub fn headline_name(&self) -> &'static str {
        match self.kind.as_str() {
            "counter" => "rate",
            _ => "max",
        }
    }
}

/// The generator's own health over one level.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GeneratorLevel {
    /// CPU time hubload used (user + system), seconds.
    pub cpu_s: f64,
    /// Cores hubload may use: the cgroup's CPU quota, else the CPUs it may run on.
    pub allowance_cores: f64,
    /// Where `allowance_cores` came from: `cgroup v2`, `cgroup v1` or `cpus`.
    pub allowance_source: String,
    /// `cpu_s` over the level's wall time × `allowance_cores` (1.0 = all of it).
    pub cpu_ratio: f64,
    /// How late a 1 ms ticker on its own thread woke, p99, beyond the same p99 measured idle
    /// before the first level (timer slack is not scheduling delay), µs.
    pub sched_delay_p99_us: u64,
    /// The idle p99 lateness that was subtracted, µs.
    pub sched_baseline_p99_us: u64,
    /// Open model: sends that started 1 ms or more after their intended time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_sends: Option<u64>,
    /// Why the level is generator-bound; empty when it is not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bound_because: Vec<String>,
}

/// At the first level that broke: the server series that changed most against the level
/// before it. A correlation, not a proven cause.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KneeSeries {
    /// The level that broke.
    pub level: String,
    /// The level it is compared with.
    pub previous: String,
    /// Why this level counts as broken (the first failing threshold, or the capacity finder).
    pub broke_because: String,
    /// Up to three series, the largest relative change first.
    pub series: Vec<KneeChange>,
}

/// One series' change between two levels.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KneeChange {
    pub source: String,
    pub series: String,
    pub labels: String,
    /// `rate` (counters) or `max` (gauges, untyped).
    pub figure: String,
    pub before: f64,
    pub after: f64,
    /// |after − before| / |before| (∞ from zero), as a ratio.
    pub relative_change: f64,
}

impl KneeSeries {
    /// One line for the table and the HTML, e.g. `hub_inflight max 12 → 480; …`.
    pub fn line(&self) -> String {
        let parts: Vec<String> = self
            .series
            .iter()
            .map(|c| {
                format!(
                    "{}{} {} {} → {}",
                    c.series,
                    c.labels,
                    c.figure,
                    short(c.before),
                    short(c.after)
                )
            })
            .collect();
        format!(
            "at {} ({}), the server series that changed most against {} (a correlation, not a proven cause): {}",
            self.level,
            self.broke_because,
            self.previous,
            parts.join("; ")
        )
    }
}

/// A figure with at most three decimals and no trailing zeros.
fn short(x: f64) -> String {
    let s = format!("{x:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// How the pushes to `--prometheus-remote-write` went.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExporterReport {
    /// Pushes attempted (interval, level ends, run end).
    pub pushes: u64,
    /// Pushes the receiver did not store (no answer, non-2xx); the load never waited for them.
    pub push_failures: u64,
    /// The first failure, one line (no credentials).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
}
