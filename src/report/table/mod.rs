//! The terminal table (also saved as `table.txt`): one aligned row per level, then TOTAL, and
//! the sections below it, one file each here.

pub mod delivery;
pub mod delivery_stages;
pub mod fairness;
pub mod server_timing;

use std::fmt::Write;

use crate::align::align;
use crate::report::csv::{
    aggregate_fields, class_columns, class_count, ClassColumn, TRAILING_CLASSES,
};
use crate::report::document::Report;
use crate::report::precision::latency_cells;
use crate::report::Format;
use crate::result::Class;

/// Renders the aligned text table.
#[derive(Debug, Default)]
pub struct TableFormat;

const HEAD: &[&str] = &[
    "Level",
    "Samples",
    "Avg ms",
    "Med ms",
    "p90 ms",
    "p95 ms",
    "p99 ms",
    "Min ms",
    "Max ms",
    "Error %",
    "Req/s",
    "Recv KB/s",
    "Sent KB/s",
];

/// The classes that neither the target's class columns nor the timeout and connection-error
/// columns show, but that some row counts: each gets a column of its own (headed by its name),
/// so every row adds up to its samples whatever classes exist.
fn extra_classes(report: &Report) -> Vec<Class> {
    let shown = class_columns(report);
    Class::ALL
        .into_iter()
        .filter(|c| !c.is_timeout() && !c.is_conn_error())
        .filter(|c| shown.iter().chain(TRAILING_CLASSES).all(|col| col.0 != *c))
        .filter(|c| {
            report
                .levels
                .iter()
                .chain(report.total.as_ref())
                .any(|r| r.stats.counts.get(*c) > 0)
        })
        .collect()
}

/// Render the table as text.
pub fn render_table(report: &Report) -> String {
    let classes: Vec<ClassColumn> = class_columns(report)
        .iter()
        .copied()
        .chain(
            extra_classes(report)
                .into_iter()
                .map(|c| (c, c.name(), c.name())),
        )
        .collect();
    let head = HEAD
        .iter()
        .copied()
        .chain(classes.iter().map(|c| c.2))
        .chain(["TO conn", "TO pool", "TO resp", "ConnErr"])
        .chain(TRAILING_CLASSES.iter().map(|c| c.2));
    let mut rows: Vec<Vec<String>> = vec![head.map(str::to_string).collect()];
    for r in report.levels.iter().chain(report.total.as_ref()) {
        let mut row = aggregate_fields(r);
        // Three significant digits where aggregate.csv keeps JMeter's whole milliseconds.
        row.splice(2..9, latency_cells(r));
        row.extend(classes.iter().map(|c| class_count(r, c).to_string()));
        row.extend([
            r.derived.timeouts.connect.to_string(),
            r.derived.timeouts.pool_wait.to_string(),
            r.derived.timeouts.response.to_string(),
            r.derived.connection_errors.to_string(),
        ]);
        row.extend(
            TRAILING_CLASSES
                .iter()
                .map(|c| class_count(r, c).to_string()),
        );
        // The table is for eyes: fewer decimals than the CSV.
        row[10] = format!("{:.1}", r.derived.throughput);
        row[0] = crate::report::observe_notes::marked_label(&row[0], r.generator_bound);
        rows.push(row);
    }
    let mut out = align(&rows);
    if let Some(t) = &report.total {
        if t.derived.events.retries > 0 {
            let _ = writeln!(
                out,
                "events: {} total, {} succeeded, {} failed after retries ({} retries)",
                t.derived.events.total,
                t.derived.events.succeeded,
                t.derived.events.failed,
                t.derived.events.retries
            );
        }
        if t.stats.dropped > 0 {
            let _ = writeln!(out, "dropped (generator saturated): {}", t.stats.dropped);
        }
    }
    out.push_str(&crate::report::observe_notes::notes(report));
    if report.partial {
        out.push_str("PARTIAL: the run was interrupted; these are the levels measured so far.\n");
    }
    out
}

