//! The terminal table's second block: what the subscribers received, one row per level.

use super::align::align;
use super::precision::ms3;
use super::Report;

/// The delivery block (header, one row per level with a `delivery` section, then TOTAL), or
/// `None` when the run had no subscribers.
pub fn render_delivery_table(report: &Report) -> Option<String> {
    let rows: Vec<_> = report
        .levels
        .iter()
        .chain(report.total.as_ref())
        .filter_map(|r| r.delivery.as_ref().map(|d| (r.label.as_str(), d)))
        .collect();
    if rows.is_empty() {
        return None;
    }
    let head = [
        "Level",
        "Expected",
        "Delivered",
        "Lost",
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
    let mut grid: Vec<Vec<String>> = vec![head.iter().map(|h| h.to_string()).collect()];
    for (label, d) in rows {
        let c = &d.counts;
        let e = &d.e2e_us;
        let mut row = vec![label.to_string()];
        row.extend(
            [
                c.expected,
                c.delivered,
                c.lost,
                c.duplicates,
                c.redeliveries,
                c.out_of_order,
                c.bad_signature,
                c.body_mismatch,
                c.unexpected,
            ]
            .map(|n| n.to_string()),
        );
        row.extend([
            ms3(e.mean),
            ms3(e.p50 as f64),
            ms3(e.p99 as f64),
            ms3(e.max as f64),
        ]);
        row.push(format!("{:.1}", d.delivered_per_sec));
        row.push(d.backlog_at_level_end.to_string());
        grid.push(row);
    }
    Some(format!(
        "\nEnd-to-end delivery (publish start → subscriber, ms)\n{}",
        align(&grid)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::delivery::DeliveryReport;
    use crate::report::LatencyUs;
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
            per_subscriber: Default::default(),
            histograms: None,
            per_second: None,
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
        let mut level = crate::report::build::level_report("4", Some(4), None, &stats, false);
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
                "4", "60", "60", "0", "0", "0", "0", "0", "0", "0", "0.850", "0.700", "2.50",
                "3.50", "120.0", "0"
            ]
        );
        assert_eq!(lines[3][..4], ["8", "60", "57", "3"]);
        assert_eq!(lines[3][12..14], ["12.3", "13.3"]);
        assert_eq!(lines.len(), 4, "header, rule, two levels: {t}");
    }
}
