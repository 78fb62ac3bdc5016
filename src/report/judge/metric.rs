//! The one metric type: what a gate (`--threshold`, `--slo`, `compare --fail-if`) measures and
//! what a comparison shows, with every spelling a rule may use, its unit and its kind.

use serde::Serialize;

use crate::report::model::LevelReport;

/// A measured quantity of a level: what a rule judges and what `compare` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Mean latency.
    Avg,
    /// A latency percentile (50, 90, 95, 99; 99.9 as 999).
    P(u16),
    /// Largest latency.
    Max,
    /// Attempts not accepted.
    Errors,
    /// Client-side timeouts.
    Timeouts,
    /// Achieved throughput, attempts per second.
    Rate,
    /// End-to-end latency (publish start → delivery received): mean.
    E2eAvg,
    /// End-to-end latency percentile (50, 90, 95, 99).
    E2eP(u16),
    /// End-to-end latency: largest.
    E2eMax,
    /// Deliveries owed (accepted publishes × listening subscribers); shown, not gated.
    Expected,
    /// Events delivered, each once; shown, not gated.
    Delivered,
    /// Accepted events not delivered within the grace. Like every delivery count, a count
    /// or a share of the level's expected deliveries.
    Lost,
    /// Expected deliveries missing when a signal cut the grace short (not lost); shown, not
    /// gated (docs/stopping.md).
    NotYetDelivered,
    /// Deliveries of an event already acknowledged.
    Duplicates,
    /// Deliveries again after the subscriber answered an error (the hub retrying).
    Redeliveries,
    /// First deliveries out of publish order.
    OutOfOrder,
    /// Deliveries with a bad `X-Hub-Signature`.
    BadSignature,
    /// Deliveries naming one of our events but not byte-identical to it.
    BodyMismatch,
    /// Deliveries of nothing hubload published (to that subscriber's topic).
    Unexpected,
    /// Deliveries still missing when the level's last publish returned.
    Backlog,
    /// Delivered per second over the level's span plus the wait for its deliveries.
    DeliveredRate,
    /// Subscription churn: re-verification → first delivery after it, 99th percentile.
    TimeToFirstDeliveryP99,
    /// Jain's index between tenants on goodput normalised by offered share, 1/n..=1
    /// (docs/fairness.md).
    TenantFairness,
    /// The largest tenant p99 ÷ the median tenant p99.
    TenantP99Spread,
    /// `--surge`: the quiet tenants' p99 during the surge ÷ before it, − 1, % (the
    /// isolation verdict's point estimate).
    QuietP99Increase,
    /// `--surge`: the quiet tenants' error % during the surge.
    QuietErrors,
    /// `--surge` with subscribers: the quiet tenants' delivery p99 during the surge ÷ before
    /// it, − 1, % (the delivery verdict's point estimate).
    QuietDeliveryP99Increase,
    /// `--surge` with subscribers: the quiet tenants' delivery loss % during the surge.
    QuietDeliveryLoss,
}

/// What `compare --fail-if` does with a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InCompare {
    /// A column of both runs: the rule bounds the delta, candidate − baseline.
    Delta,
    /// A figure of the candidate alone (fairness, isolation): the rule bounds its value, as
    /// `--threshold` does, at every level both runs have.
    Candidate,
    /// Not compared (compare has no column for it).
    No,
}

