//! `hubload compare`'s `Server-Timing` rows: per level both runs have and per declared stage,
//! the baseline's and the candidate's p50 and p99 and their deltas, as the terminal block,
//! `compare.csv`'s columns and `compare.html`'s table render them (ms).

use std::collections::BTreeSet;
use std::fmt::Write;

use crate::align::align;
use crate::report::document::Report;
use crate::report::html::svg::escape;
use crate::report::judge::comparison::StageRow;
use crate::report::model::server_timing::ServerTimingReport;
use crate::report::precision::ms3;

/// The rows of the levels (then TOTAL) both runs have, in the baseline's order, each level's
/// stages by name; empty when neither run's responses declared a stage.
pub fn stage_rows(baseline: &Report, candidate: &Report) -> Vec<StageRow> {
    let levels = |r: &Report| {
        r.levels
            .iter()
            .chain(r.total.as_ref())
            .map(|l| (l.label.clone(), l.derived.server_timing.clone()))
            .collect::<Vec<_>>()
    };
    let (b_rows, c_rows) = (levels(baseline), levels(candidate));
    let mut out = Vec::new();
    for (label, b) in &b_rows {
        let Some((_, c)) = c_rows.iter().find(|(l, _)| l == label) else {
            continue;
        };
        let names: BTreeSet<&String> = b.keys().chain(c.keys()).collect();
        for name in names {
            out.push(StageRow {
                label: label.clone(),
                name: name.clone(),
                baseline: b.get(name).cloned(),
                candidate: c.get(name).cloned(),
            });
        }
    }
    out
}

fn p50(s: &ServerTimingReport) -> u64 {
    s.p50_us
}

fn p99(s: &ServerTimingReport) -> u64 {
    s.p99_us
}

/// The cells of a row for people: base p50, cand p50, Δ p50, base p99, cand p99, Δ p99
/// ("-" where a run did not declare the stage).
fn cells(r: &StageRow) -> [String; 6] {
    let v = |s: &Option<ServerTimingReport>, f: fn(&ServerTimingReport) -> u64| {
        s.as_ref().map_or("-".to_string(), |s| ms3(f(s) as f64))
    };
    let d = |f: fn(&ServerTimingReport) -> u64| {
        r.delta_us(f).map_or("-".to_string(), |d| {
            let sign = if d < 0 { "-" } else { "+" };
            format!("{sign}{}", ms3(d.unsigned_abs() as f64))
        })
    };
    [
        v(&r.baseline, p50),
        v(&r.candidate, p50),
        d(p50),
        v(&r.baseline, p99),
        v(&r.candidate, p99),
        d(p99),
    ]
}

/// The terminal block, or `None` without rows.
pub fn render_server_timing(rows: &[StageRow]) -> Option<String> {
    let head = [
        "Level", "Stage", "Base p50", "Cand p50", "Δ p50", "Base p99", "Cand p99", "Δ p99",
    ];
    let mut grid: Vec<Vec<String>> = vec![head.iter().map(|h| h.to_string()).collect()];
    for r in rows {
        let mut line = vec![r.label.clone(), r.name.clone()];
        line.extend(cells(r));
        grid.push(line);
    }
    (grid.len() > 1).then(|| format!("\nServer-Timing stages (ms)\n{}", align(&grid)))
}

/// The stage names of `rows`, sorted: one group of `compare.csv` columns each.
pub fn csv_names(rows: &[StageRow]) -> Vec<String> {
    let names: BTreeSet<&String> = rows.iter().map(|r| &r.name).collect();
    names.into_iter().cloned().collect()
}

/// `compare.csv`'s columns for stage `name`: p50 and p99, each baseline, candidate, delta.
pub fn csv_header(name: &str) -> [String; 6] {
    let h = |p: &str, what: &str| format!("Server-Timing {name} {p} {what} (ms)");
    [
        h("p50", "baseline"),
        h("p50", "candidate"),
        h("p50", "delta"),
        h("p99", "baseline"),
        h("p99", "candidate"),
        h("p99", "delta"),
    ]
}

