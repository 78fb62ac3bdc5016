//! Judging a run: thresholds (pass/fail), the capacity finder's SLO, and the timeout what-if table.

pub mod capacity;
#[cfg(test)]
mod testutil;
pub mod threshold;
pub mod whatif;

pub use capacity::{find_capacity, render_capacity, CapacityResult};
pub use threshold::{judge, Metric, Scope, Threshold, Verdict};
pub use whatif::{render_what_if, what_if, what_if_for_rows, WhatIfRow, WhatIfTable};
