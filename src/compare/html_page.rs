//! `compare.html`: the comparison as one self-contained page (the run report's CSS and SVG kit),
//! with the delivery tables and charts when both runs have deliveries.

use std::fmt::Write;

use super::format::{plain_delta, plain_pct, plain_value};
use crate::report::html::markup::{document, kv_table};
use crate::report::html::svg::{escape, spans_decades, LineChart, Series, XAxis};
use crate::report::judge::comparison::{Comparison, Delta, LevelComparison, Metrics};
use crate::report::judge::fail_if::{FailIf, Violation};
use crate::report::judge::metric::Metric;

/// Relative changes at least this large (in %) are coloured.
const NOTABLE_PCT: f64 = 5.0;
/// Error-rate changes at least this large (in percentage points) are coloured.
const NOTABLE_ERROR_PP: f64 = 0.5;

/// The CSS class of a delta cell: notable changes are coloured worse or better (Expected,
/// what the hub owed, is neither).
fn delta_class(m: Metric, abs: f64, pct: Option<f64>) -> &'static str {
    if m == Metric::Expected {
        return "num";
    }
    let notable = if m == Metric::Errors {
        abs.abs() >= NOTABLE_ERROR_PP
    } else {
        pct.is_none_or(|p| p.abs() >= NOTABLE_PCT)
    };
    if !notable || abs == 0.0 {
        "num"
    } else if (abs > 0.0) == m.higher_is_better() {
        "num better"
    } else {
        "num worse"
    }
}

/// One table per metric (level, baseline, candidate, Δ, Δ %), so the page fits a screen;
/// `compare.csv` has the same numbers side by side for spreadsheets.
fn metric_tables(cmp: &Comparison, metrics: &[Metric]) -> String {
    let mut out = String::from("<div class=\"metrics\">");
    for &m in metrics {
        let title = match m.unit() {
            "" | "%" => m.name().to_string(),
            unit => format!("{} ({unit})", m.name()),
        };
        let delta = match m.delta_unit() {
            "" => "Δ".to_string(),
            u => format!("Δ {u}"),
        };
        let _ = write!(
            out,
            "<section><h3>{}</h3><table class=\"compare\"><thead><tr><th>{}</th>\
             <th class=\"num\">baseline</th><th class=\"num\">candidate</th>\
             <th class=\"num\">{}</th><th class=\"num\">Δ %</th></tr></thead><tbody>",
            escape(&title),
            escape(&cmp.level_title),
            escape(&delta),
        );
        for row in cmp.rows() {
            let total = cmp.total.as_ref() == Some(row);
            out.push_str(if total {
                "<tr class=\"total\">"
            } else {
                "<tr>"
            });
            let _ = write!(out, "<td>{}</td>", escape(&row.label));
            match (row.baseline, row.candidate) {
                (Some(b), Some(c)) => match (b.get(m), c.get(m)) {
                    (Some(bv), Some(cv)) => {
                        let d = Delta::between(bv, cv);
                        let class = delta_class(m, d.abs, d.pct);
                        let _ = write!(
                            out,
                            "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"{class}\">{}</td><td class=\"{class}\">{}</td>",
                            escape(&plain_value(m, bv)),
                            escape(&plain_value(m, cv)),
                            escape(&plain_delta(m, d.abs)),
                            escape(&d.pct.map_or_else(|| "n/a".to_string(), plain_pct)),
                        );
                    }
                    _ => out.push_str(
                        "<td class=\"flag\" colspan=\"4\">no delivery section in one run</td>",
                    ),
                },
                (b, _) => {
                    let which = if b.is_some() { "baseline" } else { "candidate" };
                    let _ = write!(
                        out,
                        "<td class=\"flag\" colspan=\"4\">only in the {which} run</td>"
                    );
                }
            }
            out.push_str("</tr>");
        }
        out.push_str("</tbody></table></section>");
    }
    out.push_str("</div>");
    out
}