impl Format for TableFormat {
    fn file_name(&self) -> &'static str {
        "table.txt"
    }
    fn render(&self, report: &Report) -> anyhow::Result<Vec<u8>> {
        let mut t = render_table(report);
        // With subscribers, the second block: what they received.
        if let Some(d) = delivery::render_delivery_table(report) {
            t.push_str(&d);
        }
        // When the hub carried each publish's stages to its deliveries (Hub-Timing).
        if let Some(st) = delivery_stages::render_delivery_stages_table(report) {
            t.push_str(&st);
        }
        // When the server declared its stages (Server-Timing), where the time went.
        if let Some(st) = server_timing::render_server_timing_table(report) {
            t.push_str(&st);
        }
        // With two tenants or more, how fairly they were served.
        if let Some(f) = fairness::render_fairness_table(report) {
            t.push_str(&f);
        }
        Ok(t.into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::LevelReport;

    fn level(label: &str, counts: &[(&str, u64)], p50_us: u64) -> LevelReport {
        let mut l: LevelReport = serde_json::from_value(serde_json::json!({
            "label": label, "concurrency": null, "rate": null, "samples": 0,
            "average_ms": 0, "median_ms": 0, "p90_ms": 0, "p95_ms": 0, "p99_ms": 0,
            "min_ms": 0, "max_ms": 0, "error_pct": 0.0, "throughput": 10.0,
            "received_kb_per_sec": 0.0, "sent_kb_per_sec": 0.0, "counts": {},
            "timeouts": {"connect": 0, "pool_wait": 0, "response": 0},
            "connection_errors": 0, "status_codes": {},
            "events": {"total": 0, "succeeded": 0, "failed": 0, "retries": 0},
            "dropped": 0, "span_s": 1.0, "bytes_sent": 0, "bytes_received": 0,
            "latency_us": {"mean": 230.5, "min": 101, "p50": 0, "p90": 0, "p95": 0,
                           "p99": 0, "p999": 0, "max": 1_204_000},
            "corrected_latency_us": null,
            "accepted_latency_us": {"mean": 0.0, "min": 0, "p50": 0, "p90": 0, "p95": 0,
                                    "p99": 0, "p999": 0, "max": 0},
            "topic_attempts": [], "timeline": []
        }))
        .unwrap();
        l.derived.latency_us.p50 = p50_us;
        for (k, v) in counts {
            l.stats.counts.add(Class::from_name(k).unwrap(), *v);
            l.derived.samples += v;
        }
        l
    }

    #[test]
    fn sub_millisecond_latencies_are_not_zero() {
        let mut r = Report::new_empty(crate::kind::Model::Closed, serde_json::Value::Null, vec![]);
        r.levels.push(level("1", &[("accepted", 5)], 214));
        let t = render_table(&r);
        let row: Vec<&str> = t.lines().nth(2).unwrap().split_whitespace().collect();
        // Level, Samples, Avg, Med, p90, p95, p99, Min, Max.
        assert_eq!(
            &row[..9],
            ["1", "5", "0.231", "0.214", "0.000", "0.000", "0.000", "0.101", "1204"]
        );
    }

    #[test]
    fn every_counted_class_has_a_column_and_rows_add_up() {
        let mut r = Report::new_empty(crate::kind::Model::Closed, serde_json::Value::Null, vec![]);
        r.levels
            .push(level("1", &[("accepted", 5), ("other", 3)], 0));
        r.levels
            .push(level("2", &[("accepted", 1), ("throttled", 2)], 0));
        let t = render_table(&r);
        let lines: Vec<Vec<&str>> = t.lines().map(|l| l.split_whitespace().collect()).collect();
        // Headings have spaces ("Avg ms", "TO conn"): the 13 aggregate headings are 23 words,
        // then one word per class column, the 7 words of "TO conn TO pool TO resp ConnErr",
        // and one word per trailing class (TLS, Client, Cancel, Other).
        let trailing = TRAILING_CLASSES.len();
        let n_classes = lines[2].len() - 13 - 4 - trailing;
        let head: Vec<&str> = lines[0][23..23 + n_classes]
            .iter()
            .chain(&lines[0][23 + n_classes + 7..])
            .copied()
            .collect();
        let col = |name: &str| {
            let i = head.iter().position(|h| *h == name).expect(name);
            13 + if i < n_classes { i } else { i + 4 }
        };
        let (other, thr) = (col("Other"), col("throttled"));
        assert_eq!(lines[2][other], "3");
        assert_eq!(lines[3][thr], "2");
        // Samples = the sum of the class, timeout and connection-error columns.
        for row in &lines[2..4] {
            let samples: u64 = row[1].parse().unwrap();
            let sum: u64 = row[13..].iter().map(|c| c.parse::<u64>().unwrap()).sum();
            assert_eq!(sum, samples, "{row:?}");
        }
        // A class no row counts gets no column.
        assert!(!head.contains(&"rejected"));
    }
}
