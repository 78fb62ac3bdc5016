//! The fairness figures against hand-computed values.

use super::*;

/// A tenant's statistics: `n` attempts of `class` at `us` each, for each triple.
fn tenant(name: &str, parts: &[(Class, u64, u64)]) -> (String, TopicStats) {
    let mut s = TopicStats::default();
    for &(class, us, n) in parts {
        for _ in 0..n {
            s.record(class, us);
        }
    }
    (name.to_string(), s)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[test]
fn half_the_goodput_for_an_equal_offer_gives_an_index_of_0_9() {
    // A: 10 accepted; B: 5 accepted + 5 503s. Offered ½ and ½; achieved 10/15 and 5/15.
    // x = (4/3, 2/3): (Σx)² = 4, n·Σx² = 2·(16/9 + 4/9) = 40/9, so J = 36/40.
    let f = figures(&[
        tenant("a", &[(Class::Accepted, 10, 10)]),
        tenant("b", &[(Class::Accepted, 10, 5), (Class::Http503, 10, 5)]),
    ])
    .unwrap();
    assert_eq!(f.tenants, 2);
    assert!(close(f.jain_index.unwrap(), 0.9), "{f:?}");
    let [a, b] = [&f.by_tenant[0], &f.by_tenant[1]];
    assert_eq!((a.attempts, a.good, b.attempts, b.good), (10, 10, 10, 5));
    assert!(close(a.offered_share, 0.5) && close(b.offered_share, 0.5));
    assert!(close(a.achieved_share, 2.0 / 3.0) && close(b.achieved_share, 1.0 / 3.0));
    assert_eq!((a.error_pct, b.error_pct), (0.0, 50.0));
    // Median error % of (0, 50) is 25; the worst is 50: 25 points apart.
    assert_eq!((f.median_error_pct, f.error_spread_pp), (25.0, 25.0));
    let worst: Vec<&str> = f.worst_errors.iter().map(|t| t.tenant.as_str()).collect();
    assert_eq!(worst, ["b"]);
}

#[test]
fn the_slow_tenant_is_named_first_and_the_spread_is_its_p99_over_the_median() {
    // Values below 16 µs are exact buckets; 1,000 µs is clamped to the exact max.
    let f = figures(&[
        tenant("t0", &[(Class::Accepted, 10, 100)]),
        tenant("t1", &[(Class::Accepted, 12, 100)]),
        tenant("t2", &[(Class::Accepted, 1000, 100)]),
    ])
    .unwrap();
    let p99s: Vec<u64> = f.by_tenant.iter().map(|t| t.p99_us).collect();
    assert_eq!(p99s, [10, 12, 1000]);
    assert_eq!(f.median_p99_us, 12);
    assert!(close(f.p99_spread.unwrap(), 1000.0 / 12.0), "{f:?}");
    let worst: Vec<&str> = f.worst_p99.iter().map(|t| t.tenant.as_str()).collect();
    assert_eq!(worst, ["t2", "t1", "t0"]);
    // Slow but served: the index sees goodput only.
    assert_eq!(f.jain_index, Some(1.0));
    assert!(f.worst_errors.is_empty());
    assert_eq!(f.error_spread_pp, 0.0);
}

#[test]
fn unequal_offers_all_served_are_perfectly_fair() {
    // Offered 1/6, 2/6, 3/6 and achieved the same: every x is 1.
    let f = figures(&[
        tenant("a", &[(Class::Accepted, 5, 10)]),
        tenant("b", &[(Class::Accepted, 5, 20)]),
        tenant("c", &[(Class::Accepted, 5, 30)]),
    ])
    .unwrap();
    assert_eq!(f.jain_index, Some(1.0));
    assert!(close(f.by_tenant[2].offered_share, 0.5));
    assert_eq!(f.p99_spread, Some(1.0));
}

#[test]
fn one_tenant_taking_all_the_goodput_gives_one_over_n() {
    // Four equal offers, only d served: x = (0, 0, 0, 4), J = 16 / (4·16).
    let failed = [(Class::Http503, 5, 10)];
    let f = figures(&[
        tenant("a", &failed),
        tenant("b", &failed),
        tenant("c", &failed),
        tenant("d", &[(Class::Accepted, 5, 10)]),
    ])
    .unwrap();
    assert_eq!(f.jain_index, Some(0.25));
    // Error % are 100, 100, 100, 0: median 100, worst 100.
    assert_eq!((f.median_error_pct, f.error_spread_pp), (100.0, 0.0));
    let worst: Vec<&str> = f.worst_errors.iter().map(|t| t.tenant.as_str()).collect();
    assert_eq!(worst, ["a", "b", "c"], "three at most, ties by name");
}

#[test]
fn no_goodput_at_all_has_no_index() {
    let failed = [(Class::Http503, 5, 3)];
    let f = figures(&[tenant("a", &failed), tenant("b", &failed)]).unwrap();
    assert_eq!(f.jain_index, None);
    assert!(f.by_tenant.iter().all(|t| t.achieved_share == 0.0));
}

#[test]
fn fewer_than_two_tenants_with_attempts_have_no_figures() {
    assert_eq!(figures(&[]), None);
    let one = tenant("a", &[(Class::Accepted, 5, 3)]);
    let idle = tenant("b", &[]);
    assert_eq!(figures(&[one.clone(), idle.clone()]), None);
    let f = figures(&[one.clone(), idle, one]).unwrap();
    assert_eq!(f.tenants, 2, "the idle tenant is left out");
}

#[test]
fn per_tenant_adds_a_tenants_topics_and_leaves_shared_topics_out() {
    let t = |n: u64| tenant("", &[(Class::Accepted, 7, n)]).1;
    let topics = [t(1), t(2), t(4), t(8)];
    let tenants = [Some(1), None, Some(0), Some(1)];
    let rolled = per_tenant(topics.iter().enumerate(), &tenants, |i| {
        format!("tenant{i:04}")
    });
    let got: Vec<(&str, u64)> = rolled
        .iter()
        .map(|(n, s)| (n.as_str(), s.counts.total()))
        .collect();
    assert_eq!(got, [("tenant0000", 4), ("tenant0001", 9)]);
}

#[test]
fn jain_of_known_vectors() {
    assert_eq!(jain(&[]), None);
    assert_eq!(jain(&[0.0, 0.0]), None);
    assert_eq!(jain(&[2.0, 2.0, 2.0]), Some(1.0));
    // (1+2+3)² / (3·(1+4+9)) = 36/42.
    assert!(close(jain(&[1.0, 2.0, 3.0]).unwrap(), 36.0 / 42.0));
}
