//! Judging `--threshold` and `--slo` rules (parsed by `rules`) on a run's rows: per level, or
//! on TOTAL.

pub use super::rules::{Bound, Metric, Op, Scope, Threshold};
use crate::report::judge::verdict::Verdict;
use crate::report::model::delivery_report::DeliveryReport;
use crate::report::model::LevelReport;

/// The measured value `t` compares, from one row, in the bound's unit; NaN (the rule fails)
/// for a delivery metric on a row without a delivery section, and for a fairness metric on a
/// row without fairness figures (or without the figure: no goodput, a median p99 of 0).
pub fn actual(t: &Threshold, row: &LevelReport) -> f64 {
    if t.metric.is_isolation() || t.metric.is_fairness() {
        return t.metric.figure(row).unwrap_or(f64::NAN);
    }
    if t.metric.is_delivery() {
        return row
            .delivery
            .as_ref()
            .map_or(f64::NAN, |d| delivery_actual(t, d));
    }
    let ms = |us: u64| us as f64 / 1000.0;
    let share = |n: u64| match t.bound {
        Bound::Percent(_) if row.derived.samples == 0 => 0.0,
        Bound::Percent(_) => n as f64 * 100.0 / row.derived.samples as f64,
        _ => n as f64,
    };
    match t.metric {
        Metric::Avg => row.derived.latency_us.mean / 1000.0,
        Metric::P(50) => ms(row.derived.latency_us.p50),
        Metric::P(90) => ms(row.derived.latency_us.p90),
        Metric::P(95) => ms(row.derived.latency_us.p95),
        Metric::P(99) => ms(row.derived.latency_us.p99),
        Metric::P(_) => ms(row.derived.latency_us.p999),
        Metric::Max => ms(row.derived.latency_us.max),
        Metric::Errors => share(
            row.derived
                .samples
                .saturating_sub(not_errors(&row.stats.counts)),
        ),
        Metric::Timeouts => share(
            row.derived.timeouts.connect
                + row.derived.timeouts.pool_wait
                + row.derived.timeouts.response,
        ),
        Metric::Rate => row.derived.throughput,
        _ => unreachable!("delivery metrics are judged above"),
    }
}

/// A delivery metric from a level's delivery section: latencies in ms, the delivered rate per
/// second, counts as given or as a share of the level's expected deliveries (with nothing
/// expected, 0% when the count is 0 too and infinitely large otherwise).
fn delivery_actual(t: &Threshold, d: &DeliveryReport) -> f64 {
    let c = &d.counts;
    let ms = |us: u64| us as f64 / 1000.0;
    let of = c.expected;
    let share = |n: u64| match t.bound {
        Bound::Percent(_) if of == 0 && n == 0 => 0.0,
        Bound::Percent(_) if of == 0 => f64::INFINITY,
        Bound::Percent(_) => n as f64 * 100.0 / of as f64,
        _ => n as f64,
    };
    match t.metric {
        Metric::E2eAvg => d.e2e_us.mean / 1000.0,
        Metric::E2eP(50) => ms(d.e2e_us.p50),
        Metric::E2eP(90) => ms(d.e2e_us.p90),
        Metric::E2eP(95) => ms(d.e2e_us.p95),
        Metric::E2eP(_) => ms(d.e2e_us.p99),
        Metric::E2eMax => ms(d.e2e_us.max),
        Metric::DeliveredRate => d.delivered_per_sec,
        Metric::Lost => share(c.lost),
        Metric::Duplicates => share(c.duplicates),
        Metric::Redeliveries => share(c.redeliveries),
        Metric::OutOfOrder => share(c.out_of_order),
        Metric::BadSignature => share(c.bad_signature),
        Metric::BodyMismatch => share(c.body_mismatch),
        Metric::Unexpected => share(c.unexpected),
        Metric::Backlog => share(d.backlog_at_level_end),
        // Without churn, or with no first delivery after a re-subscription, nothing to judge:
        // the rule fails.
        Metric::TimeToFirstDeliveryP99 => d
            .churn
            .as_ref()
            .filter(|c| c.derived.first_deliveries > 0)
            .map_or(f64::NAN, |c| ms(c.derived.time_to_first_delivery_us.p99)),
        _ => unreachable!("not a delivery metric"),
    }
}

