//! The terminal table (also saved as `table.txt`): one aligned row per level, then TOTAL.

use std::fmt::Write;

use super::csv::{aggregate_fields, class_columns, class_count, TRAILING_CLASSES};
use super::{Report, Reporter};

/// Renders the aligned text table.
#[derive(Debug, Default)]
pub struct TableReporter;

const HEAD: &[&str] = &[
    "Level",
    "Samples",
    "Avg",
    "Med",
    "p90",
    "p95",
    "p99",
    "Min",
    "Max",
    "Error %",
    "Req/s",
    "Recv KB/s",
    "Sent KB/s",
];

/// Render the table as text.
pub fn render_table(report: &Report) -> String {
    let classes = class_columns(report);
    let head = HEAD
        .iter()
        .copied()
        .chain(classes.iter().map(|c| c.2))
        .chain(["TO conn", "TO pool", "TO resp", "ConnErr"])
        .chain(TRAILING_CLASSES.iter().map(|c| c.2));
    let mut rows: Vec<Vec<String>> = vec![head.map(str::to_string).collect()];
    for r in report.levels.iter().chain(report.total.as_ref()) {
        let mut row = aggregate_fields(r);
        row.extend(classes.iter().map(|c| class_count(r, c).to_string()));
        row.extend([
            r.timeouts.connect.to_string(),
            r.timeouts.pool_wait.to_string(),
            r.timeouts.response.to_string(),
            r.connection_errors.to_string(),
        ]);
        row.extend(
            TRAILING_CLASSES
                .iter()
                .map(|c| class_count(r, c).to_string()),
        );
        // The table is for eyes: fewer decimals than the CSV.
        row[10] = format!("{:.1}", r.throughput);
        rows.push(row);
    }
    let mut out = align(&rows);
    if let Some(t) = &report.total {
        if t.events.retries > 0 {
            let _ = writeln!(
                out,
                "events: {} total, {} succeeded, {} failed after retries ({} retries)",
                t.events.total, t.events.succeeded, t.events.failed, t.events.retries
            );
        }
        if t.dropped > 0 {
            let _ = writeln!(out, "dropped (generator saturated): {}", t.dropped);
        }
    }
    if report.partial {
        out.push_str("PARTIAL: the run was interrupted; these are the levels measured so far.\n");
    }
    out
}

/// Align a grid of cells: the first row is the header, underlined; the first column is
/// left-aligned, the others right-aligned, two spaces apart.
pub fn align(grid: &[Vec<String>]) -> String {
    let Some(first) = grid.first() else {
        return String::new();
    };
    let widths: Vec<usize> = (0..first.len())
        .map(|i| {
            grid.iter()
                .map(|r| r.get(i).map_or(0, String::len))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (n, row) in grid.iter().enumerate() {
        for (i, cell) in row.iter().enumerate() {
            if i == 0 {
                let _ = write!(out, "{cell:<w$}", w = widths[i]);
            } else {
                let _ = write!(out, "  {cell:>w$}", w = widths[i]);
            }
        }
        out.push('\n');
        if n == 0 {
            out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1)));
            out.push('\n');
        }
    }
    out
}

impl Reporter for TableReporter {
    fn file_name(&self) -> &'static str {
        "table.txt"
    }
    fn render(&self, report: &Report) -> anyhow::Result<Vec<u8>> {
        Ok(render_table(report).into_bytes())
    }
}
