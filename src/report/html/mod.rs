//! `report.html`: one self-contained page (inline CSS, inline SVG charts, no scripts) per run.
//!
//! The markup is written as well-formed XML (every element closed, all text escaped) so a
//! test can parse it, and so it renders the same in every browser, headless Chromium included.

pub(crate) mod charts;
mod control_marks;
pub(crate) mod delivery_charts;
mod delivery_table;
pub(crate) mod distribution;
mod first_failures;
pub(crate) mod markup;
mod observers;
pub(crate) mod svg;
pub(crate) mod tenants;
pub(crate) mod time_split_section;
pub(crate) mod worst_topics;

use std::fmt::Write;

use self::charts::{level_axis_title, visible_groups};
use self::markup::{document, fmt_error_pct, kv_table, table, Cell};
use self::svg::escape;
use super::precision::{latency_cells, ms3};
use super::Format;
use crate::kind::Model;
use crate::report::document::Report;
use crate::report::model::{LevelReport, PhaseReport};
use crate::result::Class;

/// Writes `report.html`.
#[derive(Debug, Clone, Copy, Default)]
pub struct HtmlFormat;

impl Format for HtmlFormat {
    fn file_name(&self) -> &'static str {
        "report.html"
    }

    fn render(&self, report: &Report) -> anyhow::Result<Vec<u8>> {
        Ok(render(report).into_bytes())
    }
}

/// Render the run report page.
pub fn render(report: &Report) -> String {
    let mut b = String::new();
    let _ = write!(
        b,
        "<h1>hubload report</h1><p class=\"meta\"><code>{target}</code> → <code>{url}</code> · {model} model · started {start} · finished {end} · hubload {version}</p>",
        target = report.target.as_str(),
        url = escape(&report.target_url),
        model = report.model.as_str(),
        start = escape(&report.started_at),
        end = escape(&report.finished_at),
        version = escape(&report.version),
    );
    if report.partial {
        b.push_str(
            "<div class=\"banner partial\" id=\"partial\">Partial run: the run was interrupted \
             (or is still running). The numbers cover only what was measured.</div>",
        );
    }
    if let Some(t) = &report.total {
        cards(&mut b, report, t);
    }
    if report.levels.is_empty() {
        b.push_str("<p>No level has completed yet.</p>");
    } else {
        let _ = write!(
            b,
            "<h2>Charts</h2><div class=\"charts\"><figure>{}</figure><figure>{}</figure>\
             <figure>{}</figure><figure>{}</figure>{}<figure class=\"wide\">{}</figure>{}{}</div>",
            charts::latency(report),
            charts::throughput(report),
            charts::outcomes(report, true),
            charts::outcomes(report, false),
            wide(distribution::distribution(report)),
            charts::timeline(report),
            wide(delivery_charts::latency(report)),
            wide(delivery_charts::backlog(report)),
        );
    }
    b.push_str("<h2>Aggregate</h2>");
    b.push_str(&aggregate_table(report));
    b.push_str("<h2>Outcomes per level</h2>");
    b.push_str(&outcome_table(report));
    b.push_str(&time_split_section::section(report));
    b.push_str(&delivery_table::section(report));
    b.push_str(&tenants::section(report));
    b.push_str(&worst_topics::worst_topics(report));
    b.push_str(&first_failures::section(report));
    b.push_str(&observers::section(report));
    b.push_str("<div class=\"cols\">");
    for (name, phase) in [
        ("Registration", &report.registration),
        ("Deregistration", &report.deregistration),
    ] {
        if let Some(p) = phase {
            let _ = write!(
                b,
                "<section><h2>{name} phase</h2>{}</section>",
                kv_table(&phase_rows(p))
            );
        }
    }
    b.push_str("</div>");
    if let Some(h) = &report.hub {
        b.push_str("<h2>Hub addresses</h2>");
        b.push_str(&kv_table(&hub_rows(h)));
    }
    b.push_str("<h2>Configuration</h2>");
    let mut rows = Vec::new();
    flatten_config("", &report.config, &mut rows);
    b.push_str(&kv_table(&rows));
    let _ = write!(
        b,
        "<footer>Written by {} {}. Latencies in ms; KB = 1024 bytes; Error % counts every attempt that was not accepted.</footer>",
        escape(&report.tool),
        escape(&report.version)
    );
    document("hubload report", &b)
}

/// A full-width figure around `svg`, or nothing.
fn wide(svg: Option<String>) -> String {
    svg.map(|svg| format!("<figure class=\"wide\">{svg}</figure>"))
        .unwrap_or_default()
}

fn cards(b: &mut String, report: &Report, t: &LevelReport) {
    let cards = [
        ("Attempts", t.derived.samples.to_string()),
        ("Error %", fmt_error_pct(t.derived.error_pct)),
        ("Throughput", format!("{:.1}/s", t.derived.throughput)),
        (
            "Median",
            format!("{} ms", ms3(t.derived.latency_us.p50 as f64)),
        ),
        (
            "p99",
            format!("{} ms", ms3(t.derived.latency_us.p99 as f64)),
        ),
        ("Levels", report.levels.len().to_string()),
    ];
    b.push_str("<div class=\"cards\">");
    for (k, v) in cards {
        let _ = write!(
            b,
            "<div class=\"card\"><div class=\"k\">{}</div><div class=\"v\">{}</div></div>",
            escape(k),
            escape(&v)
        );
    }
    b.push_str("</div>");
}