fn unit(t: &Threshold) -> &'static str {
    match (t.metric, t.bound) {
        (_, Bound::Ms(_)) => "ms",
        (_, Bound::Percent(_) | Bound::Relative(_)) => "%",
        (Metric::Rate | Metric::DeliveredRate, _) => "/s",
        _ => "",
    }
}

/// Judge `t` on one row.
pub fn check(t: &Threshold, row: &LevelReport) -> Verdict {
    let actual = actual(t, row);
    let bound = t.bound.value();
    Verdict {
        threshold: t.text.clone(),
        level: row.label.clone(),
        actual: match actual.is_nan() {
            true if t.metric.is_fairness() => {
                "no fairness figure (it needs two tenants with attempts, and goodput)".into()
            }
            true if t.metric.is_delivery_isolation() => {
                "no delivery isolation verdict (it needs --surge, --subscribers, and quiet deliveries before and during the surge)".into()
            }
            true if t.metric.is_isolation() => {
                "no isolation verdict (it needs --surge, and quiet attempts before and during the surge)".into()
            }
            true if t.metric == Metric::TimeToFirstDeliveryP99 => {
                "no re-subscription measured (run with --subscribers and --subscriber-churn)".into()
            }
            true => "no deliveries measured (run with --subscribers)".into(),
            false => format!("{actual:.3}{}", unit(t)),
        },
        bound: format!("{} {bound}{}", t.op.as_str(), unit(t)),
        passed: t.op.holds(actual, bound),
    }
}

/// Judge every threshold on the rows it applies to.
pub fn judge(
    thresholds: &[Threshold],
    levels: &[LevelReport],
    total: Option<&LevelReport>,
) -> Vec<Verdict> {
    let mut out = Vec::new();
    for t in thresholds {
        match t.scope {
            Scope::EachLevel => out.extend(levels.iter().map(|l| check(t, l))),
            Scope::Total => out.extend(total.map(|l| check(t, l))),
        }
    }
    out
}

