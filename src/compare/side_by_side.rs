//! The side-by-side report of a two-path run: per level, the hub path and the broker path next
//! to each other and the hub's overhead (hub − broker), as `side-by-side.csv` and `.txt`.
//!
//! Levels are matched by label with [`compare`] (broker as the baseline, hub as the
//! candidate), so the overhead is exactly `compare`'s delta: latencies from the µs summaries
//! in ms, error rates in percentage points.

use std::fmt::Write;

use super::{compare, Comparison, LevelComparison, Metric, Metrics};
use crate::kind::TargetKind;
use crate::report::document::Report;
use crate::report::precision;

/// Two paths of one run, level by level.
#[derive(Debug, Clone, PartialEq)]
pub struct SideBySide {
    /// Baseline = the broker path, candidate = the hub path.
    pub cmp: Comparison,
    /// The hub path's target (WebSub).
    pub hub_target: TargetKind,
    /// The broker path's target (Service Bus).
    pub broker_target: TargetKind,
}

/// The overhead metrics, in column order.
const OVERHEAD: [Metric; 5] = [
    Metric::Avg,
    Metric::P(50),
    Metric::P(95),
    Metric::P(99),
    Metric::Errors,
];

/// Match `hub`'s levels with `broker`'s.
pub fn side_by_side(hub: &Report, broker: &Report) -> SideBySide {
    SideBySide {
        cmp: compare(broker, hub),
        hub_target: hub.target,
        broker_target: broker.target,
    }
}

impl SideBySide {
    /// The levels, then TOTAL.
    pub fn rows(&self) -> impl Iterator<Item = &LevelComparison> {
        self.cmp.rows()
    }
}

/// The hub's overhead on one metric of a row (hub − broker), when both paths ran it.
pub fn overhead(row: &LevelComparison, m: Metric) -> Option<f64> {
    row.delta(m).map(|d| d.abs)
}

/// `v` rounded to `decimals` places, with an explicit sign when `signed`; never "-0.0".
fn num(v: f64, decimals: usize, signed: bool) -> String {
    let scale = 10f64.powi(decimals as i32);
    // Adding +0.0 turns a rounded -0.0 into +0.0.
    let r = (v * scale).round() / scale + 0.0;
    if signed {
        format!("{r:+.decimals$}")
    } else {
        format!("{r:.decimals$}")
    }
}

/// `v` milliseconds with three significant digits, as the terminal table prints latencies
/// ([`precision::ms3`]), with an explicit sign when `signed`. One decimal place hid every
/// sub-millisecond latency and overhead (`0.0`, `0.1`).
fn ms3(v: f64, signed: bool) -> String {
    let digits = precision::ms3(v.abs() * 1000.0);
    // A value that rounds to zero reads as zero, never "-0.000".
    let negative = v < 0.0 && digits.bytes().any(|b| matches!(b, b'1'..=b'9'));
    match (negative, signed) {
        (true, _) => format!("-{digits}"),
        (false, true) => format!("+{digits}"),
        (false, false) => digits,
    }
}

/// One path's cells: samples, avg, median, p95, p99 (ms), error %, throughput (/s).
fn path_cells(m: Option<&Metrics>, csv: bool) -> Vec<String> {
    let Some(m) = m else {
        let blank = if csv { "" } else { "-" };
        return vec![blank.to_string(); 7];
    };
    vec![
        m.samples.to_string(),
        ms3(m.average_ms, false),
        ms3(m.median_ms, false),
        ms3(m.p95_ms, false),
        ms3(m.p99_ms, false),
        format!("{}%", num(m.error_pct, 3, false)),
        num(m.throughput, 1, false),
    ]
}

/// The overhead cells: Δ avg, median, p95, p99 (ms, three significant digits), Δ error (pp,
/// 3 places).
fn overhead_cells(row: &LevelComparison, csv: bool) -> Vec<String> {
    OVERHEAD
        .iter()
        .map(|&m| {
            overhead(row, m).map_or_else(
                || if csv { String::new() } else { "-".into() },
                |d| match m {
                    Metric::Errors => num(d, 3, true),
                    _ => ms3(d, true),
                },
            )
        })
        .collect()
}

fn row_cells(row: &LevelComparison, csv: bool) -> Vec<String> {
    let mut cells = vec![row.label.clone()];
    cells.extend(path_cells(row.candidate.as_ref(), csv));
    cells.extend(path_cells(row.baseline.as_ref(), csv));
    cells.extend(overhead_cells(row, csv));
    cells
}

