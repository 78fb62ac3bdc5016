//! Judging, in one place: the rule language of `--threshold`, `--slo` and `--fail-if`
//! (`rules`), thresholds (pass/fail), the capacity finder's SLO, the timeout what-if table, and
//! their results as terminal text (`text`). Results are the plain data of `summary::verdict`.

pub mod capacity;
pub mod rules;
#[cfg(test)]
mod testutil;
pub mod text;
pub mod threshold;
pub mod whatif;

pub use crate::summary::verdict::Verdict;
pub use capacity::{find_capacity, CapacityResult};
pub use threshold::{judge, Metric, Scope, Threshold};
pub use whatif::{what_if, what_if_for_rows, WhatIfRow, WhatIfTable};
