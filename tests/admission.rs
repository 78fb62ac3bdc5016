//! The hub's per-tenant admission limit against hubload: retries wait for the 429's
//! `Retry-After` (over HTTP/1.1 and HTTP/2) and never past the attempt's deadline, and the
//! fairness figures put the limited tenant alone at fault, per tenant exactly as the hub
//! counted its 429s.

use std::collections::BTreeMap;

use hubload_hub::{HubConfig, StatsSnapshot, TenantLimit};

use crate::support::lateness::Lateness;
use crate::util::{count, line, Scenario};

/// The attempts' timeout of the deadline test.
const TIMEOUT_MS: u64 = 500;

/// A hub admitting each tenant's publishes at `rate` with bursts of `burst`.
async fn limited(rate: &str, burst: u32) -> Scenario {
    Scenario::start_with(HubConfig {
        tenant_limit: Some(TenantLimit {
            burst,
            ..TenantLimit::new(rate.parse().unwrap())
        }),
        ..HubConfig::default()
    })
    .await
}

/// The hub's per-tenant counts of `s`, as (admitted, throttled, before Retry-After).
fn tenants(s: &StatsSnapshot) -> BTreeMap<String, (u64, u64, u64)> {
    (s.tenants.iter())
        .map(|(t, a)| (t.clone(), (a.admitted, a.throttled, a.before_retry_after)))
        .collect()
}

/// Four publishes of one tenant, one at a time, with 2 retries, `timeout` and HTTP `version`.
async fn four_in_turn(sc: &Scenario, timeout: &str, version: &str) -> hubload::RunOutcome {
    let flags = ["--tenants", "1", "--concurrency", "1", "--requests", "4"];
    let client = [
        "--retries",
        "2",
        "--timeout",
        timeout,
        "--http-version",
        version,
    ];
    sc.run(&[&flags[..], &client[..]].concat()).await
}

/// One tenant at 1 publish/s, published to one at a time with retries: the publishes after
/// the first are each refused once with `Retry-After: 1`, and each retry waits that second,
/// so it is admitted and never comes early (the hub's own count of early arrivals is 0).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_wait_for_retry_after_over_http1_and_http2() {
    for version in ["1.1", "2"] {
        let sc = limited("1/s", 1).await;
        let out = four_in_turn(&sc, "3s", version).await;
        let s = sc.hub.stats().await;
        let level = &out.report.levels[0];
        assert_eq!(
            (s.publish.accepted, s.publish.throttled),
            (4, 3),
            "{version}"
        );
        assert_eq!(tenants(&s)["tenant0000"], (4, 3, 0), "{version}");
        assert_eq!(count(level, "throttled"), s.publish.throttled, "{version}");
        assert_eq!(count(level, "accepted"), s.publish.accepted, "{version}");
        let e = &level.derived.events;
        assert_eq!((e.total, e.failed, e.retries), (4, 0, 3), "{version}");
    }
}

/// One publish a minute: `Retry-After: 60` with a 500 ms timeout. Waiting would pass the
/// attempt's deadline, so the event ends throttled at once, with no retry and no wait (and
/// however slow the machine, the four publishes fall in one minute).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_past_the_deadline_ends_the_event_without_waiting() {
    let sc = limited("1/m", 1).await;
    let lateness = Lateness::watch();
    let out = four_in_turn(&sc, &format!("{TIMEOUT_MS}ms"), "1.1").await;
    let s = sc.hub.stats().await;
    let level = &out.report.levels[0];
    // One admitted, three refused once each: no retry was sent.
    assert_eq!((s.publish.accepted, s.publish.throttled), (1, 3));
    assert_eq!(level.derived.samples, 4);
    let e = &level.derived.events;
    assert_eq!((e.total, e.failed, e.retries), (4, 3, 0));
    assert_eq!(count(level, "throttled"), 3);
    // The next events came within the first 429's minute: the hub saw them early.
    assert_eq!(tenants(&s)["tenant0000"], (1, 3, 2));
    // Every attempt, and so every event, ended within its timeout.
    let bound = lateness.bound(std::time::Duration::from_millis(TIMEOUT_MS));
    assert!(
        level.derived.latency_us.max <= bound.as_micros() as u64,
        "{:?}, bound {bound:?}",
        level.derived.latency_us
    );
    assert!(
        level.derived.span_s <= e.total as f64 * bound.as_secs_f64(),
        "{}, bound {bound:?} an event",
        level.derived.span_s
    );
}

/// Zipf over 4 tenants gives tenant0000 about half the publishes; a burst of 150 at 1/s
/// admits every other tenant's (fewer than 150 each), so only tenant0000 is refused.
/// hubload's per-tenant failures equal the hub's per-tenant 429s, and the fairness figures
/// name tenant0000 alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_limited_tenant_alone_pays_in_the_fairness_figures() {
    const BURST: u32 = 150;
    let sc = limited("1/s", BURST).await;
    let out = sc
        .run(&line(
            "--tenants 4 --distribution zipf --concurrency 4 --requests 400",
        ))
        .await;
    let s = sc.hub.stats().await;
    let by_hub = tenants(&s);
    assert_eq!(by_hub.len(), 4, "{by_hub:?}");
    // The design holds: the quiet tenants' publishes fit in a burst, the noisy one's do not.
    for (t, (admitted, throttled, _)) in &by_hub {
        match t.as_str() {
            "tenant0000" => assert!(*throttled > 0, "{t}: {by_hub:?}"),
            _ => assert!(admitted + throttled <= u64::from(BURST), "{t}: {by_hub:?}"),
        }
    }
    let level = &out.report.levels[0];
    assert_eq!(count(level, "throttled"), s.publish.throttled);
    let f = level.fairness.as_ref().expect("4 tenants: figures");
    for t in &f.by_tenant {
        let (admitted, throttled, _) = by_hub[&t.tenant];
        // Every failed attempt of a tenant is one of the hub's 429s to it, and no other.
        assert_eq!(t.attempts - t.good, throttled, "{}", t.tenant);
        assert_eq!(t.good, admitted, "{}", t.tenant);
        if t.tenant != "tenant0000" {
            assert_eq!(t.error_pct, 0.0, "{}", t.tenant);
        }
    }
    let worst: Vec<&str> = f.worst_errors.iter().map(|t| t.tenant.as_str()).collect();
    assert_eq!(worst, ["tenant0000"]);
    let jain = f.jain_index.unwrap();
    assert!(jain < 1.0, "{jain}");
    // Jain's index from the hub's counts: xᵢ = admitted ÷ (admitted + throttled).
    let x: Vec<f64> = (by_hub.values())
        .map(|(a, t, _)| *a as f64 / (a + t) as f64)
        .collect();
    let want = crate::fairness::jain_by_hand(&x);
    assert!((jain - want).abs() < 1e-12, "{jain} vs {want}");
}
