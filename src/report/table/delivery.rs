//! The terminal table's second block: what the subscribers received, one row per level.
//!
//! `NotYet` counts deliveries still owed when a signal cut the grace wait short: they are not
//! `Lost` (the hub was not given its grace), and a note under the block says so when any is.

use crate::align::align;
use crate::report::document::Report;
use crate::report::model::delivery_report::DeliveryReport;
use crate::report::precision::ms3;

/// The block's columns (report.html's delivery table has the same).
pub(crate) const HEAD: [&str; 17] = [
    "Level",
    "Expected",
    "Delivered",
    "Lost",
    "NotYet",
    "Dup",
    "Redeliv",
    "OutOrder",
    "BadSig",
    "BodyDiff",
    "Unexpect",
    "E2E avg",
    "E2E p50",
    "E2E p99",
    "E2E max",
    "Deliv/s",
    "Backlog",
];

/// The rows with a `delivery` section: the levels, then TOTAL.
pub(crate) fn delivery_rows(report: &Report) -> Vec<(&str, &DeliveryReport)> {
    report
        .levels
        .iter()
        .chain(report.total.as_ref())
        .filter_map(|r| r.delivery.as_ref().map(|d| (r.label.as_str(), d)))
        .collect()
}

/// One row's cells after the label, as [`HEAD`] names them (latencies in ms).
pub(crate) fn cells(d: &DeliveryReport) -> Vec<String> {
    let c = &d.counts;
    let e = &d.e2e_us;
    let mut row: Vec<String> = [
        c.expected,
        c.delivered,
        c.lost,
        c.not_yet_delivered,
        c.duplicates,
        c.redeliveries,
        c.out_of_order,
        c.bad_signature,
        c.body_mismatch,
        c.unexpected,
    ]
    .map(|n| n.to_string())
    .into();
    row.extend([
        ms3(e.mean),
        ms3(e.p50 as f64),
        ms3(e.p99 as f64),
        ms3(e.max as f64),
    ]);
    row.push(format!("{:.1}", d.delivered_per_sec));
    row.push(d.backlog_at_level_end.to_string());
    row
}

/// What the `NotYet` column means, when a level has any (the levels' sum; TOTAL repeats it).
pub(crate) fn not_yet_note(report: &Report) -> Option<String> {
    let n: u64 = report
        .levels
        .iter()
        .filter_map(|l| l.delivery.as_ref())
        .map(|d| d.counts.not_yet_delivered)
        .sum();
    (n > 0).then(|| {
        format!(
            "NotYet: {n} deliveries still owed when the run was stopped before the delivery \
             grace had passed; not counted lost."
        )
    })
}

/// What the broker subscribers found in their subscriptions' dead-letter sub-queues, by
/// reason, when a level has any (the levels' sum).
pub(crate) fn dead_letter_note(report: &Report) -> Option<String> {
    let mut reasons = std::collections::BTreeMap::<&str, u64>::new();
    let mut n = 0;
    for d in report.levels.iter().filter_map(|l| l.delivery.as_ref()) {
        n += d.counts.dead_lettered;
        for (r, k) in &d.dead_letter_reasons {
            *reasons.entry(r).or_default() += k;
        }
    }
    (n > 0).then(|| {
        let by: Vec<String> = reasons.iter().map(|(r, k)| format!("{r} {k}")).collect();
        format!(
            "DeadLettered: {n} events read from the subscriptions' dead-letter sub-queues \
             ({}); not counted lost.",
            by.join(", ")
        )
    })
}

