//! The comparison as data: the metrics compared, their values and deltas per level, and
//! which run each level exists in.

use crate::report::LevelReport;

/// A compared quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Mean latency, ms.
    Average,
    /// Median latency, ms.
    Median,
    /// 95th percentile latency, ms.
    P95,
    /// 99th percentile latency, ms.
    P99,
    /// Attempts not accepted, % of attempts.
    ErrorPct,
    /// Attempts per second.
    Throughput,
}

impl Metric {
    /// Every metric, in column order.
    pub const ALL: [Metric; 6] = [
        Metric::Average,
        Metric::Median,
        Metric::P95,
        Metric::P99,
        Metric::ErrorPct,
        Metric::Throughput,
    ];

    /// Column name, as in the aggregate report.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Average => "Average",
            Metric::Median => "Median",
            Metric::P95 => "95% Line",
            Metric::P99 => "99% Line",
            Metric::ErrorPct => "Error %",
            Metric::Throughput => "Throughput",
        }
    }

    /// The unit of the values ("ms", "%" or "/s").
    pub fn unit(self) -> &'static str {
        match self {
            Metric::ErrorPct => "%",
            Metric::Throughput => "/s",
            _ => "ms",
        }
    }

    /// The unit of an absolute delta: error rates change by percentage points.
    pub fn delta_unit(self) -> &'static str {
        match self {
            Metric::ErrorPct => "pp",
            other => other.unit(),
        }
    }

    /// Only throughput gets better as it grows.
    pub fn higher_is_better(self) -> bool {
        self == Metric::Throughput
    }

    /// True for the latency metrics.
    pub fn is_latency(self) -> bool {
        matches!(
            self,
            Metric::Average | Metric::Median | Metric::P95 | Metric::P99
        )
    }
}

/// One side of a compared level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metrics {
    /// Mean latency, ms.
    pub average_ms: f64,
    /// Median latency, ms.
    pub median_ms: f64,
    /// 95th percentile, ms.
    pub p95_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Attempts not accepted, %.
    pub error_pct: f64,
    /// Attempts per second.
    pub throughput: f64,
    /// Attempts.
    pub samples: u64,
}

impl Metrics {
    /// The compared values of one level.
    pub fn from_level(l: &LevelReport) -> Self {
        let ms = |us: u64| us as f64 / 1000.0;
        Metrics {
            average_ms: l.latency_us.mean / 1000.0,
            median_ms: ms(l.latency_us.p50),
            p95_ms: ms(l.latency_us.p95),
            p99_ms: ms(l.latency_us.p99),
            error_pct: l.error_pct,
            throughput: l.throughput,
            samples: l.samples,
        }
    }

    /// One metric's value.
    pub fn get(&self, m: Metric) -> f64 {
        match m {
            Metric::Average => self.average_ms,
            Metric::Median => self.median_ms,
            Metric::P95 => self.p95_ms,
            Metric::P99 => self.p99_ms,
            Metric::ErrorPct => self.error_pct,
            Metric::Throughput => self.throughput,
        }
    }
}

/// Candidate − baseline for one metric.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Delta {
    /// In the metric's unit (ms, percentage points, /s).
    pub abs: f64,
    /// Relative to the baseline, %; `None` when the baseline is 0 and the candidate is not.
    pub pct: Option<f64>,
}

impl Delta {
    /// The delta from `base` to `cand`.
    pub fn between(base: f64, cand: f64) -> Self {
        let abs = cand - base;
        let pct = if base != 0.0 {
            // abs × 100 / base (not abs / base × 100) keeps round cases exact: -200 of 2000 is -10.
            Some(abs * 100.0 / base)
        } else if abs == 0.0 {
            Some(0.0)
        } else {
            None
        };
        Delta { abs, pct }
    }
}

/// Which runs a level appears in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    Both,
    BaselineOnly,
    CandidateOnly,
}

impl Presence {
    /// "both", "baseline only", "candidate only".
    pub fn as_str(self) -> &'static str {
        match self {
            Presence::Both => "both",
            Presence::BaselineOnly => "baseline only",
            Presence::CandidateOnly => "candidate only",
        }
    }
}

/// One level of the comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelComparison {
    /// The level label both runs share ("200", "500/s", "TOTAL").
    pub label: String,
    pub baseline: Option<Metrics>,
    pub candidate: Option<Metrics>,
}

impl LevelComparison {
    /// Which runs have this level.
    pub fn presence(&self) -> Presence {
        match (&self.baseline, &self.candidate) {
            (Some(_), None) => Presence::BaselineOnly,
            (None, Some(_)) => Presence::CandidateOnly,
            _ => Presence::Both,
        }
    }

    /// The delta of one metric, when both runs have the level.
    pub fn delta(&self, m: Metric) -> Option<Delta> {
        match (&self.baseline, &self.candidate) {
            (Some(b), Some(c)) => Some(Delta::between(b.get(m), c.get(m))),
            _ => None,
        }
    }
}

/// Two runs compared level by level.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// How the baseline is named in output (default: its start time and target URL).
    pub baseline_name: String,
    /// How the candidate is named in output.
    pub candidate_name: String,
    /// "Concurrency" or "Rate", for the first column.
    pub level_title: String,
    /// Levels in order; a level of only one run is still listed.
    pub levels: Vec<LevelComparison>,
    /// The TOTAL rows, when both runs have one.
    pub total: Option<LevelComparison>,
}

impl Comparison {
    /// The levels, then TOTAL.
    pub fn rows(&self) -> impl Iterator<Item = &LevelComparison> {
        self.levels.iter().chain(self.total.as_ref())
    }
}
