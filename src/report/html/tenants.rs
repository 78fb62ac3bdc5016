//! The "Tenants" section of report.html: per level, the surge's isolation verdicts
//! (`levels[].isolation`, `levels[].delivery_isolation`), the fairness figures and a bar chart
//! of every tenant's p99, highest first (`levels[].fairness`), and with subscribers the same
//! chart of each tenant's delivery p99 with a table of its deliveries
//! (`levels[].fairness.delivery`).

use std::fmt::Write;

use super::markup::fmt_error_pct;
use super::svg::escape;
use crate::fairness::delivery::DeliveryFairness;
use crate::fairness::Fairness;
use crate::report::document::Report;
use crate::report::precision::ms3;

/// Bars drawn per level at most: the tenants past it are the fastest, named in a note.
pub const MAX_BARS: usize = 100;
const ROW: f64 = 16.0;
const LABEL_W: f64 = 120.0;
const BAR_W: f64 = 420.0;

/// One tenant's bar: its name, its p99, whether it failed (drawn red), and what its tooltip
/// adds after the p99.
struct Bar<'a> {
    tenant: &'a str,
    p99_us: u64,
    failed: bool,
    detail: String,
}

/// One level's chart: a horizontal bar per tenant, p99 descending (ties by name), at most
/// [`MAX_BARS`], and a dashed line at the median tenant's p99. `what` names the latency.
fn chart(what: &str, mut bars: Vec<Bar<'_>>, median_p99_us: u64) -> String {
    bars.sort_by(|a, b| b.p99_us.cmp(&a.p99_us).then(a.tenant.cmp(b.tenant)));
    let hidden = bars.len().saturating_sub(MAX_BARS);
    bars.truncate(MAX_BARS);
    let top = bars.first().map_or(0, |t| t.p99_us).max(1) as f64;
    let median_x = LABEL_W + BAR_W * median_p99_us as f64 / top;
    let height = ROW * bars.len() as f64 + 8.0;
    let mut s = format!(
        "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {height}\" role=\"img\"><title>{what} p99 by tenant, ms</title>",
        w = LABEL_W + BAR_W + 110.0
    );
    for (i, t) in bars.iter().enumerate() {
        let y = ROW * i as f64 + 4.0;
        let w = (BAR_W * t.p99_us as f64 / top).max(1.0);
        let colour = if t.failed { "#c0504d" } else { "#4f81bd" };
        let _ = write!(
            s,
            "<text class=\"tick\" x=\"{lx}\" y=\"{ty}\" text-anchor=\"end\">{name}</text>\
             <rect x=\"{LABEL_W}\" y=\"{y}\" width=\"{w:.1}\" height=\"{h}\" fill=\"{colour}\"><title>{name}: {what} p99 {p99} ms, {detail}</title></rect>\
             <text class=\"tick\" x=\"{vx:.1}\" y=\"{ty}\">{p99} ms</text>",
            lx = LABEL_W - 6.0,
            ty = y + ROW - 5.0,
            name = escape(t.tenant),
            h = ROW - 3.0,
            p99 = ms3(t.p99_us as f64),
            detail = t.detail,
            vx = LABEL_W + w + 4.0,
        );
    }
    let _ = write!(
        s,
        "<line class=\"separator\" x1=\"{median_x:.1}\" x2=\"{median_x:.1}\" y1=\"0\" y2=\"{height}\"><title>median tenant {what} p99</title></line></svg>"
    );
    if hidden > 0 {
        let _ = write!(s, "<p>{hidden} faster tenants not drawn.</p>");
    }
    s
}

/// The publish chart: each tenant's attempt p99, red when it had errors.
fn publish_chart(f: &Fairness) -> String {
    let bars = f
        .by_tenant
        .iter()
        .map(|t| Bar {
            tenant: &t.tenant,
            p99_us: t.p99_us,
            failed: t.good < t.attempts,
            detail: format!(
                "{} errors, {} attempts",
                fmt_error_pct(t.error_pct),
                t.attempts
            ),
        })
        .collect();
    chart("publish", bars, f.median_p99_us)
}