/// The delivery block (header, one row per level with a `delivery` section, then TOTAL), or
/// `None` when the run had no subscribers.
pub fn render_delivery_table(report: &Report) -> Option<String> {
    let rows = delivery_rows(report);
    if rows.is_empty() {
        return None;
    }
    let mut grid: Vec<Vec<String>> = vec![HEAD.iter().map(|h| h.to_string()).collect()];
    for (label, d) in rows {
        let mut row = vec![label.to_string()];
        row.extend(cells(d));
        grid.push(row);
    }
    let mut out = format!(
        "\nEnd-to-end delivery (publish start → subscriber, ms)\n{}",
        align(&grid)
    );
    if let Some(note) = not_yet_note(report) {
        out.push_str(&note);
        out.push('\n');
    }
    if let Some(note) = dead_letter_note(report) {
        out.push_str(&note);
        out.push('\n');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::delivery_report::DeliveryReport;
    use crate::report::model::LatencyUs;
    use crate::subscriber::DeliveryCounts;

    fn delivery(delivered: u64, lost: u64, p99_us: u64) -> DeliveryReport {
        DeliveryReport {
            counts: DeliveryCounts {
                expected: delivered + lost,
                delivered,
                lost,
                ..DeliveryCounts::default()
            },
            gone_subscribers: 0,
            unverified_subscribers: 0,
            e2e_us: LatencyUs {
                mean: 850.0,
                p50: 700,
                p99: p99_us,
                max: p99_us + 1000,
                ..LatencyUs::default()
            },
            e2e_from_accepted_us: LatencyUs::default(),
            delivered_per_sec: 120.0,
            backlog_at_level_end: lost,
            longest_gap_us: 0,
            per_subscriber: Default::default(),
            histograms: None,
            per_second: None,
            churn: None,
            dead_letter_reasons: Default::default(),
            stages: Default::default(),
            stages_malformed: 0,
        }
    }

    #[test]
    fn no_subscribers_no_block() {
        let r = Report::new_empty(crate::kind::Model::Closed, serde_json::Value::Null, vec![]);
        assert_eq!(render_delivery_table(&r), None);
    }

    #[test]
    fn one_row_per_level_with_deliveries_in_ms() {
        let mut r = Report::new_empty(crate::kind::Model::Closed, serde_json::Value::Null, vec![]);
        let stats = crate::stats::LevelStats::default();
        let mut level =
            crate::report::model::build::level_report("4", Some(4), None, &stats, false);
        level.delivery = Some(delivery(60, 0, 2500));
        r.levels.push(level.clone());
        level.label = "8".into();
        level.delivery = Some(delivery(57, 3, 12_300));
        r.levels.push(level);
        let t = render_delivery_table(&r).unwrap();
        let lines: Vec<Vec<&str>> = t
            .lines()
            .skip(2)
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(lines[0][..3], ["Level", "Expected", "Delivered"]);
        assert_eq!(
            lines[2],
            [
                "4", "60", "60", "0", "0", "0", "0", "0", "0", "0", "0", "0.850", "0.700", "2.50",
                "3.50", "120.0", "0"
            ]
        );
        assert_eq!(lines[3][..5], ["8", "60", "57", "3", "0"]);
        assert_eq!(lines[3][13..15], ["12.3", "13.3"]);
        assert_eq!(lines.len(), 4, "header, rule, two levels: {t}");
        assert!(
            !t.contains("not counted lost"),
            "no note when nothing is owed"
        );
    }

    #[test]
    fn a_stopped_run_shows_what_was_owed_apart_from_lost() {
        let mut r = Report::new_empty(crate::kind::Model::Closed, serde_json::Value::Null, vec![]);
        let stats = crate::stats::LevelStats::default();
        let mut level =
            crate::report::model::build::level_report("4", Some(4), None, &stats, false);
        let mut d = delivery(50, 0, 2500);
        d.counts.expected = 60;
        d.counts.not_yet_delivered = 10;
        level.delivery = Some(d);
        r.levels.push(level);
        let t = render_delivery_table(&r).unwrap();
        let lines: Vec<&str> = t.lines().collect();
        let row: Vec<&str> = lines[4].split_whitespace().collect();
        assert_eq!(row[..5], ["4", "60", "50", "0", "10"], "{t}");
        assert_eq!(
            lines[5],
            "NotYet: 10 deliveries still owed when the run was stopped before the delivery \
             grace had passed; not counted lost."
        );
        assert_eq!(lines.len(), 6, "{t}");
    }

    #[test]
    fn dead_lettered_events_are_noted_by_reason_over_the_levels() {
        let mut r = Report::new_empty(crate::kind::Model::Closed, serde_json::Value::Null, vec![]);
        let stats = crate::stats::LevelStats::default();
        for (label, dead, reasons) in [
            ("4", 3, vec![("MaxDeliveryCountExceeded", 3)]),
            (
                "8",
                4,
                vec![("MaxDeliveryCountExceeded", 1), ("TTLExpiredException", 3)],
            ),
        ] {
            let mut level =
                crate::report::model::build::level_report(label, Some(4), None, &stats, false);
            let mut d = delivery(50, 0, 2500);
            d.counts.dead_lettered = dead;
            d.dead_letter_reasons = reasons.iter().map(|(r, n)| (r.to_string(), *n)).collect();
            level.delivery = Some(d);
            r.levels.push(level);
        }
        let t = render_delivery_table(&r).unwrap();
        assert_eq!(
            t.lines().last(),
            Some(
                "DeadLettered: 7 events read from the subscriptions' dead-letter sub-queues \
                 (MaxDeliveryCountExceeded 4, TTLExpiredException 3); not counted lost."
            ),
            "{t}"
        );
    }
}