/// The levels, then the TOTAL row when there is one.
fn rows_with_total(report: &Report) -> Vec<&LevelReport> {
    report.levels.iter().chain(report.total.as_ref()).collect()
}

/// The JMeter aggregate columns, one row per level and TOTAL.
fn aggregate_table(report: &Report) -> String {
    let first = if report.model == Model::Open {
        "Rate"
    } else {
        "Concurrency"
    };
    let mut head = vec![Cell::text(first)];
    // The aggregate columns exactly as aggregate.csv names them.
    head.extend(super::csv::AGGREGATE_COLUMNS.map(Cell::num));
    let rows: Vec<Vec<Cell>> = rows_with_total(report)
        .into_iter()
        .map(|l| {
            let mut row = vec![
                Cell::text(&l.label),
                Cell::num(l.derived.samples.to_string()),
            ];
            // Three significant digits (ms) where aggregate.csv has whole milliseconds.
            row.extend(latency_cells(l).map(Cell::num));
            row.extend([
                Cell::num(fmt_error_pct(l.derived.error_pct)),
                Cell::num(format!("{:.1}", l.derived.throughput)),
                Cell::num(format!("{:.2}", l.derived.received_kb_per_sec)),
                Cell::num(format!("{:.2}", l.derived.sent_kb_per_sec)),
            ]);
            row
        })
        .collect();
    table(&head, &rows, report.total.is_some())
}

fn count(l: &LevelReport, c: Class) -> u64 {
    l.stats.counts.get(c)
}

/// Class counts per level, with the timeout and connection-error splits and events.
fn outcome_table(report: &Report) -> String {
    let groups = visible_groups(&report.levels);
    let mut head = vec![Cell::text(level_axis_title(report)), Cell::num("# Samples")];
    head.extend(groups.iter().map(|g| Cell::num(g.name)));
    head.extend(
        [
            "Timeouts connect / pool / response",
            "Refused / reset / closed",
            "Events",
            "Failed events",
            "Retries",
        ]
        .map(Cell::num),
    );
    let rows: Vec<Vec<Cell>> = rows_with_total(report)
        .into_iter()
        .map(|l| {
            let mut row = vec![
                Cell::text(&l.label),
                Cell::num(l.derived.samples.to_string()),
            ];
            row.extend(groups.iter().map(|g| Cell::num(g.count(l).to_string())));
            row.push(Cell::num(format!(
                "{} / {} / {}",
                count(l, Class::TimeoutConnect),
                count(l, Class::TimeoutPoolWait),
                count(l, Class::TimeoutResponse)
            )));
            row.push(Cell::num(format!(
                "{} / {} / {}",
                count(l, Class::ConnRefused),
                count(l, Class::ConnReset),
                count(l, Class::ConnClosed)
            )));
            row.push(Cell::num(l.derived.events.total.to_string()));
            row.push(Cell::num(l.derived.events.failed.to_string()));
            row.push(Cell::num(l.derived.events.retries.to_string()));
            row
        })
        .collect();
    table(&head, &rows, report.total.is_some())
}

/// Attempts per address, then the TLS handshakes and whether certificates were checked.
fn hub_rows(h: &crate::report::model::HubHost) -> Vec<(String, String)> {
    let mut rows: Vec<(String, String)> = h
        .addresses
        .iter()
        .map(|a| (a.address.clone(), format!("{} attempts", a.attempts)))
        .collect();
    if let Some(t) = &h.tls_handshakes {
        let mean_ms = t.sum_us.checked_div(t.count).unwrap_or(0) as f64 / 1000.0;
        rows.push((
            "TLS handshakes".into(),
            format!("{} (mean {mean_ms:.2} ms)", t.count),
        ));
        let verified = if h.tls_insecure {
            "NOT verified (--insecure)"
        } else {
            "verified"
        };
        rows.push(("TLS certificate".into(), verified.into()));
    }
    rows
}

fn phase_rows(p: &PhaseReport) -> Vec<(String, String)> {
    let mut rows = vec![
        ("Topics".to_string(), p.result.topics.to_string()),
        ("Accepted".to_string(), p.accepted.to_string()),
        (
            "Already registered (409)".to_string(),
            p.result.already_registered.to_string(),
        ),
        ("Failed".to_string(), p.failed.to_string()),
        (
            "Duration".to_string(),
            format!("{:.2} s", p.result.duration_s),
        ),
    ];
    for (class, n) in &p.result.counts.to_map() {
        if *n > 0 && class != Class::Accepted.name() {
            rows.push((format!("Class {class}"), n.to_string()));
        }
    }
    if let Some(e) = &p.result.first_error {
        rows.push(("First error".to_string(), e.clone()));
    }
    rows
}

/// Flatten the configuration JSON into dotted keys; arrays of scalars are joined with ", ".
fn flatten_config(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    use serde_json::Value;
    let key = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                flatten_config(&key(k), v, out);
            }
        }
        Value::Array(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
            let joined: Vec<String> = items.iter().map(scalar).collect();
            out.push((prefix.to_string(), joined.join(", ")));
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                flatten_config(&key(&i.to_string()), item, out);
            }
        }
        other => out.push((prefix.to_string(), scalar(other))),
    }
}

fn scalar(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "—".to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
pub(crate) mod tests;
