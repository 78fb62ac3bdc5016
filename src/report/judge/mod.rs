//! Judging, in one place: the one gate language of `--threshold`, `--slo` and `--fail-if`
//! (`metric`, what a rule measures; `rules`, the parser), thresholds (pass/fail), the capacity
//! finder's SLO, the timeout what-if table, two runs compared (`comparison`) and `--fail-if`
//! judged on it (`fail_if`), the results as plain data (`verdict`: what `document::Report`
//! stores) and as terminal text (`text`). The flags are converted in `config/judging.rs`.

pub mod capacity;
pub mod comparison;
pub mod fail_if;
#[cfg(test)]
mod known_latencies;
pub mod metric;
pub mod rules;
pub mod text;
pub mod threshold;
pub mod verdict;
pub mod whatif;

pub use capacity::{find_capacity, CapacityResult};
pub use threshold::{judge, Metric, Scope, Threshold};
pub use verdict::Verdict;
pub use whatif::{what_if, WhatIfRow, WhatIfTable};
