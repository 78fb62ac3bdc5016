//! Judging results as text for the terminal: the what-if table and the capacity finder's
//! result.

use std::fmt::Write;

use crate::align::align;
use crate::report::judge::verdict::{pct, timeout_label, CapacityResult, WhatIfTable};
use crate::report::model::LevelReport;

/// The table as aligned text for the terminal.
pub fn render_what_if(t: &WhatIfTable) -> String {
    let mark = |i: usize| if t.beyond_run_timeout[i] { "*" } else { "" };
    let heads: Vec<String> = t
        .timeouts_ms
        .iter()
        .enumerate()
        .map(|(i, ms)| format!(">{}{}", timeout_label(*ms), mark(i)))
        .collect();
    let mut grid: Vec<Vec<String>> = Vec::new();
    let mut head = vec!["Level".to_string(), "Attempts".to_string()];
    head.extend(heads.iter().cloned());
    if t.retries > 0 {
        head.extend(heads.iter().map(|h| format!("events {h}")));
    }
    grid.push(head);
    for r in &t.rows {
        let mut line = vec![r.level.clone(), r.attempts.to_string()];
        line.extend(r.exceed_share.iter().map(|s| pct(*s)));
        if t.retries > 0 {
            line.extend(r.failed_event_share.iter().map(|s| pct(*s)));
        }
        grid.push(line);
    }
    let mut out = format!(
        "Timeout what-if: share of attempts slower than each timeout (run timeout {})\n",
        timeout_label(t.run_timeout_ms)
    );
    out.push_str(&align(&grid));
    if t.retries > 0 {
        let _ = writeln!(
            out,
            "events: expected share of events failing with {} retries, assuming independent attempts",
            t.retries
        );
    }
    if t.beyond_run_timeout.iter().any(|b| *b) {
        out.push_str(
            "* at or above the run's own timeout: attempts were cut off there, so this only counts those that reached it\n",
        );
    }
    out
}

/// The finder's result as text for the terminal.
pub fn render_capacity(r: &CapacityResult<LevelReport>) -> String {
    let mut out = String::from("Capacity finder\n");
    let probes: Vec<String> = r
        .probes
        .iter()
        .map(|(l, ok)| format!("{l}{}", if *ok { " ok" } else { " FAIL" }))
        .collect();
    let _ = writeln!(out, "probes: {}", probes.join(", "));
    match &r.best {
        Some(b) => {
            let _ = writeln!(
                out,
                "highest level meeting the SLO: {}  ({} samples, p99 {} ms, errors {:.3}%, {:.1}/s)",
                b.label, b.derived.samples, b.derived.p99_ms, b.derived.error_pct, b.derived.throughput
            );
        }
        None => out.push_str("no level met the SLO (the first probe already broke it)\n"),
    }
    match &r.first_fail {
        Some((row, verdicts)) => {
            let _ = writeln!(out, "first level breaking the SLO: {}", row.label);
            for v in verdicts.iter().filter(|v| !v.passed) {
                let _ = writeln!(
                    out,
                    "  {}: actual {} (bound {})",
                    v.threshold, v.actual, v.bound
                );
            }
        }
        None => out.push_str("the SLO held up to the maximum searched\n"),
    }
    if let Some(why) = &r.stopped_by_generator {
        let _ = writeln!(
            out,
            "stopped: {why}; hubload, not the server, was the bottleneck there, so that level is not the knee"
        );
    }
    if r.stopped_by_budget {
        out.push_str(
            "stopped early: the time budget would have been exceeded; the answer is a lower bound\n",
        );
    }
    out
}