const PATH_COLUMNS: [&str; 7] = [
    "# Samples",
    "Average (ms)",
    "Median (ms)",
    "95% Line (ms)",
    "99% Line (ms)",
    "Error %",
    "Throughput (/s)",
];
const OVERHEAD_COLUMNS: [&str; 5] = [
    "Average (ms)",
    "Median (ms)",
    "95% Line (ms)",
    "99% Line (ms)",
    "Error (pp)",
];

/// The CSV header: the level, the hub path's 7 columns, the broker's 7, the overhead's 5.
pub fn csv_header(s: &SideBySide) -> Vec<String> {
    let mut h = vec![s.cmp.level_title.clone()];
    h.extend(PATH_COLUMNS.iter().map(|c| format!("Hub {c}")));
    h.extend(PATH_COLUMNS.iter().map(|c| format!("Broker {c}")));
    h.extend(OVERHEAD_COLUMNS.iter().map(|c| format!("Overhead {c}")));
    h
}

/// `side-by-side.csv`: one row per level, then TOTAL; a missing side's cells are empty.
pub fn render_csv(s: &SideBySide) -> anyhow::Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(csv_header(s))?;
    for row in s.rows() {
        w.write_record(row_cells(row, true))?;
    }
    Ok(w.into_inner()?)
}

