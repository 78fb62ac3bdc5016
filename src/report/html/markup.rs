//! The markup every hubload HTML page shares (report.html, compare.html): the stylesheet, the
//! document around a body, tables of escaped cells, and the JMeter way of writing an error %.

use std::fmt::Write;

use super::svg::escape;

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

/// Header cells: the first a text column, the others numbers.
pub(crate) fn head_cells(names: &[&str]) -> Vec<Cell> {
    names
        .iter()
        .enumerate()
        .map(|(i, h)| {
            if i == 0 {
                Cell::text(*h)
            } else {
                Cell::num(*h)
            }
        })
        .collect()
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
