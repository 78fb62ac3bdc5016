//! The terminal table's fairness block: per level, Jain's index, the p99 and error spreads and
//! the worst tenants (`levels[].fairness`; printed only when a level has two tenants or more),
//! and with `--surge` each level's isolation verdict in a sentence.

use super::precision::ms3;
use crate::align::align;
use crate::fairness::TenantShare;
use crate::run_report::Report;

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

/// `name figure, …` for a worst list.
fn names(list: &[TenantShare], figure: impl Fn(&TenantShare) -> String) -> String {
    let v: Vec<String> = list
        .iter()
        .map(|t| format!("{} {}", t.tenant, figure(t)))
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
    let verdicts: String = report
        .levels
        .iter()
        .filter_map(|l| {
            l.isolation
                .as_ref()
                .map(|i| format!("  {}: {}\n", l.label, i.sentence))
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
    match (table, isolation) {
        (None, None) => None,
        (t, i) => Some(t.unwrap_or_default() + &i.unwrap_or_default()),
    }
}
