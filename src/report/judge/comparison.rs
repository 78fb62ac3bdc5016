//! The comparison of two runs as data: the metrics compared, their values and deltas per
//! level, and which run each level exists in. `fail_if` judges it; `compare` builds and
//! renders it.

use crate::report::judge::metric::Metric;
use crate::report::model::delivery_report::DeliveryReport;
use crate::report::model::LevelReport;
use crate::subscriber::DeliveryCounts;

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

    /// One delivery metric's value; `None` for another metric.
    fn get(&self, m: Metric) -> Option<f64> {
        let c = &self.counts;
        let n = match m {
            Metric::E2eAvg => return Some(self.e2e_ms[0]),
            Metric::E2eP(50) => return Some(self.e2e_ms[1]),
            Metric::E2eP(90) => return Some(self.e2e_ms[2]),
            Metric::E2eP(95) => return Some(self.e2e_ms[3]),
            Metric::E2eP(99) => return Some(self.e2e_ms[4]),
            Metric::E2eMax => return Some(self.e2e_ms[5]),
            Metric::DeliveredRate => return Some(self.delivered_per_sec),
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
            _ => return None,
        };
        Some(n as f64)
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
    /// Jain's index between tenants (`Metric::figure`; `None` without one, as below).
    pub tenant_fairness: Option<f64>,
    /// The largest tenant p99 ÷ the median tenant p99.
    pub tenant_p99_spread: Option<f64>,
    /// `--surge`: the quiet tenants' p99 increase during the surge, %.
    pub quiet_p99_increase: Option<f64>,
    /// `--surge`: the quiet tenants' error % during the surge.
    pub quiet_errors: Option<f64>,
    /// `--surge` with subscribers: the quiet tenants' delivery p99 increase, %.
    pub quiet_delivery_p99_increase: Option<f64>,
    /// `--surge` with subscribers: the quiet tenants' delivery loss % during the surge.
    pub quiet_delivery_loss: Option<f64>,
}

impl Metrics {
    /// The compared values of one level.
    pub fn from_level(l: &LevelReport) -> Self {
        let ms = |us: u64| us as f64 / 1000.0;
        Metrics {
            average_ms: l.derived.latency_us.mean / 1000.0,
            median_ms: ms(l.derived.latency_us.p50),
            p95_ms: ms(l.derived.latency_us.p95),
            p99_ms: ms(l.derived.latency_us.p99),
            error_pct: l.derived.error_pct,
            throughput: l.derived.throughput,
            samples: l.derived.samples,
            delivery: l.delivery.as_ref().map(DeliveryMetrics::from_report),
            tenant_fairness: Metric::TenantFairness.figure(l),
            tenant_p99_spread: Metric::TenantP99Spread.figure(l),
            quiet_p99_increase: Metric::QuietP99Increase.figure(l),
            quiet_errors: Metric::QuietErrors.figure(l),
            quiet_delivery_p99_increase: Metric::QuietDeliveryP99Increase.figure(l),
            quiet_delivery_loss: Metric::QuietDeliveryLoss.figure(l),
        }
    }

    /// One metric's value; `None` for a delivery metric of a level without deliveries, a
    /// figure the level does not have, and a metric compare does not read.
    pub fn get(&self, m: Metric) -> Option<f64> {
        Some(match m {
            Metric::Avg => self.average_ms,
            Metric::P(50) => self.median_ms,
            Metric::P(95) => self.p95_ms,
            Metric::P(99) => self.p99_ms,
            Metric::Errors => self.error_pct,
            Metric::Rate => self.throughput,
            Metric::TenantFairness => return self.tenant_fairness,
            Metric::TenantP99Spread => return self.tenant_p99_spread,
            Metric::QuietP99Increase => return self.quiet_p99_increase,
            Metric::QuietErrors => return self.quiet_errors,
            Metric::QuietDeliveryP99Increase => return self.quiet_delivery_p99_increase,
            Metric::QuietDeliveryLoss => return self.quiet_delivery_loss,
            delivery => return self.delivery.and_then(|d| d.get(delivery)),
        })
    }

    /// A delivery count as a share of the level's expected deliveries, %: as `--threshold`
    /// takes it, 0 % of nothing expected when the count is 0 too, infinitely large otherwise.
    pub fn share(&self, m: Metric) -> Option<f64> {
        let d = self.delivery?;
        let (n, of) = (d.get(m)?, d.counts.expected as f64);
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
    pub baseline: Option<crate::report::model::server_timing::ServerTimingReport>,
    pub candidate: Option<crate::report::model::server_timing::ServerTimingReport>,
}

impl StageRow {
    /// Candidate − baseline of `p` (µs), when both runs declared the stage.
    pub fn delta_us(
        &self,
        p: fn(&crate::report::model::server_timing::ServerTimingReport) -> u64,
    ) -> Option<i64> {
        match (&self.baseline, &self.candidate) {
            (Some(b), Some(c)) => Some(p(c) as i64 - p(b) as i64),
            _ => None,
        }
    }
}
