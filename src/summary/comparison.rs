//! The comparison of two runs as data: the metrics compared, their values and deltas per
//! level, and which run each level exists in. Below `judge`, which applies `--fail-if` to it
//! (`judge/fail_if.rs`); `compare` builds and renders it.

use crate::subscriber::DeliveryCounts;
use crate::summary::delivery_report::DeliveryReport;
use crate::summary::LevelReport;

/// A compared quantity: the aggregate report's columns, then (when both runs had
/// `--subscribers`) the delivery section's.
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
    /// Deliveries owed (accepted publishes × listening subscribers).
    Expected,
    /// Events delivered, each once.
    Delivered,
    /// Expected deliveries missing when the grace had passed.
    Lost,
    /// Expected deliveries missing when a signal cut the grace short (not lost).
    NotYetDelivered,
    /// Deliveries of an event already acknowledged.
    Duplicates,
    /// Deliveries again after an error answer (the hub retrying).
    Redeliveries,
    /// First deliveries out of publish order.
    OutOfOrder,
    /// Deliveries with a bad `X-Hub-Signature`.
    BadSignature,
    /// Deliveries not byte-identical to the event they name.
    BodyMismatch,
    /// Deliveries of nothing hubload published.
    Unexpected,
    /// End-to-end latency (publish start → delivery received): mean, ms.
    E2eAverage,
    /// End-to-end median, ms.
    E2eMedian,
    /// End-to-end 90th percentile, ms.
    E2eP90,
    /// End-to-end 95th percentile, ms.
    E2eP95,
    /// End-to-end 99th percentile, ms.
    E2eP99,
    /// End-to-end largest, ms.
    E2eMax,
    /// Delivered per second over the level's span plus the wait for its deliveries.
    DeliveredRate,
    /// Deliveries still missing when the level's last publish returned.
    Backlog,
}

impl Metric {
    /// The aggregate report's metrics, in column order.
    pub const ALL: [Metric; 6] = [
        Metric::Average,
        Metric::Median,
        Metric::P95,
        Metric::P99,
        Metric::ErrorPct,
        Metric::Throughput,
    ];

    /// The delivery metrics, in `delivery.csv`'s order (with Expected first).
    pub const DELIVERY: [Metric; 18] = [
        Metric::Expected,
        Metric::Delivered,
        Metric::Lost,
        Metric::NotYetDelivered,
        Metric::Duplicates,
        Metric::Redeliveries,
        Metric::OutOfOrder,
        Metric::BadSignature,
        Metric::BodyMismatch,
        Metric::Unexpected,
        Metric::E2eAverage,
        Metric::E2eMedian,
        Metric::E2eP90,
        Metric::E2eP95,
        Metric::E2eP99,
        Metric::E2eMax,
        Metric::DeliveredRate,
        Metric::Backlog,
    ];

    /// Column name, as in the aggregate report and `delivery.csv`.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Average => "Average",
            Metric::Median => "Median",
            Metric::P95 => "95% Line",
            Metric::P99 => "99% Line",
            Metric::ErrorPct => "Error %",
            Metric::Throughput => "Throughput",
            Metric::Expected => "Expected",
            Metric::Delivered => "Delivered",
            Metric::Lost => "Lost",
            Metric::NotYetDelivered => "Not yet delivered",
            Metric::Duplicates => "Duplicates",
            Metric::Redeliveries => "Redeliveries",
            Metric::OutOfOrder => "Out of order",
            Metric::BadSignature => "Bad signature",
            Metric::BodyMismatch => "Body mismatch",
            Metric::Unexpected => "Unexpected",
            Metric::E2eAverage => "E2E Average",
            Metric::E2eMedian => "E2E Median",
            Metric::E2eP90 => "E2E 90%",
            Metric::E2eP95 => "E2E 95%",
            Metric::E2eP99 => "E2E 99%",
            Metric::E2eMax => "E2E Max",
            Metric::DeliveredRate => "Delivered rate",
            Metric::Backlog => "Backlog at level end",
        }
    }

    /// The unit of the values ("ms", "%", "/s", or "" for a count).
    pub fn unit(self) -> &'static str {
        match self {
            Metric::ErrorPct => "%",
            Metric::Throughput | Metric::DeliveredRate => "/s",
            m if m.is_count() => "",
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

    /// Throughput, the delivered rate and deliveries get better as they grow.
    pub fn higher_is_better(self) -> bool {
        matches!(
            self,
            Metric::Throughput | Metric::DeliveredRate | Metric::Delivered
        )
    }

    /// True for the latency metrics (publish and end-to-end).
    pub fn is_latency(self) -> bool {
        self.unit() == "ms"
    }

    /// True for the delivery counts (whole numbers; a share of Expected under `%`).
    pub fn is_count(self) -> bool {
        let measured = matches!(
            self,
            Metric::E2eAverage
                | Metric::E2eMedian
                | Metric::E2eP90
                | Metric::E2eP95
                | Metric::E2eP99
                | Metric::E2eMax
                | Metric::DeliveredRate
        );
        self.is_delivery() && !measured
    }

    /// True for the metrics of a level's `delivery` section.
    pub fn is_delivery(self) -> bool {
        Metric::DELIVERY.contains(&self)
    }
}

