//! Every class count hubload reports equals the reference hub's own count, read from `/stats`.

use std::time::Duration;

use hubload_hub::{FaultConfig, StatsSnapshot};

use hubload::RunOutcome;

use crate::util::{count, hub_with, line, run, Scenario};

/// The hub counts an abandoned request when it notices the client left; give it a moment.
async fn settled_stats(sc: &Scenario, publishes: u64) -> StatsSnapshot {
    for _ in 0..100 {
        let s = sc.hub_stats().await;
        if s.publish.total() >= publishes {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    sc.hub_stats().await
}

/// A hub with `faults`, one run of `flags` against it, and the hub's counts once it has seen
/// `publishes`.
async fn faulted_run(
    faults: FaultConfig,
    flags: &str,
    publishes: u64,
) -> (Scenario, RunOutcome, StatsSnapshot) {
    let sc = Scenario::start(faults).await;
    let o = sc.run(&line(flags)).await;
    let s = settled_stats(&sc, publishes).await;
    (sc, o, s)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_per_level_reconcile_exactly_with_the_hub() {
    let (sc, o, s) = faulted_run(
        FaultConfig::default(),
        "--tenants 20 --sps 3 --users 5 --concurrency 1,8,32 --requests 300",
        900,
    )
    .await;
    let out = &sc.dir;
    let r = &o.report;
    assert_eq!(r.levels.len(), 3);
    let on_disk = sc.summary("");
    let samples = |r: &hubload::report::document::Report| {
        r.levels
            .iter()
            .map(|l| l.derived.samples)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        samples(&on_disk),
        samples(r),
        "summary.json is the returned report"
    );
    for l in &r.levels {
        assert_eq!(l.derived.samples, 300, "level {}", l.label);
        assert_eq!(l.derived.events.total, 300);
    }
    let total = r.total.as_ref().unwrap();
    assert_eq!(total.derived.samples, 900);
    assert_eq!(count(total, "accepted"), 900);
    assert_eq!(s.publish.accepted, 900);
    assert_eq!(s.publish.total(), 900);
    // 20 tenants × 4 channels, registered once each.
    let reg = r.registration.as_ref().unwrap();
    assert_eq!((reg.result.topics, reg.accepted, reg.failed), (80, 80, 0));
    assert_eq!(s.register.accepted, 80);
    // Per topic, hubload's attempts equal the hub's published count.
    let attempts = crate::util::attempts_by_topic(&on_disk);
    assert_eq!(attempts.iter().sum::<u64>(), total.derived.samples);
    for (i, name) in r.topics.iter().enumerate() {
        let ours = attempts.get(i).copied().unwrap_or(0);
        let theirs = s.topics.get(&**name).map_or(0, |t| t.published);
        assert_eq!(ours, theirs, "topic {name}");
    }
    // The files were written.
    for f in ["aggregate.csv", "summary.json", "table.txt"] {
        assert!(out.path().join(f).is_file(), "{f}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_schedule_reconciles_class_by_class() {
    let faults = FaultConfig {
        fail_502_every: Some(5),
        fail_503_every: Some(7),
        ..FaultConfig::default()
    };
    let (_sc, o, s) = faulted_run(
        faults,
        "--tenants 5 --topics shared --concurrency 4,16 --requests 350",
        700,
    )
    .await;
    let t = o.report.total.as_ref().unwrap();
    assert_eq!(t.derived.samples, 700);
    assert_eq!(s.publish.total(), 700);
    assert_eq!(count(t, "accepted"), s.publish.accepted);
    assert_eq!(count(t, "http_502"), s.publish.fault_502);
    assert_eq!(count(t, "http_503"), s.publish.fault_503);
    assert_eq!(count(t, "denied"), s.publish.denied);
    assert!(
        s.publish.fault_502 > 100 && s.publish.fault_503 > 50,
        "{:?}",
        s.publish
    );
    // Error % counts everything that was not accepted.
    let want = (700 - s.publish.accepted) as f64 * 100.0 / 700.0;
    assert!((t.derived.error_pct - want).abs() < 1e-9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resets_reconcile_with_the_hub() {
    let faults = FaultConfig {
        reset_every: Some(9),
        ..FaultConfig::default()
    };
    let (_sc, o, s) = faulted_run(
        faults,
        "--tenants 3 --topics shared --concurrency 4 --requests 300 --register-concurrency 1",
        300,
    )
    .await;
    let t = o.report.total.as_ref().unwrap();
    assert_eq!(s.publish.total(), 300, "{:?}", s.publish);
    assert_eq!(
        count(t, "conn_reset") + count(t, "conn_closed"),
        s.publish.fault_reset
    );
    assert_eq!(count(t, "accepted"), s.publish.accepted);
    assert!(s.publish.fault_reset >= 30);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_timeouts_equal_the_hubs_abandoned_requests() {
    let faults = FaultConfig {
        broker_latency_ms: 400,
        ..FaultConfig::default()
    };
    let (_sc, o, s) = faulted_run(
        faults,
        "--tenants 2 --concurrency 5 --requests 40 --timeout 100ms",
        40,
    )
    .await;
    let t = o.report.total.as_ref().unwrap();
    assert_eq!(t.derived.timeouts.response, 40);
    assert_eq!(s.publish.abandoned, 40, "{:?}", s.publish);
    assert_eq!(s.publish.accepted, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_count_attempts_and_events_like_the_hub() {
    // Every 3rd request is a 503; with 2 immediate retries every event ends up accepted.
    let faults = FaultConfig {
        fail_503_every: Some(3),
        ..FaultConfig::default()
    };
    let (_sc, o, s) = faulted_run(
        faults,
        "--tenants 2 --topics shared --concurrency 1 --requests 100 --retries 2",
        100,
    )
    .await;
    let t = o.report.total.as_ref().unwrap();
    assert_eq!(t.derived.events.total, 100);
    assert_eq!(t.derived.events.failed, 0);
    assert_eq!(t.derived.samples, s.publish.total());
    assert_eq!(count(t, "http_503"), s.publish.fault_503);
    assert_eq!(t.derived.events.retries, s.publish.fault_503);
    assert_eq!(count(t, "accepted"), 100);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_50ms_delay_gives_a_median_of_50_to_52ms() {
    let faults = FaultConfig {
        latency_ms: 50,
        ..FaultConfig::default()
    };
    let sc = Scenario::start(faults).await;

    let o = sc
        .run(&["--tenants", "2", "--concurrency", "4", "--requests", "120"])
        .await;
    let l = &o.report.levels[0];
    assert!(
        (50..=52).contains(&l.derived.median_ms),
        "median {} ms",
        l.derived.median_ms
    );
    assert!(l.derived.min_ms >= 50);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_that_dies_mid_run_is_classified_and_reported() {
    let hub = hub_with(FaultConfig::default()).await;
    let url = hub.url.clone();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap().to_string();
    let run = tokio::spawn(async move {
        run(&[
            "--hub-url",
            &url,
            "--tenants",
            "2",
            "--concurrency",
            "4",
            "--duration",
            "2s",
            "--timeout",
            "300ms",
            "--out",
            &dir,
        ])
        .await
    });
    // Let it register and publish for a while (100 accepted, within a generous 4 s), then kill
    // the hub.
    let mut publishing = false;
    for _ in 0..200 {
        if hub.stats().await.publish.accepted > 100 {
            publishing = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(publishing, "the hub never accepted 100 publishes");
    drop(hub);
    let o = run.await.unwrap();
    let t = o.report.total.as_ref().unwrap();
    assert!(count(t, "accepted") > 0);
    let failures = t.derived.samples - count(t, "accepted");
    assert!(failures > 0, "the dead hub produced no failures");
    assert_eq!(
        failures,
        t.derived.connection_errors
            + t.derived.timeouts.connect
            + t.derived.timeouts.response
            + t.derived.timeouts.pool_wait
    );
    assert!(!o.report.partial);
    assert!(out.path().join("aggregate.csv").is_file());
}
