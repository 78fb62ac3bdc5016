//! What a run's reports say of its tenants' design: the surge the isolation verdict names, and
//! each tenant's designed share with the levels' durations it depends on.

use crate::config::RunConfig;
use crate::engine::LevelSpec;
use crate::fairness::design::Design;
use crate::fairness::isolation::SurgeShape;
use crate::workload::{tenant_name, Surge, SurgeStart, Workload};

/// What the isolation verdict says of `surge` among `tenants` tenants, with the delivery
/// verdict's noise floor.
pub(super) fn surge_shape(
    surge: Option<&Surge>,
    tenants: u32,
    noise_floor: std::time::Duration,
) -> Option<SurgeShape> {
    surge.map(|s| SurgeShape {
        surging: s.tenants.iter().map(|t| tenant_name(*t)).collect(),
        factor: s.factor,
        // The time form's start; `@levelN`'s is each level's (`RunRecord::surge_at`).
        from_s: match s.start {
            SurgeStart::At(d) => d.as_secs(),
            SurgeStart::Level(_) => 0,
        },
        quiet_tenants: tenants.saturating_sub(s.tenants.len() as u32),
        noise_floor_us: noise_floor.as_micros() as u64,
    })
}

/// With `@levelN`, each level's surge start (s into its measured time; `None`: no surge in
/// it); `None` without a surge or with the time form, whose start is every level's.
pub(super) fn surge_starts(
    surge: Option<&Surge>,
    levels: &[LevelSpec],
) -> Option<Vec<Option<u64>>> {
    let s = surge.filter(|s| matches!(s.start, SurgeStart::Level(_)))?;
    let from = levels.iter().enumerate();
    Some(
        from.map(|(i, l)| s.from_in(i, l.stop.duration).map(|d| d.as_secs()))
            .collect(),
    )
}

/// The tenants' designed shares for `cfg` (the surge's start is each level's, from
/// [`surge_starts`]), and each level's duration (s).
pub(super) fn design_of(cfg: &RunConfig, workload: &Workload) -> (Design, Vec<Option<f64>>) {
    let design = Design {
        base: (0..cfg.workload.tenants)
            .map(|t| workload.designed_share(t))
            .collect(),
        surge: cfg.surge.as_ref().map(|s| (s.tenants.clone(), s.factor, 0)),
    };
    let secs = cfg
        .levels
        .iter()
        .map(|l| l.stop.duration.map(|d| d.as_secs_f64()))
        .collect();
    (design, secs)
}
