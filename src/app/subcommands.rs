//! The subcommands besides a load run: `report` and `compare` (`merge` is [`super::merge`]),
//! and the text printed after a run. Each returns the exit code, or an error the caller prints as one line.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::compare::{self, FailIf};
use crate::report::document::Report;
use crate::report::judge::text::{render_capacity, render_what_if};
use crate::report::table::render_table;
use crate::report::topics_csv::APPENDED;
use crate::report::writer::{write_atomic, ReportWriter};

use super::exit::EXIT_THRESHOLDS;

/// What a finished run prints: the table (and its delivery block), the what-if table, the
/// capacity result, verdicts.
pub fn summary_text(r: &Report) -> String {
    let mut out = render_table(r);
    // With subscribers (a run's, or a merged sharded run's), the second block.
    if let Some(d) = crate::report::table::delivery::render_delivery_table(r) {
        out.push_str(&d);
    }
    if let Some(w) = &r.what_if {
        if !w.rows.is_empty() && r.levels.iter().any(|l| l.derived.samples > 0) {
            out.push('\n');
            out.push_str(&render_what_if(w));
        }
    }
    if let Some(c) = &r.capacity {
        out.push('\n');
        out.push_str(&render_capacity(c));
    }
    if !r.verdicts.is_empty() {
        out.push('\n');
        for v in &r.verdicts {
            // A verdict on a level where hubload was the bottleneck judges hubload too.
            let bound = r
                .levels
                .iter()
                .any(|l| l.label == v.level && l.generator_bound == Some(true));
            let _ = writeln!(
                out,
                "{} {:<20} level {:<8} actual {:>12}  bound {}{}",
                if v.passed { "PASS" } else { "FAIL" },
                v.threshold,
                v.level,
                v.actual,
                v.bound,
                if bound {
                    "  (generator-bound level)"
                } else {
                    ""
                }
            );
        }
    }
    out
}

/// `hubload report SUMMARY`: write the reports again from a summary.json (and the rows of
/// the files it names beside it).
pub fn report(summary: &Path, out: Option<&Path>) -> anyhow::Result<u8> {
    // Every level's topic rows would not fit in bounded memory at 100,000 topics: topics.csv
    // and tenants.csv are written from topics.jsonl a level at a time, then the rest.
    let mut r = crate::report::json::read(summary)?;
    crate::report::topic_names::attach(&mut r, summary)?;
    crate::report::fairness_file::attach(&mut r, summary)?;
    crate::report::subscribers_file::attach(&mut r, summary)?;
    let dir = match out {
        Some(d) => d.to_path_buf(),
        None if summary.is_dir() => summary.to_path_buf(),
        None => summary
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
    };
    // Everything the reports show is in summary.json and the files it names; the histograms of latency.hlog only in
    // summaries written since they were added (an older one leaves an existing .hlog alone).
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create report directory {}", dir.display()))?;
    let streamed = crate::report::topics_file::write_appended(&mut r, summary, &dir)?;
    let appended = |name: &str| streamed && APPENDED.contains(&name);
    let formats = crate::report::formats::all()
        .into_iter()
        .filter(|rep| rep.file_name() != "summary.json" && rep.file_name() != "whatif.csv")
        .filter(|rep| !appended(rep.file_name()))
        .filter(|rep| rep.file_name() != "latency.hlog" || crate::report::hlog::has_histograms(&r))
        .collect();
    ReportWriter::new(&dir, formats)?.write_all(&r)?;
    eprintln!("hubload: report.html written to {}", dir.display());
    Ok(0)
}

/// `hubload compare BASELINE CANDIDATE`: per-level deltas; exit 1 when a `--fail-if` trips.
pub fn compare(
    baseline: &Path,
    candidate: &Path,
    fail_if: &[String],
    out: Option<&Path>,
) -> anyhow::Result<u8> {
    let rules = fail_if
        .iter()
        .map(|s| {
            s.parse::<FailIf>()
                .map_err(|e| anyhow::anyhow!("invalid {e}"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let (b, c) = (
        compare::load_report(baseline)?,
        compare::load_report(candidate)?,
    );
    let mut cmp = compare::compare(&b, &c);
    cmp.baseline_name = baseline.display().to_string();
    cmp.candidate_name = candidate.display().to_string();
    // A delivery rule on a run without deliveries: one line naming the rule and the run.
    let violations = compare::check(&cmp, &rules).map_err(|e| anyhow::anyhow!("{e}"))?;
    print!(
        "{}",
        compare::render::render_text(&cmp, &rules, &violations)
    );
    print!("{}", compare::server_series::render_server(&b, &c));
    // The stages both servers declared (Server-Timing), when either did.
    if let Some(st) = compare::server_timing_deltas::render_server_timing(&cmp.server_timing) {
        print!("{st}");
    }
    let dir = out.map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    write_atomic(
        &dir.join("compare.csv"),
        &compare::render::render_csv(&cmp)?,
    )?;
    write_atomic(
        &dir.join("compare.html"),
        compare::html_page::render_html(&cmp, &rules, &violations).as_bytes(),
    )?;
    eprintln!(
        "hubload: compare.csv and compare.html written to {}",
        dir.display()
    );
    Ok(if violations.is_empty() {
        0
    } else {
        EXIT_THRESHOLDS
    })
}
