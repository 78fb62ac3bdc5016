//! The terminal table's delivery-stages block: per level, where the end-to-end latency went
//! by the hub's `Hub-Timing` (`hub`, `broker`, `queue`) and the `rest` (printed only when a
//! delivery carried the header).

use super::server_timing::stage_row;
use crate::align::align;
use crate::report::document::Report;

/// The block's columns (report.html's stages table has the same).
pub(crate) const HEAD: [&str; 6] = ["Level", "Stage", "Count", "p50", "p99", "max"];

/// The rows: per level (then TOTAL) with stages, one per stage in the order of a delivery's
/// path (`hub`, `broker`, `queue`, then any other the hub declared, then `rest`).
pub(crate) fn stage_rows(report: &Report) -> Vec<[String; 6]> {
    let order = |n: &str| match n {
        "hub" => 0,
        "broker" => 1,
        "queue" => 2,
        crate::subscriber::stages::REST => 4,
        _ => 3,
    };
    let mut out = Vec::new();
    for row in report.levels.iter().chain(report.total.as_ref()) {
        let Some(d) = &row.delivery else { continue };
        let mut stages: Vec<_> = d.stages.iter().collect();
        stages.sort_by_key(|(n, _)| (order(n), n.to_string()));
        for (name, r) in stages {
            out.push(stage_row(&row.label, name, r));
        }
    }
    out
}

/// What could not be read, when anything (the levels' sum), as one line.
pub(crate) fn malformed_note(report: &Report) -> Option<String> {
    let n: u64 = report
        .levels
        .iter()
        .filter_map(|l| l.delivery.as_ref())
        .map(|d| d.stages_malformed)
        .sum();
    (n > 0).then(|| format!("{n} Hub-Timing metrics could not be read and were skipped."))
}

/// The block, or `None` when no delivery carried `Hub-Timing`.
pub fn render_delivery_stages_table(report: &Report) -> Option<String> {
    let rows = stage_rows(report);
    let note = malformed_note(report);
    if rows.is_empty() && note.is_none() {
        return None;
    }
    let mut grid: Vec<Vec<String>> = vec![HEAD.iter().map(|h| h.to_string()).collect()];
    grid.extend(rows.into_iter().map(Vec::from));
    let mut out = format!(
        "\nDelivery stages (Hub-Timing, ms; end-to-end = hub + broker + queue + rest per delivery)\n{}",
        align(&grid)
    );
    if let Some(note) = note {
        out.push_str(&note);
        out.push('\n');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::delivery_report::delivery_report;
    use crate::result::ServerTimings;
    use crate::subscriber::stages::record_stages;
    use crate::subscriber::DeliveryLevelStats;

    #[test]
    fn one_line_per_stage_in_path_order() {
        let mut report = crate::report::html::tests::sample();
        assert_eq!(render_delivery_stages_table(&report), None);
        let mut s = DeliveryLevelStats::default();
        for ms in 1..=4 {
            let mut t = ServerTimings::NONE;
            t.add_header(format!("queue;dur={ms}, hub;dur=0.5, broker;dur=1").as_bytes());
            record_stages(&mut s.stages, &t, 10_000);
        }
        let mut bad = ServerTimings::NONE;
        bad.add_header(b"queue;dur=x");
        record_stages(&mut s.stages, &bad, 10_000);
        report.levels[0].delivery = Some(delivery_report(&s, 1.0, 0));
        let t = render_delivery_stages_table(&report).unwrap();
        let lines: Vec<Vec<&str>> = t
            .lines()
            .skip(4)
            .map(|l| l.split_whitespace().collect())
            .collect();
        let label = report.levels[0].label.as_str();
        assert_eq!(
            lines[..4],
            [
                vec![label, "hub", "4", "0.500", "0.500", "0.500"],
                vec![label, "broker", "4", "1.00", "1.00", "1.00"],
                vec![label, "queue", "4", "2.00", "4.00", "4.00"],
                vec![label, "rest", "4", "5.50", "7.50", "7.50"],
            ]
        );
        assert!(t.ends_with("1 Hub-Timing metrics could not be read and were skipped.\n"));
    }
}