/// The compared values of a level's `delivery` section.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeliveryMetrics {
    /// Every subscriber's counters added up.
    pub counts: DeliveryCounts,
    /// End-to-end latency, ms: mean, p50, p90, p95, p99, max.
    pub e2e_ms: [f64; 6],
    /// Delivered per second.
    pub delivered_per_sec: f64,
    /// Deliveries missing when the level's last publish returned.
    pub backlog: u64,
}

impl DeliveryMetrics {
    fn from_report(d: &DeliveryReport) -> Self {
        let ms = |us: u64| us as f64 / 1000.0;
        let e = &d.e2e_us;
        DeliveryMetrics {
            counts: d.counts,
            e2e_ms: [
                e.mean / 1000.0,
                ms(e.p50),
                ms(e.p90),
                ms(e.p95),
                ms(e.p99),
                ms(e.max),
            ],
            delivered_per_sec: d.delivered_per_sec,
            backlog: d.backlog_at_level_end,
        }
    }

    fn get(&self, m: Metric) -> f64 {
        let c = &self.counts;
        let n = match m {
            Metric::E2eAverage => return self.e2e_ms[0],
            Metric::E2eMedian => return self.e2e_ms[1],
            Metric::E2eP90 => return self.e2e_ms[2],
            Metric::E2eP95 => return self.e2e_ms[3],
            Metric::E2eP99 => return self.e2e_ms[4],
            Metric::E2eMax => return self.e2e_ms[5],
            Metric::DeliveredRate => return self.delivered_per_sec,
            Metric::Expected => c.expected,
            Metric::Delivered => c.delivered,
            Metric::Lost => c.lost,
            Metric::NotYetDelivered => c.not_yet_delivered,
            Metric::Duplicates => c.duplicates,
            Metric::Redeliveries => c.redeliveries,
            Metric::OutOfOrder => c.out_of_order,
            Metric::BadSignature => c.bad_signature,
            Metric::BodyMismatch => c.body_mismatch,
            Metric::Unexpected => c.unexpected,
            Metric::Backlog => self.backlog,
            publish => unreachable!("{publish:?} is not a delivery metric"),
        };
        n as f64
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
    /// The level's delivery section (`--subscribers`).
    pub delivery: Option<DeliveryMetrics>,
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
            delivery: l.delivery.as_ref().map(DeliveryMetrics::from_report),
        }
    }

    /// One metric's value; `None` for a delivery metric of a level without deliveries.
    pub fn get(&self, m: Metric) -> Option<f64> {
        Some(match m {
            Metric::Average => self.average_ms,
            Metric::Median => self.median_ms,
            Metric::P95 => self.p95_ms,
            Metric::P99 => self.p99_ms,
            Metric::ErrorPct => self.error_pct,
            Metric::Throughput => self.throughput,
            delivery => return self.delivery.map(|d| d.get(delivery)),
        })
    }

    /// A delivery count as a share of the level's expected deliveries, %: as `--threshold`
    /// takes it, 0 % of nothing expected when the count is 0 too, infinitely large otherwise.
    pub fn share(&self, m: Metric) -> Option<f64> {
        let d = self.delivery?;
        let (n, of) = (d.get(m), d.counts.expected as f64);
        Some(if of > 0.0 {
            n * 100.0 / of
        } else if n == 0.0 {
            0.0
        } else {
            f64::INFINITY
        })
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
            (Some(b), Some(c)) => Some(Delta::between(b.get(m)?, c.get(m)?)),
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
    /// Whether the baseline has a level with a `delivery` section (`--subscribers`).
    pub baseline_delivery: bool,
    /// Whether the candidate has one.
    pub candidate_delivery: bool,
    /// The `Server-Timing` stages per level both runs have (empty when neither declared one).
    pub server_timing: Vec<StageRow>,
}

impl Comparison {
    /// The levels, then TOTAL.
    pub fn rows(&self) -> impl Iterator<Item = &LevelComparison> {
        self.levels.iter().chain(self.total.as_ref())
    }

    /// The metrics shown: the aggregate report's, then the delivery ones when both runs have
    /// deliveries.
    pub fn metrics(&self) -> Vec<Metric> {
        let mut m = Metric::ALL.to_vec();
        if self.baseline_delivery && self.candidate_delivery {
            m.extend(Metric::DELIVERY);
        }
        m
    }
}

/// One stage of one level, in the runs that declared it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageRow {
    /// The level label ("8", "TOTAL").
    pub label: String,
    /// The metric name the server declared (`hub`, `broker`, …).
    pub name: String,
    pub baseline: Option<super::server_timing::ServerTimingReport>,
    pub candidate: Option<super::server_timing::ServerTimingReport>,
}

impl StageRow {
    /// Candidate − baseline of `p` (µs), when both runs declared the stage.
    pub fn delta_us(&self, p: fn(&super::server_timing::ServerTimingReport) -> u64) -> Option<i64> {
        match (&self.baseline, &self.candidate) {
            (Some(b), Some(c)) => Some(p(c) as i64 - p(b) as i64),
            _ => None,
        }
    }
}
