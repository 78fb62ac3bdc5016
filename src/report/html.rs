//! `report.html`: one self-contained page (inline CSS, inline SVG charts, no scripts) per run.
//!
//! The markup is written as well-formed XML (every element closed, all text escaped) so a
//! test can parse it, and so it renders the same in every browser, headless Chromium included.

pub(crate) mod charts;
pub(crate) mod delivery;
pub(crate) mod distribution;
mod first_failures;
pub(crate) mod svg;
pub(crate) mod topics;

use std::fmt::Write;

use self::charts::{level_axis_title, visible_groups};
use self::svg::escape;
use super::precision::{latency_cells, ms3};
use super::{LevelReport, PhaseReport, Report, Reporter};
use crate::kind::Model;
use crate::result::Class;

/// Writes `report.html`.
#[derive(Debug, Clone, Copy, Default)]
pub struct HtmlReporter;

impl Reporter for HtmlReporter {
    fn file_name(&self) -> &'static str {
        "report.html"
    }

    fn render(&self, report: &Report) -> anyhow::Result<Vec<u8>> {
        Ok(render(report).into_bytes())
    }
}

/// The stylesheet shared by every hubload HTML page.
pub(crate) const CSS: &str = r#"
:root { --fg: #1d2230; --muted: #5d6475; --line: #d9dce3; --bg: #ffffff; --head: #f3f5f8; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 28px 40px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: var(--fg); background: var(--bg); }
main { max-width: 1240px; margin: 0 auto; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 28px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
.meta { color: var(--muted); margin: 0 0 14px; }
.meta code { color: var(--fg); }
.banner { padding: 10px 14px; border-radius: 6px; margin: 12px 0; font-weight: 600; }
.banner.partial { background: #fff3cd; border: 1px solid #e8c65a; color: #6b4e00; }
.banner.fail { background: #fde2e1; border: 1px solid #e38b86; color: #7d1a14; }
.banner.pass { background: #e3f4e8; border: 1px solid #8fcca2; color: #1d5a31; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 14px 0 6px; }
.card { flex: 1 1 150px; border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; }
.card .k { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card .v { font-size: 22px; font-weight: 600; font-variant-numeric: tabular-nums; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(520px, 1fr)); gap: 16px; }
.charts figure { margin: 0; border: 1px solid var(--line); border-radius: 8px; padding: 6px; }
.charts .wide { grid-column: 1 / -1; }
svg.chart { width: 100%; height: auto; display: block; font-family: inherit; }
svg .chart-title { font-size: 15px; font-weight: 600; fill: var(--fg); }
svg .tick { font-size: 11px; fill: var(--muted); }
svg .axis-title, svg .legend { font-size: 12px; fill: var(--fg); }
svg .grid { stroke: #eceef2; stroke-width: 1; }
svg .axis { stroke: #8a90a0; stroke-width: 1; }
svg .separator { stroke: #b7bcc8; stroke-width: 1; stroke-dasharray: 3 3; }
svg .separator-label { font-size: 10px; fill: var(--muted); }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: 13px; font-variant-numeric: tabular-nums; }
th, td { padding: 5px 9px; border-bottom: 1px solid var(--line); text-align: left; white-space: nowrap; }
thead th { background: var(--head); font-weight: 600; white-space: normal; vertical-align: bottom; max-width: 9em; }
td.num, th.num { text-align: right; }
tr.total td { font-weight: 700; border-top: 2px solid #9aa0ad; }
tbody tr:nth-child(even) td { background: #fafbfc; }
td.worse { color: #b3261e; font-weight: 600; }
td.better { color: #1d7a3a; font-weight: 600; }
td.flag { color: #8a5a00; font-style: italic; }
.metrics { display: grid; grid-template-columns: repeat(auto-fit, minmax(460px, 1fr)); gap: 8px 32px; }
.metrics h3 { font-size: 15px; margin: 6px 0; }
table.compare { width: 100%; }
table.compare thead th { white-space: nowrap; max-width: none; }
table.kv td:first-child { color: var(--muted); }
table.kv td { white-space: normal; word-break: break-word; }
.cols { display: flex; flex-wrap: wrap; gap: 28px; align-items: flex-start; }
footer { margin-top: 32px; color: var(--muted); font-size: 12px; }
"#;

/// A whole HTML document around `body` (already markup).
pub(crate) fn document(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\
         <title>{}</title><style>{CSS}</style></head><body><main>{body}</main></body></html>\n",
        escape(title)
    )
}

/// One table cell: text (escaped when rendered) and an optional CSS class.
#[derive(Debug, Clone)]
pub(crate) struct Cell {
    pub text: String,
    pub class: Option<&'static str>,
}

impl Cell {
    /// A left-aligned text cell.
    pub fn text(s: impl Into<String>) -> Self {
        Cell {
            text: s.into(),
            class: None,
        }
    }
    /// A right-aligned number cell.
    pub fn num(s: impl Into<String>) -> Self {
        Cell {
            text: s.into(),
            class: Some("num"),
        }
    }
}

/// A table with a header row; `total_last` bolds the last row (the TOTAL).
pub(crate) fn table(head: &[Cell], rows: &[Vec<Cell>], total_last: bool) -> String {
    let mut out = String::from("<div class=\"scroll\"><table><thead><tr>");
    for h in head {
        cell(&mut out, "th", h);
    }
    out.push_str("</tr></thead><tbody>");
    for (i, row) in rows.iter().enumerate() {
        if total_last && i + 1 == rows.len() {
            out.push_str("<tr class=\"total\">");
        } else {
            out.push_str("<tr>");
        }
        for c in row {
            cell(&mut out, "td", c);
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
    out
}

fn cell(out: &mut String, tag: &str, c: &Cell) {
    match c.class {
        Some(class) => {
            let _ = write!(out, "<{tag} class=\"{class}\">{}</{tag}>", escape(&c.text));
        }
        None => {
            let _ = write!(out, "<{tag}>{}</{tag}>", escape(&c.text));
        }
    }
}

/// A two-column key/value table.
pub(crate) fn kv_table(rows: &[(String, String)]) -> String {
    let mut out = String::from("<table class=\"kv\"><tbody>");
    for (k, v) in rows {
        let _ = write!(out, "<tr><td>{}</td><td>{}</td></tr>", escape(k), escape(v));
    }
    out.push_str("</tbody></table>");
    out
}

/// An error percentage the JMeter way: three decimals and a percent sign ("0.200%").
pub(crate) fn fmt_error_pct(p: f64) -> String {
    format!("{p:.3}%")
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
            wide(delivery::latency(report)),
            wide(delivery::backlog(report)),
        );
    }
    b.push_str("<h2>Aggregate</h2>");
    b.push_str(&aggregate_table(report));
    b.push_str("<h2>Outcomes per level</h2>");
    b.push_str(&outcome_table(report));
    b.push_str(&topics::worst_topics(report));
    b.push_str(&first_failures::section(report));
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
        ("Attempts", t.samples.to_string()),
        ("Error %", fmt_error_pct(t.error_pct)),
        ("Throughput", format!("{:.1}/s", t.throughput)),
        ("Median", format!("{} ms", ms3(t.latency_us.p50 as f64))),
        ("p99", format!("{} ms", ms3(t.latency_us.p99 as f64))),
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
            let mut row = vec![Cell::text(&l.label), Cell::num(l.samples.to_string())];
            // Three significant digits (ms) where aggregate.csv has whole milliseconds.
            row.extend(latency_cells(l).map(Cell::num));
            row.extend([
                Cell::num(fmt_error_pct(l.error_pct)),
                Cell::num(format!("{:.1}", l.throughput)),
                Cell::num(format!("{:.2}", l.received_kb_per_sec)),
                Cell::num(format!("{:.2}", l.sent_kb_per_sec)),
            ]);
            row
        })
        .collect();
    table(&head, &rows, report.total.is_some())
}

fn count(l: &LevelReport, c: Class) -> u64 {
    l.counts.get(c.name()).copied().unwrap_or(0)
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
            let mut row = vec![Cell::text(&l.label), Cell::num(l.samples.to_string())];
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
            row.push(Cell::num(l.events.total.to_string()));
            row.push(Cell::num(l.events.failed.to_string()));
            row.push(Cell::num(l.events.retries.to_string()));
            row
        })
        .collect();
    table(&head, &rows, report.total.is_some())
}

/// Attempts per address, then the TLS handshakes and whether certificates were checked.
fn hub_rows(h: &crate::report::HubHost) -> Vec<(String, String)> {
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
        ("Topics".to_string(), p.topics.to_string()),
        ("Accepted".to_string(), p.accepted.to_string()),
        (
            "Already registered (409)".to_string(),
            p.already_registered.to_string(),
        ),
        ("Failed".to_string(), p.failed.to_string()),
        ("Duration".to_string(), format!("{:.2} s", p.duration_s)),
    ];
    for (class, n) in &p.counts {
        if *n > 0 && class != Class::Accepted.name() {
            rows.push((format!("Class {class}"), n.to_string()));
        }
    }
    if let Some(e) = &p.first_error {
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