/// The cells under [`csv_header`] for level `label` (plain ms, three decimals; empty where a
/// run did not declare the stage).
pub fn csv_cells(rows: &[StageRow], label: &str, name: &str) -> [String; 6] {
    let Some(r) = rows.iter().find(|r| r.label == label && r.name == name) else {
        return Default::default();
    };
    let ms = |us: i64| format!("{:.3}", us as f64 / 1000.0);
    let v = |s: &Option<ServerTimingReport>, f: fn(&ServerTimingReport) -> u64| {
        s.as_ref().map_or(String::new(), |s| ms(f(s) as i64))
    };
    let d = |f: fn(&ServerTimingReport) -> u64| r.delta_us(f).map_or(String::new(), ms);
    [
        v(&r.baseline, p50),
        v(&r.candidate, p50),
        d(p50),
        v(&r.baseline, p99),
        v(&r.candidate, p99),
        d(p99),
    ]
}

/// `compare.html`'s section: one table, a row per level and stage; empty without rows.
pub fn render_html(rows: &[StageRow]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut b = String::from(
        "<h2 id=\"server-timing\">Server-Timing stages per level (ms)</h2>\
         <table class=\"compare\" id=\"server-timing-table\"><thead><tr><th>Level</th>\
         <th>Stage</th><th class=\"num\">baseline p50</th><th class=\"num\">candidate p50</th>\
         <th class=\"num\">Δ p50</th><th class=\"num\">baseline p99</th>\
         <th class=\"num\">candidate p99</th><th class=\"num\">Δ p99</th></tr></thead><tbody>",
    );
    for r in rows {
        let _ = write!(
            b,
            "<tr><td>{}</td><td>{}</td>",
            escape(&r.label),
            escape(&r.name)
        );
        for c in cells(r) {
            let _ = write!(b, "<td class=\"num\">{}</td>", escape(&c));
        }
        b.push_str("</tr>");
    }
    b.push_str("</tbody></table>");
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(hub_p50_us: Option<u64>) -> Report {
        let mut r = Report::new_empty(crate::kind::Model::Closed, serde_json::Value::Null, vec![]);
        let stats = crate::stats::LevelStats::default();
        let mut level =
            crate::report::model::build::level_report("8", Some(8), None, &stats, false);
        if let Some(p50_us) = hub_p50_us {
            level.derived.server_timing.insert(
                "hub".into(),
                ServerTimingReport {
                    count: 3,
                    p50_us,
                    p99_us: 2 * p50_us,
                    max_us: 2 * p50_us,
                },
            );
        }
        r.levels.push(level);
        r
    }

    fn last_line(rows: &[StageRow]) -> Vec<String> {
        let t = render_server_timing(rows).unwrap();
        let last = t.lines().last().unwrap().to_string();
        last.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn delta_per_stage_and_level() {
        assert_eq!(stage_rows(&run(None), &run(None)), vec![]);
        assert_eq!(render_server_timing(&[]), None);
        let rows = stage_rows(&run(Some(400)), &run(Some(1_500)));
        assert_eq!(
            last_line(&rows),
            ["8", "hub", "0.400", "1.50", "+1.10", "0.800", "3.00", "+2.20"]
        );
        assert_eq!(
            csv_cells(&rows, "8", "hub"),
            ["0.400", "1.500", "1.100", "0.800", "3.000", "2.200"]
        );
        let rows = stage_rows(&run(Some(1_500)), &run(Some(400)));
        assert_eq!(
            csv_cells(&rows, "8", "hub"),
            ["1.500", "0.400", "-1.100", "3.000", "0.800", "-2.200"]
        );
        // A stage only one run declared: its other side is "-" (empty in the CSV).
        let rows = stage_rows(&run(None), &run(Some(1_000)));
        assert_eq!(
            last_line(&rows),
            ["8", "hub", "-", "1.00", "-", "-", "2.00", "-"]
        );
        assert_eq!(
            csv_cells(&rows, "8", "hub"),
            ["", "1.000", "", "", "2.000", ""]
        );
        assert_eq!(csv_cells(&rows, "TOTAL", "hub"), <[String; 6]>::default());
        assert_eq!(csv_names(&rows), ["hub"]);
        assert_eq!(csv_header("hub")[2], "Server-Timing hub p50 delta (ms)");
        let html = render_html(&rows);
        assert!(html.contains("<td>8</td><td>hub</td><td class=\"num\">-</td>"));
        assert_eq!(render_html(&[]), "");
    }
}
