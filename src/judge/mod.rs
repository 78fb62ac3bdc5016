//! Judging a run: thresholds (pass/fail), the capacity finder's SLO, and the timeout what-if
//! table. Rules come parsed from `gate`; results are the plain data of `verdict`.

pub mod capacity;
#[cfg(test)]
mod testutil;
pub mod threshold;
pub mod whatif;

pub use crate::verdict::Verdict;
pub use capacity::{find_capacity, CapacityResult};
pub use threshold::{judge, Metric, Scope, Threshold};
pub use whatif::{what_if, what_if_for_rows, WhatIfRow, WhatIfTable};
