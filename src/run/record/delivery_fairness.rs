//! A level's subscriber statistics rolled up by tenant into the delivery fairness figures
//! (`levels[].fairness.delivery`): latency from the per-topic histograms, owed / delivered /
//! lost from the per-subscriber counts.

use std::collections::BTreeMap;

use crate::fairness::delivery::{delivery_figures, DeliveryFairness, Owed};
use crate::fairness::per_tenant;
use crate::subscriber::DeliveryLevelStats;
use crate::workload::tenant_name;

/// The delivery figures of `d`: `topic_tenants[i]` is workload topic `i`'s tenant (`None` for
/// a topic no one tenant owns, left out).
pub(super) fn figures(
    d: &DeliveryLevelStats,
    topic_tenants: &[Option<u32>],
) -> Option<DeliveryFairness> {
    let latency = per_tenant(
        d.per_topic.iter().map(|(t, s)| (*t, s)),
        topic_tenants,
        tenant_name,
    );
    let mut owed: BTreeMap<String, Owed> = BTreeMap::new();
    for (key, c) in &d.per_subscriber {
        // `<topic index>/<subscriber index>`.
        let topic = key.split('/').next().and_then(|t| t.parse::<usize>().ok());
        if let Some(Some(tenant)) = topic.and_then(|t| topic_tenants.get(t)) {
            let o = owed.entry(tenant_name(*tenant)).or_default();
            o.expected += c.expected;
            o.delivered += c.delivered;
            o.lost += c.lost;
        }
    }
    delivery_figures(&latency, &owed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Class;
    use crate::subscriber::DeliveryCounts;

    /// Topics 0 and 1 are tenant 0's, topic 2 tenant 1's, topic 3 no one tenant's: each
    /// tenant's counts and latencies are its topics' subscribers' together.
    #[test]
    fn subscribers_roll_up_by_their_topic_s_tenant() {
        let mut d = DeliveryLevelStats::default();
        for (key, expected, delivered) in [
            ("0/0", 5, 5),
            ("1/0", 5, 3),
            ("1/1", 5, 5),
            ("2/0", 4, 4),
            ("3/0", 9, 0),
        ] {
            let c = DeliveryCounts {
                expected,
                delivered,
                lost: expected - delivered,
                ..DeliveryCounts::default()
            };
            d.per_subscriber.insert(key.into(), c);
        }
        for (topic, us) in [(0, 10), (1, 12), (2, 3), (3, 15)] {
            d.per_topic
                .entry(topic)
                .or_default()
                .record(Class::Accepted, us);
        }
        let f = figures(&d, &[Some(0), Some(0), Some(1), None]).unwrap();
        let t: Vec<(&str, u64, u64, u64, u64)> = f
            .by_tenant
            .iter()
            .map(|t| (t.tenant.as_str(), t.expected, t.delivered, t.lost, t.max_us))
            .collect();
        assert_eq!(
            t,
            [("tenant0000", 15, 13, 2, 12), ("tenant0001", 4, 4, 0, 3)]
        );
    }
}
