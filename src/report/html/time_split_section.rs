//! The HTML report's "Where the time went" section: per level, the client's median of accepted
//! attempts split into the stages the server declared (`Server-Timing`) and the rest (network,
//! queueing, the client), each with its share.

use std::collections::BTreeSet;

use super::markup::{head_cells, table, Cell};
use crate::report::document::Report;
use crate::report::model::time_split::time_split;
use crate::report::precision::ms3;

/// The section, or nothing when no response declared a stage.
pub(crate) fn section(report: &Report) -> String {
    let rows: Vec<_> = report
        .levels
        .iter()
        .chain(report.total.as_ref())
        .filter_map(|l| time_split(l).map(|s| (l.label.as_str(), s)))
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let names: BTreeSet<&str> = rows
        .iter()
        .flat_map(|(_, s)| s.stages.iter().map(|(n, _)| n.as_str()))
        .collect();
    let mut head = vec!["Level".to_string(), "Client p50 (ms)".to_string()];
    head.extend(names.iter().map(|n| format!("{n} p50 (ms)")));
    head.push("Rest (ms)".into());
    let head_refs: Vec<&str> = head.iter().map(String::as_str).collect();
    let share = |us: u64, client: u64| {
        if client == 0 {
            ms3(us as f64)
        } else {
            format!(
                "{} ({:.0}%)",
                ms3(us as f64),
                us as f64 * 100.0 / client as f64
            )
        }
    };
    let body: Vec<Vec<Cell>> = rows
        .iter()
        .map(|(label, s)| {
            let mut r = vec![
                Cell::text(label.to_string()),
                Cell::num(ms3(s.client_p50_us as f64)),
            ];
            for n in &names {
                let us = s.stages.iter().find(|(m, _)| m == n).map(|(_, us)| *us);
                r.push(Cell::num(
                    us.map_or("-".into(), |us| share(us, s.client_p50_us)),
                ));
            }
            r.push(Cell::num(share(s.rest_us, s.client_p50_us)));
            r
        })
        .collect();
    let total_last = report
        .total
        .as_ref()
        .is_some_and(|t| time_split(t).is_some());
    format!(
        "<h2>Where the time went</h2><p>The median of accepted attempts as the client measured \
         it, split into the stages the server declared in <code>Server-Timing</code> (their \
         medians) and the rest: network, queueing and the client.</p>{}",
        table(&head_cells(&head_refs), &body, total_last)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::server_timing::ServerTimingReport;

    #[test]
    fn stages_and_rest_with_shares() {
        let mut r = Report::new_empty(crate::kind::Model::Closed, serde_json::Value::Null, vec![]);
        let stats = crate::stats::LevelStats::default();
        let mut level =
            crate::report::model::build::level_report("8", Some(8), None, &stats, false);
        r.levels.push(level.clone());
        assert_eq!(section(&r), "");
        for (name, p50_us) in [("broker", 2_000), ("hub", 500)] {
            level.derived.server_timing.insert(
                name.into(),
                ServerTimingReport {
                    count: 5,
                    p50_us,
                    p99_us: p50_us,
                    max_us: p50_us,
                },
            );
        }
        level.derived.accepted_latency_us.p50 = 5_000;
        r.levels[0] = level;
        let html = section(&r);
        assert!(html.contains("<h2>Where the time went</h2>"), "{html}");
        for cell in ["5.00", "2.00 (40%)", "0.500 (10%)", "2.50 (50%)"] {
            assert!(html.contains(&format!(">{cell}<")), "{cell}: {html}");
        }
    }
}
