//! The open model's default in-flight bound sized from the descriptors the process may open,
//! so a fast rate makes the generator drop (and count) sends rather than fail them for want
//! of a descriptor. An explicit `--max-inflight` is taken as given.

use serde::Serialize;

use super::parse::opt;
use super::target::TargetConfig;
use crate::cli::RunArgs;
use crate::engine::{LevelSpec, Load};
use crate::kind::TargetKind;

/// Descriptors kept for everything but the load's connections: report files, the JTL, the
/// runtime, listeners.
const RESERVE: u64 = 64;

/// The most connections the default ever asks for.
pub const MAX_DEFAULT_INFLIGHT: u32 = 20_000;

/// The descriptor budget a run sized its default in-flight bound from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DescriptorBudget {
    /// The soft open-files limit (`ulimit -n`).
    pub open_files: u64,
    /// Descriptors per connection: 1, or 3 with the embedded hub in the same process (its
    /// accepted socket and the duplicate it keeps to reset connections).
    pub per_connection: u64,
    /// The in-flight bound that fits: `(open_files − 64) / per_connection`, at least 1.
    pub max_inflight: u32,
    /// True when a level's default bound was lowered to it.
    pub lowered: bool,
}

impl DescriptorBudget {
    /// The budget for `open_files` descriptors and `per_connection` each.
    pub fn new(open_files: u64, per_connection: u64) -> Self {
        let fit = open_files.saturating_sub(RESERVE) / per_connection.max(1);
        DescriptorBudget {
            open_files,
            per_connection,
            max_inflight: fit.clamp(1, u64::from(MAX_DEFAULT_INFLIGHT)) as u32,
            lowered: false,
        }
    }

    /// `wanted` (a default in-flight bound), lowered to what fits.
    pub fn cap(&self, wanted: u32) -> u32 {
        wanted.min(self.max_inflight)
    }
}

/// The soft open-files limit of this process (`None`: unlimited or unknown).
fn open_files_limit() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::Nofile).current
}

/// Lower the default `--max-inflight` of every open-model level to what the descriptors allow
/// (not when `--max-inflight` is given); returns the budget (`None`: no limit known), which
/// the run keeps in `RunConfig::descriptors`.
pub fn apply(
    levels: &mut [LevelSpec],
    target: &TargetConfig,
    a: &RunArgs,
) -> Option<DescriptorBudget> {
    let open_files = open_files_limit()?;
    let embedded_hub = target.hub_url.is_none() && target.kinds.contains(&TargetKind::Websub);
    let per_connection = if embedded_hub { 3 } else { 1 };
    let mut budget = DescriptorBudget::new(open_files, per_connection);
    if opt(&a.max_inflight).is_none() {
        for level in levels.iter_mut() {
            if let Load::Open { max_inflight, .. } = &mut level.load {
                let capped = budget.cap(*max_inflight);
                budget.lowered |= capped < *max_inflight;
                *max_inflight = capped;
            }
        }
    }
    Some(budget)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_leaves_a_reserve_and_divides_by_the_descriptors_per_connection() {
        let b = DescriptorBudget::new(20_000, 3);
        assert_eq!(b.max_inflight, (20_000 - 64) / 3);
        assert_eq!(b.cap(20_000), 6_645);
        assert_eq!(b.cap(64), 64);
        assert_eq!(DescriptorBudget::new(64, 1).max_inflight, 1);
        assert_eq!(
            DescriptorBudget::new(1 << 40, 1).max_inflight,
            MAX_DEFAULT_INFLIGHT
        );
        assert_eq!(DescriptorBudget::new(1064, 1).max_inflight, 1000);
    }
}
