//! What judging a run produces, as plain data: threshold verdicts, the timeout what-if table
//! and the capacity finder's result. `judge` computes them, the run's document
//! (`document::Report`) stores them, the formats render them; this module imports none of them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One threshold judged on one row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Verdict {
    /// The rule as given, e.g. `p99<300ms`.
    pub threshold: String,
    /// The row's label ("200", "500/s", "TOTAL").
    pub level: String,
    /// The measured value with its unit, e.g. `12.500ms`.
    pub actual: String,
    /// The operator and bound with its unit, e.g. `< 300ms`.
    pub bound: String,
    pub passed: bool,
}

/// The what-if table of a run: one row per level (and TOTAL when the caller includes it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WhatIfTable {
    /// The candidate timeouts, ms (the columns, in the order given).
    pub timeouts_ms: Vec<u64>,
    /// Immediate retries per event the failed-event share assumes (the run's `--retries`).
    pub retries: u32,
    /// The run's own client timeout, ms.
    #[serde(default)]
    pub run_timeout_ms: u64,
    /// Per column: true when that timeout is at or above the run's own timeout, so its
    /// shares only say how many attempts reached the run's timeout (not meaningful as a what-if).
    #[serde(default)]
    pub beyond_run_timeout: Vec<bool>,
    /// One row per level.
    pub rows: Vec<WhatIfRow>,
}

/// One level of the what-if table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WhatIfRow {
    /// Level label ("200", "500/s", "TOTAL").
    pub level: String,
    /// Attempts measured in the level.
    pub attempts: u64,
    /// Per timeout: share (0..=1) of attempts slower than it.
    pub exceed_share: Vec<f64>,
    /// Per timeout: expected share (0..=1) of events that fail with that timeout and the
    /// table's retries (independent attempts; see `judge::whatif::event_failure`).
    pub failed_event_share: Vec<f64>,
}

/// A share (0..=1) as a percentage with three decimals, like the aggregate CSV's `Error %`.
pub fn pct(share: f64) -> String {
    format!("{:.3}%", share * 100.0)
}

/// A column heading for timeout `ms`: "100ms", "1s", "1.5s".
pub fn timeout_label(ms: u64) -> String {
    if ms >= 1000 && ms % 100 == 0 {
        let s = ms as f64 / 1000.0;
        format!("{s}s")
    } else {
        format!("{ms}ms")
    }
}

/// What the capacity finder found.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CapacityResult")]
pub struct CapacityResult<R> {
    /// The highest level that met the SLO, with its full row (`None` when even the first failed).
    pub best: Option<R>,
    /// The lowest level that broke the SLO, with every bound judged on it (`None` when the
    /// SLO held all the way to the maximum).
    pub first_fail: Option<(R, Vec<Verdict>)>,
    /// Every probe in order: (load, passed).
    pub probes: Vec<(f64, bool)>,
    /// The search stopped before converging because the time budget would have been exceeded.
    pub stopped_by_budget: bool,
    /// The search stopped at a level where hubload itself was the bottleneck (its label and
    /// why): that level is neither the best nor the knee, and higher loads would measure
    /// hubload, not the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by_generator: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(pct(0.012345), "1.234%");
        for (ms, want) in [
            (100, "100ms"),
            (1000, "1s"),
            (1500, "1.5s"),
            (1234, "1234ms"),
        ] {
            assert_eq!(timeout_label(ms), want);
        }
    }
}
