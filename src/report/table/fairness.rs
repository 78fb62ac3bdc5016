//! The terminal table's fairness block: per level, Jain's index, the p99 and error spreads and
//! the worst tenants (`levels[].fairness`; printed only when a level has two tenants or more),
//! with subscribers the same for delivery latency and loss, and with `--surge` each level's
//! isolation verdict in a sentence.

use crate::align::align;
use crate::fairness::delivery::TenantDelivery;
use crate::fairness::TenantShare;
use crate::report::document::Report;
use crate::report::precision::ms3;

/// What a verdict line says in brackets after the level's label: `what` (e.g. "deliveries"),
/// and with `@levelN` the level's number and its baseline ("level 2, against its baseline
/// pass"); nothing when neither.
fn tag(i: &crate::fairness::isolation::Isolation, what: Option<&str>) -> String {
    let level = i
        .level
        .map(|n| format!("level {n}, against its baseline pass"));
    let parts: Vec<String> = what.map(str::to_string).into_iter().chain(level).collect();
    match parts.is_empty() {
        true => String::new(),
        false => format!(" ({})", parts.join(", ")),
    }
}

/// The block's columns.
const HEAD: [&str; 8] = [
    "Level",
    "Tenants",
    "Jain",
    "p99 spread",
    "Median p99 ms",
    "Err spread pp",
    "Worst by p99",
    "Worst by error %",
];

/// The delivery block's columns.
const DELIVERY_HEAD: [&str; 7] = [
    "Level",
    "Tenants",
    "p99 spread",
    "Median p99 ms",
    "Loss spread pp",
    "Worst by delivery p99",
    "Worst by loss %",
];

/// A tenant in a worst list: its name.
trait Named {
    fn name(&self) -> &str;
}

impl Named for TenantShare {
    fn name(&self) -> &str {
        &self.tenant
    }
}

impl Named for TenantDelivery {
    fn name(&self) -> &str {
        &self.tenant
    }
}

/// `name figure, …` for a worst list.
fn names<T: Named>(list: &[T], figure: impl Fn(&T) -> String) -> String {
    let v: Vec<String> = list
        .iter()
        .map(|t| format!("{} {}", t.name(), figure(t)))
        .collect();
    if v.is_empty() {
        "-".into()
    } else {
        v.join(", ")
    }
}

/// The block, or `None` when no level has fairness figures.
pub fn render_fairness_table(report: &Report) -> Option<String> {
    let mut grid: Vec<Vec<String>> = vec![HEAD.iter().map(|h| h.to_string()).collect()];
    for l in &report.levels {
        let Some(f) = &l.fairness else { continue };
        grid.push(vec![
            l.label.clone(),
            f.tenants.to_string(),
            f.jain_index.map_or("-".into(), |j| format!("{j:.3}")),
            f.p99_spread.map_or("-".into(), |s| format!("{s:.2}x")),
            ms3(f.median_p99_us as f64),
            format!("{:.2}", f.error_spread_pp),
            names(&f.worst_p99, |t| format!("{} ms", ms3(t.p99_us as f64))),
            names(&f.worst_errors, |t| format!("{:.2}%", t.error_pct)),
        ]);
    }
    let mut delivery: Vec<Vec<String>> =
        vec![DELIVERY_HEAD.iter().map(|h| h.to_string()).collect()];
    for l in &report.levels {
        let Some(d) = l.fairness.as_ref().and_then(|f| f.delivery.as_ref()) else {
            continue;
        };
        delivery.push(vec![
            l.label.clone(),
            d.tenants.to_string(),
            d.p99_spread.map_or("-".into(), |s| format!("{s:.2}x")),
            ms3(d.median_p99_us as f64),
            format!("{:.2}", d.loss_spread_pp),
            names(&d.worst_p99, |t| format!("{} ms", ms3(t.p99_us as f64))),
            names(&d.worst_loss, |t| format!("{:.2}%", t.loss_pct)),
        ]);
    }
    let delivery = (delivery.len() > 1).then(|| {
        format!(
            "\nDelivery between tenants (subscribers; p99 spread = worst ÷ median tenant delivery p99, publish start → received; loss spread = worst − median tenant loss %)\n{}",
            align(&delivery)
        )
    });
    let verdicts: String = report
        .levels
        .iter()
        .flat_map(|l| {
            let publish = l
                .isolation
                .as_ref()
                .map(|i| format!("  {}{}: {}\n", l.label, tag(i, None), i.sentence));
            let delivery = (l.delivery_isolation.as_ref()).map(|i| {
                format!(
                    "  {}{}: {}\n",
                    l.label,
                    tag(i, Some("deliveries")),
                    i.sentence
                )
            });
            publish.into_iter().chain(delivery)
        })
        .collect();
    let isolation = (!verdicts.is_empty()).then(|| {
        format!("\nIsolation (--surge; quiet tenants during the surge vs. the seconds before it, 95 % CI by bootstrap over seconds)\n{verdicts}")
    });
    let table = (grid.len() > 1).then(|| {
        format!(
            "\nFairness between tenants (Jain's index on goodput ÷ offered share, 1 = fair; p99 spread = worst ÷ median tenant p99; error spread = worst − median tenant error %)\n{}",
            align(&grid)
        )
    });
    match (table, delivery, isolation) {
        (None, None, None) => None,
        (t, d, i) => Some(t.unwrap_or_default() + &d.unwrap_or_default() + &i.unwrap_or_default()),
    }
}
