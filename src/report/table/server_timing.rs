//! The terminal table's `Server-Timing` block: per level, each stage the server declared and
//! the rest of the client's median (printed only when a response carried the header).

use crate::align::align;
use crate::report::document::Report;
use crate::report::model::server_timing::ServerTimingReport;
use crate::report::model::time_split::time_split;
use crate::report::precision::ms3;

/// The block's columns.
const HEAD: [&str; 6] = ["Level", "Stage", "Count", "p50", "p99", "max"];

/// One stage's line: level, stage, count, p50, p99, max (ms).
pub(crate) fn stage_row(level: &str, name: &str, r: &ServerTimingReport) -> [String; 6] {
    [
        level.to_string(),
        name.to_string(),
        r.count.to_string(),
        ms3(r.p50_us as f64),
        ms3(r.p99_us as f64),
        ms3(r.max_us as f64),
    ]
}

/// The block, or `None` when no level has a declared stage.
pub fn render_server_timing_table(report: &Report) -> Option<String> {
    let mut grid: Vec<Vec<String>> = vec![HEAD.iter().map(|h| h.to_string()).collect()];
    let mut malformed = 0;
    for row in report.levels.iter().chain(report.total.as_ref()) {
        malformed += if row.label == "TOTAL" {
            0
        } else {
            row.stats.server_timing.malformed
        };
        let Some(split) = time_split(row) else {
            continue;
        };
        for (name, r) in &row.derived.server_timing {
            grid.push(stage_row(&row.label, name, r).into());
        }
        grid.push(vec![
            row.label.clone(),
            "(rest)".into(),
            String::new(),
            ms3(split.rest_us as f64),
            String::new(),
            String::new(),
        ]);
    }
    if grid.len() == 1 {
        return None;
    }
    let mut out = format!(
        "\nWhere the time went (Server-Timing stages, ms; rest = client median of accepted less the stages' medians)\n{}",
        align(&grid)
    );
    if malformed > 0 {
        out.push_str(&format!(
            "{malformed} Server-Timing metrics could not be read and were skipped.\n"
        ));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::server_timing::ServerTimingReport;

    #[test]
    fn one_line_per_stage_and_the_rest() {
        let mut r = Report::new_empty(crate::kind::Model::Closed, serde_json::Value::Null, vec![]);
        let stats = crate::stats::LevelStats::default();
        let mut level =
            crate::report::model::build::level_report("4", Some(4), None, &stats, false);
        r.levels.push(level.clone());
        assert_eq!(render_server_timing_table(&r), None);
        level.derived.server_timing.insert(
            "hub".into(),
            ServerTimingReport {
                count: 10,
                p50_us: 250,
                p99_us: 1_200,
                max_us: 3_000,
            },
        );
        level.derived.accepted_latency_us.p50 = 900;
        level.stats.server_timing.malformed = 3;
        r.levels[0] = level;
        let t = render_server_timing_table(&r).unwrap();
        let lines: Vec<&str> = t.lines().collect();
        // A blank line, the title, the header and its rule, two rows, the note.
        assert_eq!(lines.len(), 7, "{t}");
        let cells = |l: &str| l.split_whitespace().map(String::from).collect::<Vec<_>>();
        assert_eq!(cells(lines[4]), ["4", "hub", "10", "0.250", "1.20", "3.00"]);
        assert_eq!(cells(lines[5]), ["4", "(rest)", "0.650"]);
        assert!(lines[6].starts_with("3 Server-Timing metrics"), "{t}");
    }
}
