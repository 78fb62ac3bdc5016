//! The noisy neighbour (`--surge`) against the reference hub: when the surge outruns the
//! hub's capacity the quiet tenants' p99 rises and the verdict and its gate say so; with room
//! to spare it does not; every tenant's attempts are the hub's own publishes of its topics;
//! the closed model refuses a surge.

use hubload_hub::FaultConfig;

use crate::fairness::hub_accepted as hub_published;
use crate::util::{assert_exit, Scenario};

/// 4 tenants at 40/s for 8 s; from 4 s tenant0001 publishes 9× its share of 1/4: 8 × 1/4 ×
/// 40 = 80 extra per second. The hub answers every publish after 25 ms; `pool` connections
/// carry them (HTTP/1.1: one publish at a time each), so the capacity is `pool` ÷ 25 ms.
pub(crate) fn flags<'a>(pool: &'a str, gate: &'a str) -> Vec<&'a str> {
    vec![
        "--tenants",
        "4",
        "--channels",
        "login",
        "--rate",
        "40",
        "--duration",
        "8s",
        "--surge",
        "tenant0001x9@4s",
        "--pool-per-host",
        pool,
        "--max-inflight",
        "2000",
        "--timeout",
        "10s",
        "--threshold",
        gate,
    ]
}

/// One gate for both hubs: the contended one fails it, the other passes.
pub(crate) const GATE: &str = "quiet_p99_increase<300%";

pub(crate) fn slow_hub() -> FaultConfig {
    FaultConfig {
        latency_ms: 25,
        ..FaultConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_surge_beyond_the_hub_s_capacity_raises_the_quiet_tenants_p99_and_fails_the_gate() {
    // 2 connections × 25 ms: 80 publishes/s. The baseline offers 40/s, the surge 120/s: a
    // backlog grows by 40 a second for 4 s, and every quiet publish waits behind it.
    let sc = Scenario::start(slow_hub()).await;
    let out = sc.run(&flags("2", GATE)).await;
    let level = &out.report.levels[0];
    let v = level.isolation.as_ref().expect("an isolation verdict");
    assert_eq!(v.surging, ["tenant0001"]);
    assert_eq!((v.quiet_tenants, v.from_s), (3, 4));
    let up = v.p99_increase_pct.unwrap();
    let [lo, _] = v.p99_increase_ci_pct.unwrap();
    // A backlog of a second or more against a 25 ms baseline: far above +300 %, and the
    // interval's low end too (it excludes 0).
    assert!(lo > 300.0, "{v:?}");
    assert!(up >= lo, "{v:?}");
    assert!(
        v.sentence
            .contains("tenant0001 published 9× its share, the other 3 tenants' p99 rose"),
        "{}",
        v.sentence
    );
    assert!(out.thresholds_failed);
    let verdict = &out.report.verdicts[0];
    assert_eq!((verdict.threshold.as_str(), verdict.passed), (GATE, false));
    // Every attempt a tenant made reached the hub and was accepted there.
    let f = level.fairness.as_ref().unwrap();
    let hub = hub_published(&sc.hub.stats().await.topics);
    for t in &f.by_tenant {
        assert_eq!(t.attempts, hub[&t.tenant], "{}", t.tenant);
    }
    let table = std::fs::read_to_string(sc.dir.path().join("table.txt")).unwrap();
    assert!(table.contains(&v.sentence), "{table}");
    let html = std::fs::read_to_string(sc.dir.path().join("report.html")).unwrap();
    assert!(
        html.contains("the other 3 tenants&#39; p99 rose")
            || html.contains("the other 3 tenants' p99 rose")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_surge_with_room_to_spare_leaves_the_quiet_tenants_alone_and_counts_exactly() {
    // 64 connections × 25 ms: 2,560 publishes/s, for 120/s at most.
    let sc = Scenario::start(slow_hub()).await;
    let out = sc.run(&flags("64", GATE)).await;
    let level = &out.report.levels[0];
    let v = level.isolation.as_ref().expect("an isolation verdict");
    // Every publish waits its 25 ms and little else: the p99 stays within the gate (4× the
    // baseline's, room for a busy machine's hiccups, and far below the backlog's 50×).
    assert!(!out.thresholds_failed, "{v:?}");
    assert!(out.report.verdicts[0].passed);
    assert_eq!((v.baseline.errors, v.surge.errors), (0, 0));
    // Exact counts: 40/s for 8 s is 320 scheduled sends, the surge 80/s for 4 s 320 more, and
    // the hub's publishes per tenant are hubload's attempts per tenant.
    assert_eq!(level.stats.dropped, 0);
    let f = level.fairness.as_ref().unwrap();
    let hub = hub_published(&sc.hub.stats().await.topics);
    let total: u64 = f.by_tenant.iter().map(|t| t.attempts).sum();
    assert_eq!(total, 640);
    assert_eq!(hub.values().sum::<u64>(), 640);
    for t in &f.by_tenant {
        assert_eq!(t.attempts, hub[&t.tenant], "{}", t.tenant);
    }
    // The quiet tenants' attempts before and during the surge are theirs alone: everything
    // but tenant0001's.
    let quiet: u64 = f
        .by_tenant
        .iter()
        .filter(|t| t.tenant != "tenant0001")
        .map(|t| t.attempts)
        .sum();
    assert_eq!(v.baseline.attempts + v.surge.attempts, quiet);
    // tenant0001: its own draws of the 320, and all 320 extra.
    let noisy = f
        .by_tenant
        .iter()
        .find(|t| t.tenant == "tenant0001")
        .unwrap();
    assert_eq!(noisy.attempts, 640 - quiet);
    assert!(noisy.attempts >= 320);
    surge_over_half_a_level(f);
}

/// Designed shares of 4 tenants with tenant0001 at 9× over half the level: ¼ each of the
/// level's own events, and tenant0001 8 × ¼ × ½ more: 1.25 of 2 for it, 0.25 of 2 for each
/// other.
pub(crate) fn surge_over_half_a_level(f: &hubload::fairness::Fairness) {
    for t in &f.by_tenant {
        let want = if t.tenant == "tenant0001" {
            0.625
        } else {
            0.125
        };
        assert_eq!(t.designed_share, Some(want), "{}", t.tenant);
    }
}

#[test]
fn the_closed_model_refuses_a_surge() {
    let dir = tempfile::tempdir().unwrap();
    let out = crate::util::bin(
        &["--concurrency", "4", "--surge", "tenant0001x9@4s"],
        dir.path(),
    );
    assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("invalid --surge `tenant0001x9@4s`: needs the open model (--rate)"),
        "{err}"
    );
}

#[test]
fn a_surge_with_a_ramp_up_is_refused_before_any_load() {
    let dir = tempfile::tempdir().unwrap();
    let out = crate::util::bin(
        &[
            "--rate",
            "40",
            "--duration",
            "8s",
            "--ramp-up",
            "2s",
            "--surge",
            "tenant0001x9@4s",
        ],
        dir.path(),
    );
    assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("invalid --surge `tenant0001x9@4s`: cannot be combined with --ramp-up"),
        "{err}"
    );
}
