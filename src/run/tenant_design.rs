//! What a run's reports say of its tenants' design: the surge the isolation verdict names, and
//! each tenant's designed share with the levels' durations it depends on.

use crate::config::RunConfig;
use crate::fairness::design::Design;
use crate::fairness::isolation::SurgeShape;
use crate::workload::{tenant_name, Surge, Workload};

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
        from_s: s.from.as_secs(),
        quiet_tenants: tenants.saturating_sub(s.tenants.len() as u32),
        noise_floor_us: noise_floor.as_micros() as u64,
    })
}

/// The tenants' designed shares for `cfg`, and each level's duration (s).
pub(super) fn design_of(cfg: &RunConfig, workload: &Workload) -> (Design, Vec<Option<f64>>) {
    let design = Design {
        base: (0..cfg.workload.tenants)
            .map(|t| workload.designed_share(t))
            .collect(),
        surge: cfg
            .surge
            .as_ref()
            .map(|s| (s.tenants.clone(), s.factor, s.from.as_secs())),
    };
    let secs = cfg
        .levels
        .iter()
        .map(|l| l.stop.duration.map(|d| d.as_secs_f64()))
        .collect();
    (design, secs)
}
