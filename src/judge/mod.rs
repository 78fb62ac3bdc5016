//! Judging, in one place: the rule language of `--threshold`, `--slo` and `--fail-if`
//! (`rules`), thresholds (pass/fail), the capacity finder's SLO, the timeout what-if table,
//! `--fail-if` applied to a comparison (`fail_if`), their results as plain data (`verdict`:
//! what `run_report::Report` stores) and as terminal text (`text`). The flags are converted in
//! `config/judging.rs`, like every flag.

pub mod capacity;
pub mod fail_if;
pub mod rules;
#[cfg(test)]
mod testutil;
pub mod text;
pub mod threshold;
pub mod verdict;
pub mod whatif;

pub use capacity::{find_capacity, CapacityResult};
pub use threshold::{judge, Metric, Scope, Threshold};
pub use verdict::Verdict;
pub use whatif::{what_if, WhatIfRow, WhatIfTable};
