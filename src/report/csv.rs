//! `aggregate.csv`: JMeter's aggregate columns per level plus the outcome classes, then TOTAL.
//!
//! WebSub runs use the header the hub's own performance analysis used; Service Bus runs swap
//! the HTTP classes for the broker's (README: "CSV columns").

use super::Format;
use crate::kind::{Answers, Model};
use crate::report::document::Report;
use crate::report::model::LevelReport;
use crate::result::Class;

/// JMeter's aggregate columns after the first (which names the level: `Concurrency` or `Rate`).
pub const AGGREGATE_COLUMNS: [&str; 12] = [
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
];

/// One per-class column: the class, the CSV heading, and the short heading of the terminal
/// table.
pub type ClassColumn = (Class, &'static str, &'static str);

/// The WebSub target's class columns (the header the hub's own performance analysis used).
pub const WEBSUB_CLASSES: &[ClassColumn] = &[
    (Class::Accepted, "Accepted", "Acc"),
    (Class::Denied, "Denied", "Denied"),
    (Class::Http4xx, "4xx", "4xx"),
    (Class::Http502, "502", "502"),
    (Class::Http503, "503", "503"),
    (Class::Http504, "504", "504"),
    (Class::Http5xx, "Other 5xx", "5xx"),
];

/// The Service Bus target's class columns: the broker's classes instead of HTTP's.
pub const SERVICEBUS_CLASSES: &[ClassColumn] = &[
    (Class::Accepted, "Accepted", "Acc"),
    (Class::Throttled, "Throttled", "Throt"),
    (Class::Rejected, "Rejected", "Rej"),
    (Class::Unauthorized, "Unauthorized", "Unauth"),
    (Class::NotFound, "Not found", "NotFnd"),
    (Class::TooLarge, "Too large", "TooBig"),
];

/// The columns after the timeout and connection-error columns, for every target: failures
/// that are neither the hub's answer nor the network's (TLS, the generator's own limits, a
/// stop, a response not understood). With them every row adds up to its samples.
pub const TRAILING_CLASSES: &[ClassColumn] = &[
    (Class::TlsError, "TLS errors", "TLS"),
    (Class::ClientError, "Client errors", "Client"),
    (Class::Cancelled, "Cancelled", "Cancel"),
    (Class::Other, "Other", "Other"),
];

/// HTTP/2's own classes (docs/http2.md). Their columns follow the connection errors when the
/// run spoke HTTP/2 (`--http-version` 2 or auto) or counted any of them, so every row still
/// adds up to its samples; an HTTP/1.1 run keeps the header it always had.
pub const HTTP2_CLASSES: &[ClassColumn] = &[
    (Class::RefusedStream, "Refused streams", "Refused"),
    (Class::Goaway, "GOAWAY", "GOAWAY"),
    (Class::StreamReset, "Stream resets", "StrmRst"),
    (Class::ProtocolError, "Protocol errors", "ProtoErr"),
];

/// The refusals `--topic-churn` caused (docs/topic-churn.md). Their column follows the
/// target's class columns when the run churned topics or counted any, so every row still adds
/// up to its samples; a run without topic churn keeps the header it always had.
pub const REFUSAL_CLASSES: &[ClassColumn] =
    &[(Class::ExpectedRefusal, "Expected refusals", "ExpRefused")];

/// [`REFUSAL_CLASSES`] when the report has their column, else none.
pub fn refusal_columns(report: &Report) -> &'static [ClassColumn] {
    let asked = report
        .config
        .get("topic_churn")
        .is_some_and(|v| !v.is_null());
    let counted = || {
        report
            .levels
            .iter()
            .chain(report.total.as_ref())
            .any(|r| REFUSAL_CLASSES.iter().any(|c| class_count(r, c) > 0))
    };
    if asked || counted() {
        REFUSAL_CLASSES
    } else {
        &[]
    }
}

/// HTTP 429 (class `throttled`) in a WebSub run: its column follows the target's classes
/// when the run counted any, so every row still adds up to its samples; a run without a 429
/// keeps the header it always had (a Service Bus run has the class among its own).
pub const THROTTLED_CLASSES: &[ClassColumn] = &[(Class::Throttled, "429 Throttled", "429")];

/// [`THROTTLED_CLASSES`] when a WebSub report counted a 429, else none.
pub fn throttled_columns(report: &Report) -> &'static [ClassColumn] {
    let counted = report
        .levels
        .iter()
        .chain(report.total.as_ref())
        .any(|r| THROTTLED_CLASSES.iter().any(|c| class_count(r, c) > 0));
    if report.target.answers() == Answers::Http && counted {
        THROTTLED_CLASSES
    } else {
        &[]
    }
}

/// [`HTTP2_CLASSES`] when the report has their columns, else none.
pub fn http2_columns(report: &Report) -> &'static [ClassColumn] {
    let asked = report
        .config
        .pointer("/http/version")
        .and_then(|v| v.as_str())
        .is_some_and(|v| v != "1.1");
    let counted = || {
        report
            .levels
            .iter()
            .chain(report.total.as_ref())
            .any(|r| HTTP2_CLASSES.iter().any(|c| class_count(r, c) > 0))
    };
    if asked || counted() {
        HTTP2_CLASSES
    } else {
        &[]
    }
}

/// The class columns of a report's target, by what its kind answers with.
pub fn class_columns(report: &Report) -> &'static [ClassColumn] {
    match report.target.answers() {
        Answers::Http => WEBSUB_CLASSES,
        Answers::Broker => SERVICEBUS_CLASSES,
    }
}