/// The one table of metric names: every spelling a rule may use (the first is the keyword),
/// and what `compare --fail-if` does with it.
pub const METRICS: &[(&[&str], Metric, InCompare)] = &[
    (&["avg", "average", "mean"], Metric::Avg, InCompare::Delta),
    (&["median", "p50"], Metric::P(50), InCompare::Delta),
    (&["p90"], Metric::P(90), InCompare::No),
    (&["p95"], Metric::P(95), InCompare::Delta),
    (&["p99"], Metric::P(99), InCompare::Delta),
    (&["p999", "p99.9"], Metric::P(999), InCompare::No),
    (&["max"], Metric::Max, InCompare::No),
    (
        &["errors", "error", "error%", "err"],
        Metric::Errors,
        InCompare::Delta,
    ),
    (&["timeouts"], Metric::Timeouts, InCompare::No),
    (
        &["rate", "throughput", "tps", "rps"],
        Metric::Rate,
        InCompare::Delta,
    ),
    (&["e2e_avg", "e2e_mean"], Metric::E2eAvg, InCompare::Delta),
    (
        &["e2e_p50", "e2e_median"],
        Metric::E2eP(50),
        InCompare::Delta,
    ),
    (&["e2e_p90"], Metric::E2eP(90), InCompare::Delta),
    (&["e2e_p95"], Metric::E2eP(95), InCompare::Delta),
    (&["e2e_p99"], Metric::E2eP(99), InCompare::Delta),
    (&["e2e_max"], Metric::E2eMax, InCompare::Delta),
    (&["lost"], Metric::Lost, InCompare::Delta),
    (
        &["duplicates", "dups"],
        Metric::Duplicates,
        InCompare::Delta,
    ),
    (&["redeliveries"], Metric::Redeliveries, InCompare::Delta),
    (&["out_of_order"], Metric::OutOfOrder, InCompare::Delta),
    (
        &["bad_signature", "bad_signatures"],
        Metric::BadSignature,
        InCompare::Delta,
    ),
    (&["body_mismatch"], Metric::BodyMismatch, InCompare::Delta),
    (&["unexpected"], Metric::Unexpected, InCompare::Delta),
    (&["backlog"], Metric::Backlog, InCompare::Delta),
    (
        &["delivered_rate", "delivered/s", "delivery_rate"],
        Metric::DeliveredRate,
        InCompare::Delta,
    ),
    (
        &["time_to_first_delivery_p99", "ttfd_p99"],
        Metric::TimeToFirstDeliveryP99,
        InCompare::No,
    ),
    (
        &["tenant_fairness", "fairness", "jain"],
        Metric::TenantFairness,
        InCompare::Candidate,
    ),
    (
        &["tenant_p99_spread"],
        Metric::TenantP99Spread,
        InCompare::Candidate,
    ),
    (
        &["quiet_p99_increase"],
        Metric::QuietP99Increase,
        InCompare::Candidate,
    ),
    (
        &["quiet_errors", "quiet_error"],
        Metric::QuietErrors,
        InCompare::Candidate,
    ),
    (
        &["quiet_delivery_p99_increase"],
        Metric::QuietDeliveryP99Increase,
        InCompare::Candidate,
    ),
    (
        &["quiet_delivery_loss"],
        Metric::QuietDeliveryLoss,
        InCompare::Candidate,
    ),
];

impl Metric {
    /// The aggregate report's columns that `compare` shows, in column order.
    pub const ALL: [Metric; 6] = [
        Metric::Avg,
        Metric::P(50),
        Metric::P(95),
        Metric::P(99),
        Metric::Errors,
        Metric::Rate,
    ];

