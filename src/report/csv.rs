//! `aggregate.csv`: JMeter's aggregate columns per level plus the outcome classes, then TOTAL.
//!
//! WebSub runs use the header the hub's own performance analysis used; Service Bus runs swap
//! the HTTP classes for the broker's (README: "CSV columns").

use super::{LevelReport, Report, Reporter};

/// The exact WebSub header.
pub const WEBSUB_HEADER: &[&str] = &[
    "Concurrency",
    "# Samples",
    "Average",
    "Median",
    "90% Line",
    "95% Line",
    "99% Line",
    "Min",
    "Max",
    "Error %",
    "Throughput",
    "Received KB/sec",
    "Sent KB/sec",
    "Accepted",
    "Denied",
    "4xx",
    "502",
    "503",
    "504",
    "Other 5xx",
    "Timeouts",
    "Connection errors",
];

/// The Service Bus header: same aggregate columns, the broker's classes.
pub const SERVICEBUS_HEADER: &[&str] = &[
    "Concurrency",
    "# Samples",
    "Average",
    "Median",
    "90% Line",
    "95% Line",
    "99% Line",
    "Min",
    "Max",
    "Error %",
    "Throughput",
    "Received KB/sec",
    "Sent KB/sec",
    "Accepted",
    "Throttled",
    "Rejected",
    "Unauthorized",
    "Not found",
    "Too large",
    "Timeouts",
    "Connection errors",
];

/// Writes `aggregate.csv`.
#[derive(Debug, Default)]
pub struct CsvReporter;

/// The aggregate columns of one row, formatted as JMeter formats them.
pub fn aggregate_fields(r: &LevelReport) -> Vec<String> {
    vec![
        r.label.clone(),
        r.samples.to_string(),
        r.average_ms.to_string(),
        r.median_ms.to_string(),
        r.p90_ms.to_string(),
        r.p95_ms.to_string(),
        r.p99_ms.to_string(),
        r.min_ms.to_string(),
        r.max_ms.to_string(),
        format!("{:.3}%", r.error_pct),
        format!("{:.5}", r.throughput),
        format!("{:.2}", r.received_kb_per_sec),
        format!("{:.2}", r.sent_kb_per_sec),
    ]
}

fn class_fields(r: &LevelReport, servicebus: bool) -> Vec<String> {
    let c = |k: &str| r.counts.get(k).copied().unwrap_or(0);
    let timeouts = r.timeouts.connect + r.timeouts.pool_wait + r.timeouts.response;
    let classes: Vec<u64> = if servicebus {
        vec![
            c("accepted"),
            c("throttled"),
            c("rejected"),
            c("unauthorized"),
            c("not_found"),
            c("too_large"),
        ]
    } else {
        vec![
            c("accepted"),
            c("denied"),
            c("http_4xx"),
            c("http_502"),
            c("http_503"),
            c("http_504"),
            c("http_5xx"),
        ]
    };
    classes
        .into_iter()
        .chain([timeouts, r.connection_errors])
        .map(|n| n.to_string())
        .collect()
}

/// Render rows (levels then TOTAL) with a header; `first_column` replaces "Concurrency" for rate runs.
pub fn render_rows(report: &Report) -> anyhow::Result<Vec<u8>> {
    let servicebus = report.target == "servicebus";
    let mut header: Vec<&str> = if servicebus {
        SERVICEBUS_HEADER
    } else {
        WEBSUB_HEADER
    }
    .to_vec();
    if report.model == "open" {
        header[0] = "Rate";
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(&header)?;
    for r in report.levels.iter().chain(report.total.as_ref()) {
        let mut row = aggregate_fields(r);
        row.extend(class_fields(r, servicebus));
        w.write_record(&row)?;
    }
    Ok(w.into_inner()?)
}

impl Reporter for CsvReporter {
    fn file_name(&self) -> &'static str {
        "aggregate.csv"
    }
    fn render(&self, report: &Report) -> anyhow::Result<Vec<u8>> {
        render_rows(report)
    }
}
