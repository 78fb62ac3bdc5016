//! The "Tenants" section of report.html: per level, the surge's isolation verdict
//! (`levels[].isolation`), the fairness figures and a bar chart of every tenant's p99, highest
//! first (`levels[].fairness`), and with subscribers a table of each tenant's deliveries
//! (`levels[].fairness.delivery`).

use std::fmt::Write;

use super::markup::fmt_error_pct;
use super::svg::escape;
use crate::fairness::delivery::DeliveryFairness;
use crate::fairness::Fairness;
use crate::report::precision::ms3;
use crate::run_report::Report;

/// Bars drawn per level at most: the tenants past it are the fastest, named in a note.
pub const MAX_BARS: usize = 100;
const ROW: f64 = 16.0;
const LABEL_W: f64 = 120.0;
const BAR_W: f64 = 420.0;

/// One level's chart: a horizontal bar per tenant, p99 descending (ties by name).
fn chart(f: &Fairness) -> String {
    let mut ts: Vec<_> = f.by_tenant.iter().collect();
    ts.sort_by(|a, b| b.p99_us.cmp(&a.p99_us).then(a.tenant.cmp(&b.tenant)));
    let hidden = ts.len().saturating_sub(MAX_BARS);
    ts.truncate(MAX_BARS);
    let top = ts.first().map_or(0, |t| t.p99_us).max(1) as f64;
    let median_x = LABEL_W + BAR_W * f.median_p99_us as f64 / top;
    let height = ROW * ts.len() as f64 + 8.0;
    let mut s = format!(
        "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {height}\" role=\"img\"><title>p99 by tenant, ms</title>",
        w = LABEL_W + BAR_W + 110.0
    );
    for (i, t) in ts.iter().enumerate() {
        let y = ROW * i as f64 + 4.0;
        let w = (BAR_W * t.p99_us as f64 / top).max(1.0);
        let colour = if t.good < t.attempts {
            "#c0504d"
        } else {
            "#4f81bd"
        };
        let _ = write!(
            s,
            "<text class=\"tick\" x=\"{lx}\" y=\"{ty}\" text-anchor=\"end\">{name}</text>\
             <rect x=\"{LABEL_W}\" y=\"{y}\" width=\"{w:.1}\" height=\"{h}\" fill=\"{colour}\"><title>{name}: p99 {p99} ms, {err} errors, {n} attempts</title></rect>\
             <text class=\"tick\" x=\"{vx:.1}\" y=\"{ty}\">{p99} ms</text>",
            lx = LABEL_W - 6.0,
            ty = y + ROW - 5.0,
            name = escape(&t.tenant),
            h = ROW - 3.0,
            p99 = ms3(t.p99_us as f64),
            err = fmt_error_pct(t.error_pct),
            n = t.attempts,
            vx = LABEL_W + w + 4.0,
        );
    }
    let _ = write!(
        s,
        "<line class=\"separator\" x1=\"{median_x:.1}\" x2=\"{median_x:.1}\" y1=\"0\" y2=\"{height}\"><title>median tenant p99</title></line></svg>"
    );
    if hidden > 0 {
        let _ = write!(s, "<p>{hidden} faster tenants not drawn.</p>");
    }
    s
}

/// One level's deliveries by tenant: owed, delivered, loss %, delivery p99, highest p99 first.
fn delivery_table(d: &DeliveryFairness) -> String {
    let mut ts: Vec<_> = d.by_tenant.iter().collect();
    ts.sort_by(|a, b| b.p99_us.cmp(&a.p99_us).then(a.tenant.cmp(&b.tenant)));
    let mut s = format!(
        "<p>Deliveries (publish start → received): p99 spread {}×, median p99 {} ms, loss spread {:.2} pp.</p>         <table><tr><th>Tenant</th><th>Owed</th><th>Delivered</th><th>Loss %</th><th>Delivery p99 ms</th></tr>",
        d.p99_spread.map_or("-".into(), |x| format!("{x:.2}")),
        ms3(d.median_p99_us as f64),
        d.loss_spread_pp,
    );
    for t in ts {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.2}</td><td>{}</td></tr>",
            escape(&t.tenant),
            t.expected,
            t.delivered,
            t.loss_pct,
            ms3(t.p99_us as f64),
        );
    }
    s + "</table>"
}

/// The section, or an empty string when no level has fairness figures.
pub fn section(report: &Report) -> String {
    let levels: Vec<_> = report
        .levels
        .iter()
        .filter_map(|l| l.fairness.as_ref().map(|f| (l, f)))
        .collect();
    if levels.is_empty() {
        return String::new();
    }
    let mut b = String::from("<h2>Tenants</h2><p>Per level, every tenant's p99 (highest first; red: the tenant had errors; dashed: the median tenant). Jain's index is computed on each tenant's goodput divided by its offered share: 1 is fair, 1/n is one tenant served alone. Tenant percentiles come from the compact per-topic histograms and read up to 12.5% high.</p>");
    for (l, f) in levels {
        if let Some(i) = &l.isolation {
            // The surge's verdict first: the sentence a reader came for.
            let _ = write!(
                b,
                "<p class=\"isolation\"><strong>Level {}:</strong> {}.</p>",
                escape(&l.label),
                escape(&i.sentence)
            );
        }
        let fig = |v: Option<f64>, d: usize| v.map_or("-".into(), |x| format!("{x:.d$}"));
        let _ = write!(
            b,
            "<details><summary>Level {} ({} tenants): Jain {}, p99 spread {}×, error spread {:.2} pp</summary><figure>{}</figure>{}</details>",
            escape(&l.label),
            f.tenants,
            fig(f.jain_index, 3),
            fig(f.p99_spread, 2),
            f.error_spread_pp,
            chart(f),
            f.delivery.as_ref().map_or(String::new(), delivery_table),
        );
    }
    b
}