/// `side-by-side.txt`: the same rows aligned under a group header, for the terminal.
pub fn render_text(s: &SideBySide) -> String {
    const SHORT: [&str; 7] = ["Samples", "Avg", "Med", "p95", "p99", "Error %", "Req/s"];
    let mut head = vec![s.cmp.level_title.clone()];
    head.extend(SHORT.iter().chain(&SHORT).map(|c| c.to_string()));
    head.extend(["Avg", "Med", "p95", "p99", "Error pp"].map(String::from));
    let mut rows = vec![head];
    rows.extend(s.rows().map(|r| row_cells(r, false)));
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    // Column groups: level | hub (7) | broker (7) | overhead (5).
    let groups = [(0, 1), (1, 8), (8, 15), (15, 20)];
    let group_width = |(a, b): (usize, usize)| widths[a..b].iter().sum::<usize>() + 2 * (b - a - 1);
    let titles = [
        String::new(),
        format!("hub path ({})", s.hub_target.as_str()),
        format!("broker path ({})", s.broker_target.as_str()),
        "hub overhead (hub - broker)".to_string(),
    ];
    let line = |cells: Vec<String>| -> String {
        let parts: Vec<String> = groups
            .iter()
            .zip(cells)
            .map(|(&g, c)| format!("{c:<w$}", w = group_width(g)))
            .collect();
        parts.join(" | ").trim_end().to_string()
    };
    let mut out = String::new();
    let _ = writeln!(out, "{}", line(titles.to_vec()));
    for (n, row) in rows.iter().enumerate() {
        let cells = groups
            .iter()
            .map(|&(a, b)| {
                (a..b)
                    .map(|i| {
                        if i == 0 {
                            format!("{:<w$}", row[i], w = widths[i])
                        } else {
                            format!("{:>w$}", row[i], w = widths[i])
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("  ")
            })
            .collect();
        let _ = writeln!(out, "{}", line(cells));
        if n == 0 {
            let total: usize = groups.iter().map(|&g| group_width(g)).sum::<usize>() + 3 * 3;
            let _ = writeln!(out, "{}", "-".repeat(total));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::compare::load_report;

    fn fixture(name: &str) -> Report {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join(format!("tests/fixtures/reports/{name}"));
        load_report(&path).unwrap()
    }

    /// Hub = compare-baseline (levels 1, 20, 50), broker = compare-candidate (20, 50, 100).
    fn pair() -> SideBySide {
        let hub = fixture("compare-baseline.json");
        let mut broker = fixture("compare-candidate.json");
        broker.target = crate::kind::TargetKind::Servicebus;
        side_by_side(&hub, &broker)
    }

    #[test]
    fn overhead_is_hub_minus_broker_per_level() {
        let s = pair();
        let labels: Vec<&str> = s.rows().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["1", "20", "50", "100", "TOTAL"]);
        let get = |label: &str| -> Vec<Option<f64>> {
            let row = s.rows().find(|r| r.label == label).unwrap();
            OVERHEAD.iter().map(|&m| overhead(row, m)).collect()
        };
        // Level 20: hub 10/8/20/40 ms, 0.5 %; broker 11/8/25/38 ms, 1.5 %.
        assert_eq!(
            get("20"),
            [Some(-1.0), Some(0.0), Some(-5.0), Some(2.0), Some(-1.0)]
        );
        // Level 50: hub 20/16/50/100 ms, 2 %; broker 19/16/45/130 ms, 2 %.
        assert_eq!(
            get("50"),
            [Some(1.0), Some(0.0), Some(5.0), Some(-30.0), Some(0.0)]
        );
        // TOTAL: hub 15/10/40/80 ms, 1.25 %; broker 16/12/44/120 ms, 1.75 %.
        assert_eq!(
            get("TOTAL"),
            [Some(-1.0), Some(-2.0), Some(-4.0), Some(-40.0), Some(-0.5)]
        );
        assert_eq!(get("1"), [None; 5]);
        assert_eq!(get("100"), [None; 5]);
    }

    #[test]
    fn csv_has_one_row_per_level_with_both_paths() {
        let text = String::from_utf8(render_csv(&pair()).unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 6);
        assert_eq!(
            lines[0],
            "Concurrency,Hub # Samples,Hub Average (ms),Hub Median (ms),Hub 95% Line (ms),\
             Hub 99% Line (ms),Hub Error %,Hub Throughput (/s),Broker # Samples,\
             Broker Average (ms),Broker Median (ms),Broker 95% Line (ms),Broker 99% Line (ms),\
             Broker Error %,Broker Throughput (/s),Overhead Average (ms),Overhead Median (ms),\
             Overhead 95% Line (ms),Overhead 99% Line (ms),Overhead Error (pp)"
        );
        assert_eq!(
            lines[1],
            "1,4000,2.00,2.00,3.00,4.00,0.000%,400.0,,,,,,,,,,,,"
        );
        assert_eq!(
            lines[2],
            "20,20000,10.0,8.00,20.0,40.0,0.500%,2000.0,18000,11.0,8.00,25.0,38.0,1.500%,1800.0,\
             -1.00,+0.000,-5.00,+2.00,-1.000"
        );
        assert_eq!(
            lines[4],
            "100,,,,,,,,30000,40.0,30.0,90.0,200,4.000%,3000.0,,,,,"
        );
        assert_eq!(
            lines[5],
            "TOTAL,49000,15.0,10.0,40.0,80.0,1.250%,2250.0,75500,16.0,12.0,44.0,120,1.750%,\
             2000.0,-1.00,-2.00,-4.00,-40.0,-0.500"
        );
    }

    #[test]
    fn milliseconds_to_three_significant_digits() {
        let cases = [
            (0.0123, "0.012"),
            (0.25, "0.250"),
            (1.234, "1.23"),
            (12.34, "12.3"),
            (123.4, "123"),
            (1234.4, "1234"),
            (0.0, "0.000"),
        ];
        for (v, want) in cases {
            assert_eq!(ms3(v, false), want, "{v}");
        }
        assert_eq!(ms3(-0.0456, true), "-0.046");
        assert_eq!(ms3(-0.0001, true), "+0.000");
        assert_eq!(ms3(0.0, true), "+0.000");
    }

    #[test]
    fn sub_millisecond_overhead_is_kept() {
        let mut hub = fixture("compare-baseline.json");
        let broker = fixture("compare-baseline.json");
        hub.levels[1].derived.latency_us.mean += 250.0;
        hub.levels[1].derived.latency_us.p99 += 1_440;
        let s = side_by_side(&hub, &broker);
        let row = s.rows().find(|r| r.label == "20").unwrap();
        assert_eq!(overhead(row, Metric::Avg), Some(0.25));
        assert_eq!(
            overhead_cells(row, true),
            ["+0.250", "+0.000", "+0.000", "+1.44", "+0.000"]
        );
    }

    #[test]
    fn text_aligns_groups_and_marks_missing_sides() {
        let text = render_text(&pair());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 8, "{text}");
        assert!(lines[0].contains("hub path (websub)"), "{text}");
        assert!(lines[0].contains("broker path (servicebus)"), "{text}");
        assert!(lines[0].contains("hub overhead (hub - broker)"), "{text}");
        // Every body line has the same three group separators at the same places.
        let bars = |l: &str| -> Vec<usize> { l.match_indices(" | ").map(|(i, _)| i).collect() };
        for l in &lines[3..] {
            assert_eq!(bars(l), bars(lines[1]), "{text}");
        }
        let row1: Vec<&str> = lines[3].split_whitespace().collect();
        assert_eq!(row1[0], "1");
        assert_eq!(row1.iter().filter(|c| **c == "-").count(), 12, "{text}");
        assert_eq!(
            lines[4],
            "20          |   20000  10.0  8.00  20.0  40.0   0.500%  2000.0 \
             |   18000  11.0  8.00  25.0  38.0   1.500%  1800.0 \
             | -1.00  +0.000  -5.00  +2.00    -1.000"
        );
    }
}
