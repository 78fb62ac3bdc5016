//! `hubload compare`: match two runs level by level and compute the deltas people gate on.
//!
//! Levels are matched by label ("200", "500/s", "TOTAL"); latencies come from the µs summaries
//! (`latency_us`), so sub-millisecond changes are not lost to JMeter's integer ms. Deltas are
//! candidate − baseline, relative ones in % of the baseline; with `--subscribers` on both,
//! each level's delivery section is compared too. The data lives in `judge::comparison` (its
//! rules in `judge::fail_if`), number formats in `format`, renderers in [`render`] and
//! [`html_page`].

mod format;
pub mod html_page;
pub mod render;
pub mod server_series;
pub mod server_timing_deltas;
pub mod side_by_side;

use std::path::Path;

pub use crate::report::judge::comparison::{
    Comparison, DeliveryMetrics, Delta, LevelComparison, Metrics, Presence,
};
pub use crate::report::judge::fail_if::{check, FailIf, FailIfError, Violation};
pub use crate::report::judge::metric::Metric;

use crate::kind::Model;
use crate::report::document::Report;
use crate::report::model::LevelReport;

fn run_name(r: &Report) -> String {
    format!(
        "{} run of {} against {}",
        r.target.as_str(),
        r.started_at,
        r.target_url
    )
}

/// The numeric position of a level, for ordering (concurrency or rate).
fn level_key(l: &LevelReport) -> Option<f64> {
    l.concurrency.map(|c| c as f64).or(l.rate)
}

/// Compare two runs. Levels are matched by label; the order is the baseline's, with
/// candidate-only levels after, and everything sorted by concurrency (or rate) when every
/// level has one.
pub fn compare(baseline: &Report, candidate: &Report) -> Comparison {
    let mut rows: Vec<(Option<f64>, LevelComparison)> = baseline
        .levels
        .iter()
        .map(|b| {
            let c = candidate.levels.iter().find(|c| c.label == b.label);
            (
                level_key(b),
                LevelComparison {
                    label: b.label.clone(),
                    baseline: Some(Metrics::from_level(b)),
                    candidate: c.map(Metrics::from_level),
                },
            )
        })
        .collect();
    for c in &candidate.levels {
        if !baseline.levels.iter().any(|b| b.label == c.label) {
            rows.push((
                level_key(c),
                LevelComparison {
                    label: c.label.clone(),
                    baseline: None,
                    candidate: Some(Metrics::from_level(c)),
                },
            ));
        }
    }
    if rows.iter().all(|(k, _)| k.is_some()) {
        rows.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
    }
    let total = match (&baseline.total, &candidate.total) {
        (Some(b), Some(c)) => Some(LevelComparison {
            label: "TOTAL".to_string(),
            baseline: Some(Metrics::from_level(b)),
            candidate: Some(Metrics::from_level(c)),
        }),
        _ => None,
    };
    let level_title = if baseline.model == Model::Open && candidate.model == Model::Open {
        "Rate"
    } else {
        "Concurrency"
    };
    let has_delivery = |r: &Report| r.levels.iter().any(|l| l.delivery.is_some());
    Comparison {
        baseline_delivery: has_delivery(baseline),
        candidate_delivery: has_delivery(candidate),
        baseline_name: run_name(baseline),
        candidate_name: run_name(candidate),
        level_title: level_title.to_string(),
        levels: rows.into_iter().map(|(_, r)| r).collect(),
        total,
        server_timing: server_timing_deltas::stage_rows(baseline, candidate),
    }
}

/// Read a run's `summary.json`: `path` is the file itself or a report directory holding it.
pub fn load_report(path: &Path) -> anyhow::Result<Report> {
    crate::report::json::read(path)
}

#[cfg(test)]
mod delivery_tests;
#[cfg(test)]
pub(crate) mod tests;