fn chart(cmp: &Comparison, m: Metric, id: &str) -> String {
    let points = |side: fn(&LevelComparison) -> Option<Metrics>| {
        cmp.levels
            .iter()
            .enumerate()
            .map(|(i, r)| side(r).and_then(|s| s.get(m)).map(|v| (i as f64, v)))
            .collect()
    };
    let series = vec![
        Series {
            name: "baseline".into(),
            color: "#8a90a0",
            points: points(|r| r.baseline),
            markers: true,
            dashed: true,
        },
        Series {
            name: "candidate".into(),
            color: "#1f77b4",
            points: points(|r| r.candidate),
            markers: true,
            dashed: false,
        },
    ];
    let log_y = m.is_latency() && spans_decades(&series);
    let scale = if log_y { ", log scale" } else { "" };
    LineChart {
        id: id.to_string(),
        title: format!("{}: baseline vs candidate", m.name()),
        x_label: cmp.level_title.clone(),
        y_label: match m {
            Metric::Errors => "% of attempts not accepted".to_string(),
            Metric::Rate => "Attempts per second".to_string(),
            Metric::DeliveredRate => "Deliveries per second".to_string(),
            m if m.is_delivery_count() => format!("{} (deliveries)", m.name()),
            _ => format!("{} (ms{scale})", m.name()),
        },
        unit: m.unit().to_string(),
        x: XAxis::Categories(cmp.levels.iter().map(|r| r.label.clone()).collect()),
        series,
        separators: vec![],
        width: None,
        log_y,
    }
    .render()
}

/// Render `compare.html`. With `rules`, the page opens with the gate's verdict.
pub fn render_html(cmp: &Comparison, rules: &[FailIf], violations: &[Violation]) -> String {
    let mut b = String::from("<h1>hubload comparison</h1>");
    b.push_str(&kv_table(&[
        ("Baseline".to_string(), cmp.baseline_name.clone()),
        ("Candidate".to_string(), cmp.candidate_name.clone()),
    ]));
    if !rules.is_empty() {
        let names: Vec<String> = rules.iter().map(ToString::to_string).collect();
        if violations.is_empty() {
            let _ = write!(
                b,
                "<div class=\"banner pass\" id=\"verdict\">PASS: no level breaks {}</div>",
                escape(&names.join(", "))
            );
        } else {
            let _ = write!(
                b,
                "<div class=\"banner fail\" id=\"verdict\">FAIL: {} threshold violation(s)<ul>",
                violations.len()
            );
            for v in violations {
                let _ = write!(b, "<li>{}</li>", escape(&v.to_string()));
            }
            b.push_str("</ul></div>");
        }
    }
    b.push_str("<h2>Per level</h2>");
    let metrics = cmp.metrics();
    let delivery: Vec<Metric> = metrics
        .iter()
        .copied()
        .filter(|m| m.is_delivery())
        .collect();
    b.push_str(&metric_tables(cmp, &Metric::ALL));
    if !delivery.is_empty() {
        b.push_str(
            "<h2 id=\"delivery\">Deliveries per level (end-to-end: publish start → subscriber)</h2>",
        );
        b.push_str(&metric_tables(cmp, &delivery));
    }
    b.push_str(&super::server_timing_deltas::render_html(
        &cmp.server_timing,
    ));
    let _ = write!(
        b,
        "<p class=\"meta\">Δ = candidate − baseline; Δ % is relative to the baseline. Changes of \
         {NOTABLE_PCT}% or more ({NOTABLE_ERROR_PP} points for Error %) are coloured: red worse, \
         green better.</p>"
    );
    if !cmp.levels.is_empty() {
        let _ = write!(
            b,
            "<h2>Charts</h2><div class=\"charts\"><figure>{}</figure><figure>{}</figure>\
             <figure>{}</figure><figure>{}</figure></div>",
            chart(cmp, Metric::P(99), "chart-p99"),
            chart(cmp, Metric::P(50), "chart-median"),
            chart(cmp, Metric::Rate, "chart-throughput"),
            chart(cmp, Metric::Errors, "chart-errors"),
        );
        if !delivery.is_empty() {
            let _ = write!(
                b,
                "<div class=\"charts\"><figure>{}</figure><figure>{}</figure>\
                 <figure>{}</figure><figure>{}</figure></div>",
                chart(cmp, Metric::E2eP(99), "chart-e2e-p99"),
                chart(cmp, Metric::E2eP(50), "chart-e2e-median"),
                chart(cmp, Metric::DeliveredRate, "chart-delivered-rate"),
                chart(cmp, Metric::Lost, "chart-lost"),
            );
        }
    }
    document("hubload comparison", &b)
}