/// The full CSV header of a report: level, aggregate, class, timeout and connection-error columns.
pub fn header(report: &Report) -> Vec<&'static str> {
    let first = if report.model == Model::Open {
        "Rate"
    } else {
        "Concurrency"
    };
    std::iter::once(first)
        .chain(AGGREGATE_COLUMNS)
        .chain(class_columns(report).iter().map(|c| c.1))
        .chain(throttled_columns(report).iter().map(|c| c.1))
        .chain(refusal_columns(report).iter().map(|c| c.1))
        .chain(["Timeouts", "Connection errors"])
        .chain(http2_columns(report).iter().map(|c| c.1))
        .chain(TRAILING_CLASSES.iter().map(|c| c.1))
        .collect()
}

/// Writes `aggregate.csv`.
#[derive(Debug, Default)]
pub struct CsvFormat;

/// The aggregate columns of one row, formatted as JMeter formats them.
pub fn aggregate_fields(r: &LevelReport) -> Vec<String> {
    vec![
        r.label.clone(),
        r.derived.samples.to_string(),
        r.derived.average_ms.to_string(),
        r.derived.median_ms.to_string(),
        r.derived.p90_ms.to_string(),
        r.derived.p95_ms.to_string(),
        r.derived.p99_ms.to_string(),
        r.derived.min_ms.to_string(),
        r.derived.max_ms.to_string(),
        format!("{:.3}%", r.derived.error_pct),
        format!("{:.5}", r.derived.throughput),
        format!("{:.2}", r.derived.received_kb_per_sec),
        format!("{:.2}", r.derived.sent_kb_per_sec),
    ]
}

/// The count of one class column in a row.
pub fn class_count(r: &LevelReport, c: &ClassColumn) -> u64 {
    r.stats.counts.get(c.0)
}

fn class_fields(r: &LevelReport, classes: &[ClassColumn], h2: &[ClassColumn]) -> Vec<String> {
    let timeouts =
        r.derived.timeouts.connect + r.derived.timeouts.pool_wait + r.derived.timeouts.response;
    let count = |c| class_count(r, c);
    classes
        .iter()
        .map(count)
        .chain([timeouts, r.derived.connection_errors])
        .chain(h2.iter().map(count))
        .chain(TRAILING_CLASSES.iter().map(count))
        .map(|n| n.to_string())
        .collect()
}

/// Render rows (levels then TOTAL) under [`header`].
pub fn render_rows(report: &Report) -> anyhow::Result<Vec<u8>> {
    // The 429 and refusal columns sit with the target's classes.
    let classes: Vec<ClassColumn> = class_columns(report)
        .iter()
        .chain(throttled_columns(report))
        .chain(refusal_columns(report))
        .copied()
        .collect();
    let h2 = http2_columns(report);
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(header(report))?;
    for r in report.levels.iter().chain(report.total.as_ref()) {
        let mut row = aggregate_fields(r);
        row.extend(class_fields(r, &classes, h2));
        w.write_record(&row)?;
    }
    Ok(w.into_inner()?)
}

impl Format for CsvFormat {
    fn file_name(&self) -> &'static str {
        "aggregate.csv"
    }
    fn render(&self, report: &Report) -> anyhow::Result<Vec<u8>> {
        render_rows(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_websub_run_with_429s_gets_a_throttled_column_and_one_without_keeps_its_header() {
        let mut r = crate::report::html::tests::sample();
        assert_eq!(r.target, crate::kind::TargetKind::Websub);
        assert!(!header(&r).contains(&"429 Throttled"));
        r.levels[1].stats.counts.add(Class::Throttled, 3);
        let head = header(&r);
        let at = head.iter().position(|h| *h == "429 Throttled").unwrap();
        assert_eq!(head[at - 1], "Other 5xx", "beside the target's classes");
        let text = String::from_utf8(render_rows(&r).unwrap()).unwrap();
        let cells: Vec<Vec<&str>> = text.lines().map(|l| l.split(',').collect()).collect();
        assert_eq!(cells[2][at], "3", "{text}");
        assert_eq!(cells[1][at], "0", "{text}");
    }

    /// The classes one target's header counts: its class columns, the refusal and HTTP/2
    /// columns (when shown), "Timeouts" and "Connection errors", and the trailing columns.
    fn counted(target: &[ClassColumn]) -> Vec<Class> {
        target
            .iter()
            .chain(REFUSAL_CLASSES)
            .chain(HTTP2_CLASSES)
            .chain(TRAILING_CLASSES)
            .map(|c| c.0)
            .chain(
                Class::ALL
                    .into_iter()
                    .filter(|c| c.is_timeout() || c.is_conn_error()),
            )
            .collect()
    }

    /// A row adds up to its samples: no class is counted twice in one target's header, and
    /// every class in `Class::ALL` is counted by the WebSub or the Service Bus header.
    #[test]
    fn every_class_has_one_column() {
        let mut either = Vec::new();
        for target in [WEBSUB_CLASSES, SERVICEBUS_CLASSES] {
            let mut classes = counted(target);
            classes.sort_by_key(|c| c.index());
            let n = classes.len();
            classes.dedup();
            assert_eq!(classes.len(), n, "a class counted twice: {classes:?}");
            either.extend(classes);
        }
        let missing: Vec<&str> = Class::ALL
            .into_iter()
            .filter(|c| !either.contains(c))
            .map(Class::name)
            .collect();
        assert!(missing.is_empty(), "classes without a column: {missing:?}");
    }
}
