//! Fairness figures of one level, computed from its per-tenant statistics: each tenant's
//! offered and achieved share, Jain's index, the p99 and error spreads, the worst tenants.
//!
//! Pure and exact: the input is the per-topic statistics rolled up per tenant, which merge with
//! `+=`, and shards own whole tenants, so a merged run's figures equal one process's.
//! docs/fairness.md defines each figure.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::result::Class;
use crate::stats::TopicStats;

pub mod delivery;
pub mod design;
pub mod isolation;
mod spread;
#[cfg(test)]
mod tests;

pub use spread::WORST;
use spread::{worst, Spread};

/// One tenant in one level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TenantShare {
    /// The tenant's name (`tenant0007`).
    pub tenant: String,
    /// Attempts.
    pub attempts: u64,
    /// Attempts of no error class (accepted, or a refusal topic churn expected).
    pub good: u64,
    /// Attempts ÷ all tenants' attempts (0..=1).
    pub offered_share: f64,
    /// The share the workload's design gives the tenant (uniform, Zipf, a surge on top;
    /// docs/fairness.md), to read the offered share against; absent when unknown (a merged
    /// run, TOTAL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub designed_share: Option<f64>,
    /// Good attempts ÷ all tenants' good attempts (0..=1; 0 when none was good).
    pub achieved_share: f64,
    /// Attempts of an error class, % of the tenant's attempts.
    pub error_pct: f64,
    /// Latency percentiles of the tenant's attempts, µs (the per-topic histogram's bucket
    /// bound: at most 12.5 % above the true value).
    pub p50_us: u64,
    pub p99_us: u64,
    /// Exact largest latency, µs.
    pub max_us: u64,
}

/// The fairness figures of one level (`summary.json` `levels[].fairness`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Fairness {
    /// Tenants with at least one attempt in the level.
    pub tenants: usize,
    /// Jain's fairness index on goodput normalised by offered share (1/n..=1; absent when no
    /// attempt of any tenant was good).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jain_index: Option<f64>,
    /// Largest tenant p99 ÷ median tenant p99 (absent when the median is 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_spread: Option<f64>,
    /// The median tenant p99, µs (with an even count, the two middle ones' mean, truncated).
    pub median_p99_us: u64,
    /// Largest tenant error % minus the median tenant error %, percentage points.
    pub error_spread_pp: f64,
    /// The median tenant error %.
    pub median_error_pct: f64,
    /// Up to three tenants by p99, highest first (ties by name).
    pub worst_p99: Vec<TenantShare>,
    /// Up to three tenants with errors by error %, highest first (ties by name); empty when no
    /// tenant had an error.
    pub worst_errors: Vec<TenantShare>,
    /// Every tenant with an attempt, by name: in memory, and in `Report::fairness_file`, never
    /// in summary.json (it grows with the tenants); read from summaries written before that
    /// file (`schema_version` 1 and 2).
    #[serde(default, skip_serializing)]
    #[schemars(with = "Option<Vec<TenantShare>>")]
    pub by_tenant: Vec<TenantShare>,
    /// With subscribers: each tenant's delivery latency and loss, their spreads and the worst
    /// tenants (absent without subscribers, or with fewer than two tenants owed a delivery).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<delivery::DeliveryFairness>,
}

/// A level's per-topic statistics, as (topic number, statistics), rolled up per tenant:
/// `topic_tenants[i]` is topic `i`'s tenant (`None` for a topic several tenants share, left
/// out: it is no tenant's). Named by `name`, sorted by tenant number. Dense statistics give
/// `iter().enumerate()`; sparse rows give only the topics they hold.
pub fn per_tenant<S: std::borrow::Borrow<TopicStats>>(
    topics: impl IntoIterator<Item = (usize, S)>,
    topic_tenants: &[Option<u32>],
    name: impl Fn(u32) -> String,
) -> Vec<(String, TopicStats)> {
    named(tenant_sums(topics, topic_tenants), name)
}

/// [`per_tenant`] by tenant number, unnamed: sums that add up over levels (TOTAL's).
pub fn tenant_sums<S: std::borrow::Borrow<TopicStats>>(
    topics: impl IntoIterator<Item = (usize, S)>,
    topic_tenants: &[Option<u32>],
) -> BTreeMap<u32, TopicStats> {
    let mut by = BTreeMap::<u32, TopicStats>::new();
    for (t, s) in topics {
        if let Some(Some(tenant)) = topic_tenants.get(t) {
            *by.entry(*tenant).or_default() += s.borrow();
        }
    }
    by
}

/// Tenant sums named by `name`, in tenant order.
pub fn named(
    sums: impl IntoIterator<Item = (u32, TopicStats)>,
    name: impl Fn(u32) -> String,
) -> Vec<(String, TopicStats)> {
    sums.into_iter().map(|(t, s)| (name(t), s)).collect()
}

/// Jain's index (Σx)² ÷ (n·Σx²); `None` for no values or all zero.
pub fn jain(x: &[f64]) -> Option<f64> {
    let sum: f64 = x.iter().sum();
    let sq: f64 = x.iter().map(|v| v * v).sum();
    (sq > 0.0).then(|| sum * sum / (x.len() as f64 * sq))
}

/// The figures of one level from its tenants' statistics; `None` with fewer than two tenants
/// that made an attempt (fairness between one tenant and nobody says nothing).
pub fn figures(tenants: &[(String, TopicStats)]) -> Option<Fairness> {
    let active: Vec<&(String, TopicStats)> = tenants
        .iter()
        .filter(|(_, s)| s.counts.total() > 0)
        .collect();
    if active.len() < 2 {
        return None;
    }
    let good = |s: &TopicStats| s.counts.total() - s.counts.sum_where(Class::is_error);
    let all: u64 = active.iter().map(|(_, s)| s.counts.total()).sum();
    let all_good: u64 = active.iter().map(|(_, s)| good(s)).sum();
    let by_tenant: Vec<TenantShare> = active
        .iter()
        .map(|(name, s)| {
            let n = s.counts.total();
            let g = good(s);
            TenantShare {
                tenant: name.clone(),
                attempts: n,
                good: g,
                offered_share: n as f64 / all as f64,
                designed_share: None,
                achieved_share: if all_good == 0 {
                    0.0
                } else {
                    g as f64 / all_good as f64
                },
                error_pct: (n - g) as f64 * 100.0 / n as f64,
                p50_us: s.quantile(0.50),
                p99_us: s.quantile(0.99),
                max_us: s.max_us,
            }
        })
        .collect();
    let x: Vec<f64> = by_tenant
        .iter()
        .map(|t| t.achieved_share / t.offered_share)
        .collect();
    let p99 = Spread::of(by_tenant.iter().map(|t| t.p99_us as f64));
    let err = Spread::of(by_tenant.iter().map(|t| t.error_pct));
    Some(Fairness {
        tenants: by_tenant.len(),
        jain_index: if all_good == 0 { None } else { jain(&x) },
        p99_spread: p99.ratio(),
        median_p99_us: p99.median as u64,
        error_spread_pp: err.max - err.median,
        median_error_pct: err.median,
        worst_p99: worst(
            &by_tenant,
            |t| t.p99_us as f64,
            |_| true,
            |t| t.tenant.as_str(),
        ),
        worst_errors: worst(
            &by_tenant,
            |t| t.error_pct,
            |t| t.good < t.attempts,
            |t| t.tenant.as_str(),
        ),
        by_tenant,
        delivery: None,
    })
}
