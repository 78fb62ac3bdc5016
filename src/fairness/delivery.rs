//! Per-tenant delivery figures of one level, with subscribers: each tenant's deliveries owed,
//! delivered and lost, its delivery latency (publish start → received), the p99 and loss
//! spreads and the worst tenants.
//!
//! Pure and exact: the input is the subscribers' per-topic latency histograms and per-subscriber
//! counts, which merge with `+=`; shards own whole tenants, so merged figures equal one
//! process's. The spreads read as the publish side's (docs/fairness.md): the largest tenant
//! p99 ÷ the median one, the largest loss % minus the median one.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::spread::{worst, Spread};
use crate::stats::TopicStats;

/// One tenant's deliveries owed, delivered and lost, added up over its subscribers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Owed {
    pub expected: u64,
    pub delivered: u64,
    pub lost: u64,
}

/// One tenant's deliveries in one level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TenantDelivery {
    /// The tenant's name (`tenant0007`).
    pub tenant: String,
    /// Deliveries owed to the tenant's subscribers (accepted publishes × verified subscribers).
    pub expected: u64,
    /// Of them, delivered intact and acknowledged.
    pub delivered: u64,
    /// Owed and not delivered within the grace.
    pub lost: u64,
    /// lost ÷ expected, % (0 when nothing was owed).
    pub loss_pct: f64,
    /// Delivery latency percentiles (publish start → received), µs: the compact per-topic
    /// histogram's bucket bound, at most 12.5 % above the true value.
    pub p50_us: u64,
    pub p99_us: u64,
    /// Exact largest delivery latency, µs.
    pub max_us: u64,
}

/// The delivery figures of one level (`summary.json` `levels[].fairness.delivery`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DeliveryFairness {
    /// Tenants with a delivery owed.
    pub tenants: usize,
    /// Largest tenant delivery p99 ÷ median tenant delivery p99 (absent when the median is 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_spread: Option<f64>,
    /// The median tenant delivery p99, µs.
    pub median_p99_us: u64,
    /// Largest tenant loss % minus the median tenant loss %, percentage points.
    pub loss_spread_pp: f64,
    /// The median tenant loss %.
    pub median_loss_pct: f64,
    /// Up to three tenants by delivery p99, highest first (ties by name).
    pub worst_p99: Vec<TenantDelivery>,
    /// Up to three tenants with a loss, by loss %, highest first (ties by name).
    pub worst_loss: Vec<TenantDelivery>,
    /// Every tenant with a delivery owed, by name: in memory, and in `Report::fairness_file`
    /// beside the publish side's rows, never in summary.json (it grows with the tenants); read
    /// from summaries written before (with it inline).
    #[serde(default, skip_serializing)]
    #[schemars(with = "Option<Vec<TenantDelivery>>")]
    pub by_tenant: Vec<TenantDelivery>,
}

/// The figures from each tenant's latency histogram and counts (both by tenant name, as
/// [`super::per_tenant`] rolls them up); `None` with fewer than two tenants owed a delivery.
pub fn delivery_figures(
    latency: &[(String, TopicStats)],
    counts: &BTreeMap<String, Owed>,
) -> Option<DeliveryFairness> {
    let lat: BTreeMap<&str, &TopicStats> = latency.iter().map(|(t, s)| (t.as_str(), s)).collect();
    let empty = TopicStats::default();
    let by_tenant: Vec<TenantDelivery> = counts
        .iter()
        .filter(|(_, c)| c.expected > 0)
        .map(|(tenant, c)| {
            let h = lat.get(tenant.as_str()).copied().unwrap_or(&empty);
            TenantDelivery {
                tenant: tenant.clone(),
                expected: c.expected,
                delivered: c.delivered,
                lost: c.lost,
                loss_pct: c.lost as f64 * 100.0 / c.expected as f64,
                p50_us: h.quantile(0.50),
                p99_us: h.quantile(0.99),
                max_us: h.max_us,
            }
        })
        .collect();
    if by_tenant.len() < 2 {
        return None;
    }
    let p99 = Spread::of(by_tenant.iter().map(|t| t.p99_us as f64));
    let loss = Spread::of(by_tenant.iter().map(|t| t.loss_pct));
    Some(DeliveryFairness {
        tenants: by_tenant.len(),
        p99_spread: p99.ratio(),
        median_p99_us: p99.median as u64,
        loss_spread_pp: loss.max - loss.median,
        median_loss_pct: loss.median,
        worst_p99: worst(
            &by_tenant,
            |t| t.p99_us as f64,
            |_| true,
            |t| t.tenant.as_str(),
        ),
        worst_loss: worst(
            &by_tenant,
            |t| t.loss_pct,
            |t| t.lost > 0,
            |t| t.tenant.as_str(),
        ),
        by_tenant,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Class;

    fn lat(name: &str, us: &[u64]) -> (String, TopicStats) {
        let mut s = TopicStats::default();
        us.iter().for_each(|v| s.record(Class::Accepted, *v));
        (name.into(), s)
    }

    fn owed(expected: u64, delivered: u64) -> Owed {
        Owed {
            expected,
            delivered,
            lost: expected - delivered,
        }
    }

    #[test]
    fn spreads_and_worst_tenants_from_hand_computed_values() {
        // a: 4 of 4 at 10 µs; b: 3 of 4 at 10 and 15 µs; c: 2 of 4 at 12 µs (exact buckets).
        let latency = [
            lat("a", &[10; 4]),
            lat("b", &[10, 10, 15]),
            lat("c", &[12, 12]),
        ];
        let counts = BTreeMap::from([
            ("a".to_string(), owed(4, 4)),
            ("b".to_string(), owed(4, 3)),
            ("c".to_string(), owed(4, 2)),
            ("idle".to_string(), owed(0, 0)),
        ]);
        let f = delivery_figures(&latency, &counts).unwrap();
        assert_eq!(f.tenants, 3, "a tenant owed nothing is left out");
        let p99: Vec<u64> = f.by_tenant.iter().map(|t| t.p99_us).collect();
        assert_eq!(p99, [10, 15, 12]);
        // Median p99 12; the largest 15: 1.25.
        assert_eq!((f.median_p99_us, f.p99_spread), (12, Some(1.25)));
        // Loss 0 %, 25 %, 50 %: median 25, worst 50, 25 points apart.
        assert_eq!((f.median_loss_pct, f.loss_spread_pp), (25.0, 25.0));
        let names = |v: &[TenantDelivery]| v.iter().map(|t| t.tenant.clone()).collect::<Vec<_>>();
        assert_eq!(names(&f.worst_p99), ["b", "c", "a"]);
        assert_eq!(names(&f.worst_loss), ["c", "b"]);
        assert_eq!((f.by_tenant[2].lost, f.by_tenant[2].max_us), (2, 12));
    }

    #[test]
    fn one_tenant_owed_anything_gives_no_figures() {
        let counts = BTreeMap::from([("a".to_string(), owed(4, 4))]);
        assert_eq!(delivery_figures(&[lat("a", &[10])], &counts), None);
    }
}
