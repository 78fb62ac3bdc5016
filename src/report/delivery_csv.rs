//! `delivery.csv`: one row per level of what the subscribers received, then TOTAL (`--subscribers` runs only).
//!
//! Counts (delivered, lost, duplicates, …), end-to-end latency in ms, rate, backlog, not yet
//! delivered and dead-lettered; TOTAL sums the counts and reads the latencies from the levels'
//! merged histogram. A run without subscribers writes no file. docs/reports.md lists the columns.

use super::Format;
use crate::report::document::Report;
use crate::report::model::delivery_report::DeliveryReport;

/// Writes `delivery.csv`.
#[derive(Debug, Default)]
pub struct DeliveryCsvFormat;

/// The header row.
pub const DELIVERY_HEADER: [&str; 18] = [
    "Level",
    "Delivered",
    "Lost",
    "Duplicates",
    "Redeliveries",
    "Out of order",
    "Bad signature",
    "Body mismatch",
    "E2E Average",
    "Median",
    "90%",
    "95%",
    "99%",
    "Max",
    "Delivered/sec",
    "Backlog at level end",
    "Not yet delivered",
    "Dead-lettered",
];

fn row(label: &str, d: &DeliveryReport) -> Vec<String> {
    let c = &d.counts;
    let l = &d.e2e_us;
    let ms = |us: u64| (us / 1000).to_string();
    let mut r = vec![label.to_string()];
    r.extend(
        [
            c.delivered,
            c.lost,
            c.duplicates,
            c.redeliveries,
            c.out_of_order,
            c.bad_signature,
            c.body_mismatch,
        ]
        .iter()
        .map(u64::to_string),
    );
    r.push(((l.mean / 1000.0) as u64).to_string());
    r.extend([l.p50, l.p90, l.p95, l.p99, l.max].into_iter().map(ms));
    r.push(format!("{:.1}", d.delivered_per_sec));
    r.push(d.backlog_at_level_end.to_string());
    r.push(c.not_yet_delivered.to_string());
    r.push(c.dead_lettered.to_string());
    r
}

/// Render `delivery.csv`; empty (no file) when no level has a delivery section.
pub fn render_delivery_csv(report: &Report) -> anyhow::Result<Vec<u8>> {
    if report.levels.iter().all(|l| l.delivery.is_none()) {
        return Ok(Vec::new());
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(DELIVERY_HEADER)?;
    for l in report.levels.iter().chain(report.total.as_ref()) {
        if let Some(d) = &l.delivery {
            w.write_record(row(&l.label, d))?;
        }
    }
    Ok(w.into_inner()?)
}

impl Format for DeliveryCsvFormat {
    fn file_name(&self) -> &'static str {
        "delivery.csv"
    }
    fn render(&self, report: &Report) -> anyhow::Result<Vec<u8>> {
        render_delivery_csv(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::delivery_report::delivery_report;
    use crate::stats::record;
    use crate::subscriber::DeliveryLevelStats;

    #[test]
    fn one_row_per_level_in_ms() {
        let mut s = DeliveryLevelStats::default();
        s.counts.delivered = 30;
        s.counts.lost = 2;
        s.counts.redeliveries = 4;
        s.counts.not_yet_delivered = 6;
        s.counts.dead_lettered = 7;
        for v in [10_000, 20_000, 30_000] {
            record(&mut s.e2e_from_start, v);
        }
        let d = delivery_report(&s, 3.0, 5);
        let mut r = crate::report::document::Report::new_empty(
            crate::config::Model::Closed,
            serde_json::Value::Null,
            Vec::new(),
        );
        assert!(
            render_delivery_csv(&r).unwrap().is_empty(),
            "no subscribers, no file"
        );
        let row_json = |label: &str| {
            let mut l = crate::report::model::build::level_report(
                label,
                Some(1),
                None,
                &crate::stats::LevelStats::default(),
                false,
            );
            l.delivery = Some(d.clone());
            l
        };
        r.levels = vec![row_json("1"), row_json("2")];
        let text = String::from_utf8(render_delivery_csv(&r).unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], DELIVERY_HEADER.join(","));
        // Percentiles are bucket tops (3 significant digits), shown in whole ms.
        assert_eq!(lines[1], "1,30,2,0,4,0,0,0,20,20,30,30,30,30,10.0,5,6,7");
        assert_eq!(lines.len(), 3, "no TOTAL row without a total");
    }

    #[test]
    fn total_row_sums_counts_and_takes_percentiles_from_the_merged_histogram() {
        use crate::report::model::delivery_report::LevelDelivery;
        let level = |delivered: u64, lost: u64, e2e_ms: &[u64], seconds: f64, backlog: u64| {
            let mut s = DeliveryLevelStats::default();
            s.counts.delivered = delivered;
            s.counts.lost = lost;
            s.counts.duplicates = 1;
            s.counts.dead_lettered = lost + 1;
            for v in e2e_ms {
                record(&mut s.e2e_from_start, v * 1000);
            }
            LevelDelivery {
                stats: s,
                seconds,
                backlog,
            }
        };
        // Level 1: four fast deliveries; level 2: one slow one. The merged median is fast and
        // the merged max slow: neither an average nor a copy of either row.
        let a = level(4, 1, &[10, 10, 10, 10], 2.0, 3);
        let b = level(1, 0, &[500], 3.0, 7);
        let mut total = LevelDelivery::default();
        total += &a;
        total += &b;
        let with = |label: &str, d: &LevelDelivery| {
            let mut l = crate::report::model::build::level_report(
                label,
                None,
                None,
                &crate::stats::LevelStats::default(),
                false,
            );
            l.delivery = Some(d.into());
            l
        };
        let mut r = crate::report::document::Report::new_empty(
            crate::config::Model::Closed,
            serde_json::Value::Null,
            Vec::new(),
        );
        r.levels = vec![with("1", &a), with("2", &b)];
        r.total = Some(with("TOTAL", &total));
        let text = String::from_utf8(render_delivery_csv(&r).unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert_eq!(lines[1], "1,4,1,1,0,0,0,0,10,10,10,10,10,10,2.0,3,0,2");
        assert_eq!(
            lines[2],
            "2,1,0,1,0,0,0,0,500,500,500,500,500,500,0.3,7,0,1"
        );
        // 5 delivered over 5 s; mean (4×10 + 500)/5 = 108 ms; the backlog is the last level's.
        assert_eq!(
            lines[3],
            "TOTAL,5,1,2,0,0,0,0,108,10,500,500,500,500,1.0,7,0,3"
        );
    }
}