/// The delivery chart: each tenant's delivery p99 (publish start → received), red when a
/// delivery owed to it was lost.
fn delivery_chart(d: &DeliveryFairness) -> String {
    let bars = d
        .by_tenant
        .iter()
        .map(|t| Bar {
            tenant: &t.tenant,
            p99_us: t.p99_us,
            failed: t.lost > 0,
            detail: format!(
                "{} of {} delivered, loss {:.2} %",
                t.delivered, t.expected, t.loss_pct
            ),
        })
        .collect();
    chart("delivery", bars, d.median_p99_us)
}

/// One level's deliveries: the spreads, the chart, and a table of the tenants the chart draws
/// (owed, delivered, loss %, delivery p99; highest p99 first).
fn delivery_part(d: &DeliveryFairness) -> String {
    let mut ts: Vec<_> = d.by_tenant.iter().collect();
    ts.sort_by(|a, b| b.p99_us.cmp(&a.p99_us).then(a.tenant.cmp(&b.tenant)));
    ts.truncate(MAX_BARS);
    let mut s = format!(
        "<p>Deliveries (publish start → received; red: a delivery was lost): p99 spread {}×, median p99 {} ms, loss spread {:.2} pp.</p><figure>{}</figure><table><tr><th>Tenant</th><th>Owed</th><th>Delivered</th><th>Loss %</th><th>Delivery p99 ms</th></tr>",
        d.p99_spread.map_or("-".into(), |x| format!("{x:.2}")),
        ms3(d.median_p99_us as f64),
        d.loss_spread_pp,
        delivery_chart(d),
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
        // The surge's verdicts first: the sentences a reader came for.
        for (what, v) in [("", &l.isolation), (" deliveries", &l.delivery_isolation)] {
            if let Some(i) = v {
                // `@levelN`: the level's number and its baseline, the level's own first pass.
                let pass = (i.level).map_or(String::new(), |n| {
                    format!(" (level {n}, against its baseline pass)")
                });
                let _ = write!(
                    b,
                    "<p class=\"isolation\"><strong>Level {}{what}{pass}:</strong> {}.</p>",
                    escape(&l.label),
                    escape(&i.sentence)
                );
            }
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
            publish_chart(f),
            f.delivery.as_ref().map_or(String::new(), delivery_part),
        );
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fairness::delivery::TenantDelivery;

    fn tenant(name: &str, p99_ms: u64, expected: u64, delivered: u64) -> TenantDelivery {
        let lost = expected - delivered;
        TenantDelivery {
            tenant: name.into(),
            expected,
            delivered,
            lost,
            loss_pct: lost as f64 * 100.0 / expected as f64,
            p50_us: 1_000,
            p99_us: p99_ms * 1_000,
            max_us: p99_ms * 1_000,
        }
    }

    #[test]
    fn deliveries_are_charted_by_tenant_highest_p99_first_red_where_one_was_lost() {
        let mut by_tenant: Vec<TenantDelivery> = (0..MAX_BARS as u64 + 3)
            .map(|i| tenant(&format!("tenant{i:04}"), 10 + i, 40, 40))
            .collect();
        by_tenant.push(tenant("surging", 2_400, 80, 60));
        let d = DeliveryFairness {
            tenants: by_tenant.len(),
            p99_spread: Some(40.0),
            median_p99_us: 60_000,
            loss_spread_pp: 25.0,
            median_loss_pct: 0.0,
            worst_p99: Vec::new(),
            worst_loss: Vec::new(),
            by_tenant,
        };
        let html = delivery_part(&d);
        assert!(html.contains("<title>delivery p99 by tenant, ms</title>"));
        // One bar per tenant drawn, the surging one first and red; the four fastest left out.
        assert_eq!(html.matches("<rect ").count(), MAX_BARS);
        let first = html.find("<rect ").unwrap();
        let red = html.find("fill=\"#c0504d\"").unwrap();
        assert!(red > first && red < html[first + 1..].find("<rect ").unwrap() + first + 1);
        assert_eq!(html.matches("fill=\"#c0504d\"").count(), 1);
        assert!(html.contains("surging: delivery p99 2400 ms, 60 of 80 delivered, loss 25.00 %"));
        assert!(html.contains("4 faster tenants not drawn."));
        // The table lists the tenants the chart draws, no more.
        assert_eq!(html.matches("<tr><td>").count(), MAX_BARS);
        assert!(!html.contains("<td>tenant0000</td>"));
    }
}