    /// The delivery columns `compare` shows, in `delivery.csv`'s order (with Expected first).
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
        Metric::E2eAvg,
        Metric::E2eP(50),
        Metric::E2eP(90),
        Metric::E2eP(95),
        Metric::E2eP(99),
        Metric::E2eMax,
        Metric::DeliveredRate,
        Metric::Backlog,
    ];

    /// The metric a rule names (any spelling, any case).
    pub fn named(name: &str) -> Option<Metric> {
        let name = name.to_ascii_lowercase();
        METRICS
            .iter()
            .find(|(names, _, _)| names.contains(&name.as_str()))
            .map(|&(_, m, _)| m)
    }

    /// What `compare --fail-if` does with the metric (`No` for a column no rule names).
    pub fn in_compare(self) -> InCompare {
        METRICS
            .iter()
            .find(|(_, m, _)| *m == self)
            .map_or(InCompare::No, |&(_, _, c)| c)
    }

    /// Whether the metric is a latency (ms).
    pub fn is_latency(self) -> bool {
        matches!(
            self,
            Metric::Avg
                | Metric::P(_)
                | Metric::Max
                | Metric::E2eAvg
                | Metric::E2eP(_)
                | Metric::E2eMax
                | Metric::TimeToFirstDeliveryP99
        )
    }

    /// Whether the metric is one of a level's delivery counts (a whole number; under `%`, a
    /// share of the expected deliveries).
    pub fn is_delivery_count(self) -> bool {
        matches!(
            self,
            Metric::Expected
                | Metric::Delivered
                | Metric::Lost
                | Metric::NotYetDelivered
                | Metric::Duplicates
                | Metric::Redeliveries
                | Metric::OutOfOrder
                | Metric::BadSignature
                | Metric::BodyMismatch
                | Metric::Unexpected
                | Metric::Backlog
        )
    }

    /// Whether the metric is a count that a rule may also give as a share (`N` or `N%`).
    pub fn is_count(self) -> bool {
        matches!(self, Metric::Errors | Metric::Timeouts) || self.is_delivery_count()
    }

    /// Whether the metric is judged on a level's `fairness` section (two tenants or more).
    pub fn is_fairness(self) -> bool {
        matches!(self, Metric::TenantFairness | Metric::TenantP99Spread)
    }

    /// Whether the metric is judged on a level's `isolation` or `delivery_isolation`
    /// section (`--surge`).
    pub fn is_isolation(self) -> bool {
        matches!(
            self,
            Metric::QuietP99Increase
                | Metric::QuietErrors
                | Metric::QuietDeliveryP99Increase
                | Metric::QuietDeliveryLoss
        )
    }

    /// Whether the metric is judged on a level's `delivery_isolation` section (`--surge`
    /// with subscribers).
    pub fn is_delivery_isolation(self) -> bool {
        matches!(
            self,
            Metric::QuietDeliveryP99Increase | Metric::QuietDeliveryLoss
        )
    }

    /// Whether the metric is read from a level's `delivery` section (`--subscribers`): the
    /// e2e latencies, the delivered rate, churn's time to first delivery, and the counts.
    pub fn is_delivery(self) -> bool {
        match self {
            Metric::E2eAvg | Metric::E2eP(_) | Metric::E2eMax | Metric::DeliveredRate => true,
            Metric::TimeToFirstDeliveryP99 => true,
            other => other.is_delivery_count(),
        }
    }

    /// The fairness or isolation figure of a row (`None` for another metric, and when the
    /// row has no such section or no such figure): the one reader both `--threshold` and
    /// compare's candidate rules use.
    pub fn figure(self, row: &LevelReport) -> Option<f64> {
        let f = row.fairness.as_ref();
        let i = row.isolation.as_ref();
        let d = row.delivery_isolation.as_ref();
        match self {
            Metric::TenantFairness => f.and_then(|f| f.jain_index),
            Metric::TenantP99Spread => f.and_then(|f| f.p99_spread),
            Metric::QuietP99Increase => i.and_then(|i| i.p99_increase_pct),
            Metric::QuietErrors => i.map(|i| i.surge.error_pct),
            Metric::QuietDeliveryP99Increase => d.and_then(|d| d.p99_increase_pct),
            Metric::QuietDeliveryLoss => d.map(|d| d.surge.error_pct),
            _ => None,
        }
    }

    /// The canonical name: `avg`, `median`, `p95`, `p99.9`, `errors`, `throughput`, ….
    pub fn keyword(self) -> &'static str {
        match self {
            Metric::Avg => "avg",
            Metric::P(50) => "median",
            Metric::P(90) => "p90",
            Metric::P(95) => "p95",
            Metric::P(99) => "p99",
            Metric::P(_) => "p99.9",
            Metric::Max => "max",
            Metric::Errors => "errors",
            Metric::Timeouts => "timeouts",
            Metric::Rate => "throughput",
            Metric::E2eAvg => "e2e_avg",
            Metric::E2eP(50) => "e2e_p50",
            Metric::E2eP(90) => "e2e_p90",
            Metric::E2eP(95) => "e2e_p95",
            Metric::E2eP(_) => "e2e_p99",
            Metric::E2eMax => "e2e_max",
            Metric::Expected => "expected",
            Metric::Delivered => "delivered",
            Metric::Lost => "lost",
            Metric::NotYetDelivered => "not_yet_delivered",
            Metric::Duplicates => "duplicates",
            Metric::Redeliveries => "redeliveries",
            Metric::OutOfOrder => "out_of_order",
            Metric::BadSignature => "bad_signature",
            Metric::BodyMismatch => "body_mismatch",
            Metric::Unexpected => "unexpected",
            Metric::Backlog => "backlog",
            Metric::DeliveredRate => "delivered_rate",
            Metric::TimeToFirstDeliveryP99 => "time_to_first_delivery_p99",
            Metric::TenantFairness => "tenant_fairness",
            Metric::TenantP99Spread => "tenant_p99_spread",
            Metric::QuietP99Increase => "quiet_p99_increase",
            Metric::QuietErrors => "quiet_errors",
            Metric::QuietDeliveryP99Increase => "quiet_delivery_p99_increase",
            Metric::QuietDeliveryLoss => "quiet_delivery_loss",
        }
    }

    /// The column name in the aggregate report, `delivery.csv` and compare's tables.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Avg => "Average",
            Metric::P(50) => "Median",
            Metric::P(90) => "90% Line",
            Metric::P(95) => "95% Line",
            Metric::P(99) => "99% Line",
            Metric::P(_) => "99.9% Line",
            Metric::Max => "Max",
            Metric::Errors => "Error %",
            Metric::Timeouts => "Timeouts",
            Metric::Rate => "Throughput",
            Metric::E2eAvg => "E2E Average",
            Metric::E2eP(50) => "E2E Median",
            Metric::E2eP(90) => "E2E 90%",
            Metric::E2eP(95) => "E2E 95%",
            Metric::E2eP(_) => "E2E 99%",
            Metric::E2eMax => "E2E Max",
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
            Metric::Backlog => "Backlog at level end",
            Metric::DeliveredRate => "Delivered rate",
            Metric::TimeToFirstDeliveryP99 => "Time to first delivery 99%",
            Metric::TenantFairness => "Jain's index",
            Metric::TenantP99Spread => "Tenant p99 spread",
            Metric::QuietP99Increase => "Quiet p99 increase",
            Metric::QuietErrors => "Quiet error %",
            Metric::QuietDeliveryP99Increase => "Quiet delivery p99 increase",
            Metric::QuietDeliveryLoss => "Quiet delivery loss %",
        }
    }

    /// The unit of a shown value ("ms", "%", "/s", or "" for a count or an index).
    pub fn unit(self) -> &'static str {
        match self {
            m if m.is_isolation() => "%",
            Metric::Errors => "%",
            Metric::Rate | Metric::DeliveredRate => "/s",
            m if m.is_latency() => "ms",
            _ => "",
        }
    }

    /// The unit of an absolute delta: error rates change by percentage points.
    pub fn delta_unit(self) -> &'static str {
        match self {
            Metric::Errors | Metric::QuietErrors | Metric::QuietDeliveryLoss => "pp",
            other => other.unit(),
        }
    }

    /// Throughput, the delivered rate, deliveries and Jain's index get better as they grow.
    pub fn higher_is_better(self) -> bool {
        matches!(
            self,
            Metric::Rate | Metric::DeliveredRate | Metric::Delivered | Metric::TenantFairness
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_names_its_metric_in_any_case() {
        for (names, metric, _) in METRICS {
            for name in *names {
                assert_eq!(Metric::named(name), Some(*metric), "{name}");
                assert_eq!(Metric::named(&name.to_ascii_uppercase()), Some(*metric));
            }
        }
        // The columns compare shows but no rule takes.
        for m in [Metric::Expected, Metric::Delivered, Metric::NotYetDelivered] {
            assert_eq!(Metric::named(m.keyword()), None, "{m:?}");
        }
    }

    #[test]
    fn compare_gates_every_column_it_shows_but_the_ungated_three() {
        for m in Metric::ALL.iter().chain(&Metric::DELIVERY) {
            let gated = !matches!(
                m,
                Metric::Expected | Metric::Delivered | Metric::NotYetDelivered
            );
            assert_eq!(m.in_compare() == InCompare::Delta, gated, "{m:?}");
        }
    }
}