/// Attempts of a row's classes that are no error: `accepted`, and `expected_refusal` (a
/// refusal `--topic-churn` caused; docs/gates.md).
fn not_errors(counts: &crate::stats::Counts) -> u64 {
    counts.sum_where(|c| !c.is_error())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::report::judge::known_latencies::stats;
    use crate::report::model::build::level_report;
    use crate::result::Outcome;

    #[test]
    fn verdicts_in_each_bound_unit() {
        // 4 attempts: 3 accepted at 10 ms, one 503 at 30 ms.
        let ms = Duration::from_millis;
        let s = stats(&[
            (ms(10), Outcome::Accepted, 3),
            (ms(30), Outcome::Http503, 1),
        ]);
        let row = level_report("7", Some(7), None, &s, false);
        let table: &[(&str, &str, &str, bool)] = &[
            ("max<30ms", "30.000ms", "< 30ms", false),
            ("max<=30ms", "30.000ms", "<= 30ms", true),
            ("errors<=25%", "25.000%", "<= 25%", true),
            ("errors<1", "1.000", "< 1", false),
            ("errors<2", "1.000", "< 2", true),
            ("timeouts<1%", "0.000%", "< 1%", true),
        ];
        for (text, actual, bound, passed) in table {
            let v = check(&text.parse().unwrap(), &row);
            assert_eq!(
                (
                    v.threshold.as_str(),
                    v.level.as_str(),
                    v.actual.as_str(),
                    v.bound.as_str(),
                    v.passed
                ),
                (*text, "7", *actual, *bound, *passed),
            );
        }
    }

    #[test]
    fn delivery_rules_judge_the_delivery_section() {
        use crate::report::model::delivery_report::delivery_report;
        let s = stats(&[(Duration::from_millis(10), Outcome::Accepted, 4)]);
        let mut row = level_report("4", Some(4), None, &s, false);
        let judge_row = |text: &str, row: &LevelReport| {
            let v = check(&text.parse().unwrap(), row);
            (v.actual, v.passed)
        };
        // No subscribers: a delivery rule cannot pass.
        assert_eq!(
            judge_row("lost=0", &row),
            (
                "no deliveries measured (run with --subscribers)".into(),
                false
            )
        );
        let mut d = crate::subscriber::DeliveryLevelStats::default();
        d.counts.expected = 1000;
        d.counts.delivered = 998;
        d.counts.lost = 2;
        d.counts.duplicates = 1;
        d.counts.redeliveries = 30;
        d.counts.out_of_order = 4;
        d.counts.bad_signature = 5;
        d.counts.body_mismatch = 6;
        d.counts.unexpected = 7;
        for v in [1_000, 2_000_000] {
            crate::stats::record(&mut d.e2e_from_start, v);
        }
        // 998 delivered over 4 s; 25 still missing when the last publish returned.
        row.delivery = Some(delivery_report(&d, 4.0, 25));
        // Shares are of the 1000 expected deliveries.
        let table: &[(&str, &str, bool)] = &[
            ("lost=0", "2.000", false),
            ("lost<1%", "0.200%", true),
            ("duplicates<0.1%", "0.100%", false),
            ("duplicates<=0.1%", "0.100%", true),
            ("duplicates<=1", "1.000", true),
            ("redeliveries<3%", "3.000%", false),
            ("redeliveries<=30", "30.000", true),
            ("out_of_order=0", "4.000", false),
            ("out_of_order<0.5%", "0.400%", true),
            ("bad_signature=0", "5.000", false),
            ("body_mismatch<1%", "0.600%", true),
            ("unexpected<=7", "7.000", true),
            ("backlog<25", "25.000", false),
            ("backlog<=2.5%", "2.500%", true),
            ("delivered_rate>=250", "249.500/s", false),
            ("delivered_rate>249", "249.500/s", true),
            ("e2e_max<2s", "2000.895ms", false), // the bucket top: 3 significant digits
            ("e2e_p50<2ms", "1.000ms", true),
            ("e2e_p99<2s", "2000.895ms", false),
        ];
        // The mean is the histogram's (HdrHistogram's own `mean`, of bucket values).
        let mean = format!("{:.3}ms", d.e2e_from_start.mean() / 1000.0);
        assert_eq!(judge_row("e2e_avg<=1001ms", &row), (mean, true));
        for (text, actual, passed) in table {
            assert_eq!(
                judge_row(text, &row),
                (actual.to_string(), *passed),
                "{text}"
            );
        }
        // Nothing expected (no subscriber verified): a share of nothing is 0% only for 0.
        let mut none = crate::subscriber::DeliveryLevelStats::default();
        none.counts.unexpected = 1;
        row.delivery = Some(delivery_report(&none, 1.0, 0));
        assert_eq!(judge_row("lost<1%", &row), ("0.000%".into(), true));
        assert_eq!(judge_row("unexpected<1%", &row), ("inf%".into(), false));
    }

    #[test]
    fn time_to_first_delivery_is_judged_only_with_first_deliveries_after_churn() {
        use crate::report::model::delivery_report::delivery_report;
        let s = stats(&[(Duration::from_millis(10), Outcome::Accepted, 2)]);
        let mut row = level_report("1", None, None, &s, false);
        let judge_row = |text: &str, row: &LevelReport| {
            let v = check(&text.parse().unwrap(), row);
            (v.actual, v.passed)
        };
        let mut d = crate::subscriber::DeliveryLevelStats::default();
        row.delivery = Some(delivery_report(&d, 1.0, 0));
        let no_churn = judge_row("time_to_first_delivery_p99<1s", &row);
        assert!(
            !no_churn.1 && no_churn.0.contains("--subscriber-churn"),
            "{no_churn:?}"
        );
        // Churn, re-subscriptions, but no first delivery yet: still nothing to judge (not 0 ms).
        let mut churn = crate::subscriber::ChurnStats {
            resubscribed: 2,
            ..Default::default()
        };
        d.churn = Some(churn.clone());
        row.delivery = Some(delivery_report(&d, 1.0, 0));
        assert!(!judge_row("ttfd_p99<1s", &row).1);
        for v in [3_000, 40_000] {
            crate::stats::record(&mut churn.time_to_first_delivery, v);
        }
        d.churn = Some(churn);
        row.delivery = Some(delivery_report(&d, 1.0, 0));
        assert_eq!(
            judge_row("time_to_first_delivery_p99<40ms", &row),
            ("40.031ms".into(), false)
        );
        assert_eq!(judge_row("ttfd_p99<=41ms", &row), ("40.031ms".into(), true));
    }

    #[test]
    fn total_scope_judges_the_total_row_only() {
        let s = stats(&[(Duration::from_millis(10), Outcome::Accepted, 2)]);
        let (a, b, total) = (
            level_report("1", None, None, &s, false),
            level_report("2", None, None, &s, false),
            level_report("TOTAL", None, None, &s, false),
        );
        let ts: Vec<Threshold> = ["p99<1s", "total:errors<1%"]
            .iter()
            .map(|t| t.parse().unwrap())
            .collect();
        let levels: Vec<String> = judge(&ts, &[a, b], Some(&total))
            .into_iter()
            .map(|v| v.level)
            .collect();
        assert_eq!(levels, ["1", "2", "TOTAL"]);
    }

    #[test]
    fn fairness_rules_judge_the_fairness_section() {
        use crate::fairness::figures;
        use crate::result::Class;
        use crate::stats::TopicStats;
        let s = stats(&[(Duration::from_millis(10), Outcome::Accepted, 4)]);
        let mut row = level_report("4", Some(4), None, &s, false);
        let judge_row = |text: &str, row: &LevelReport| {
            let v = check(&text.parse().unwrap(), row);
            (v.actual, v.passed)
        };
        // One tenant (no fairness section): the rule cannot pass.
        let none = "no fairness figure (it needs two tenants with attempts, and goodput)";
        assert_eq!(
            judge_row("tenant_fairness>0.5", &row),
            (none.to_string(), false)
        );
        // a: 10 accepted at 10 µs; b: 5 accepted and 5 503s at 12 µs. Jain's index 0.9
        // (fairness::tests); p99s 10 and 12 µs, median 11: spread 12/11.
        let tenant = |name: &str, parts: &[(Class, u64, u64)]| {
            let mut t = TopicStats::default();
            for &(c, us, n) in parts {
                (0..n).for_each(|_| t.record(c, us));
            }
            (name.to_string(), t)
        };
        row.fairness = figures(&[
            tenant("a", &[(Class::Accepted, 10, 10)]),
            tenant("b", &[(Class::Accepted, 12, 5), (Class::Http503, 12, 5)]),
        ]);
        assert_eq!(
            judge_row("tenant_fairness>0.95", &row),
            ("0.900".into(), false)
        );
        assert_eq!(judge_row("jain>=0.899", &row), ("0.900".into(), true));
        assert_eq!(
            judge_row("tenant_p99_spread<1.1", &row),
            ("1.091".into(), true)
        );
        assert_eq!(
            judge_row("tenant_p99_spread<1.05", &row),
            ("1.091".into(), false)
        );
        // Each level is judged; TOTAL only with `total:`.
        let t: Threshold = "total:tenant_fairness>0.95".parse().unwrap();
        assert_eq!(t.metric, Metric::TenantFairness);
        assert_eq!(t.bound, Bound::Number(0.95));
        let v = judge(&[t], std::slice::from_ref(&row), Some(&row));
        assert_eq!(v.len(), 1);
    }
}
