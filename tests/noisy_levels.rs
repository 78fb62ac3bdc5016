//! The noisy neighbour from a level on (`--surge …@levelN`) against the reference hub: the
//! levels before N run without it and carry no verdict; level N runs a baseline pass and then
//! the surged pass at the same rate, and its verdict compares the two; every tenant's
//! attempts are the hub's own publishes of its topics; behind the hub's FIFO delivery queue
//! the quiet tenants' deliveries wait in the surged pass, behind its fair queue they do not;
//! bad N is refused in one line.

use hubload::fairness::isolation::Isolation;
use hubload_hub::{FaultConfig, QueueOrder};

use crate::fair_delivery::{hub, hub_delivered, FLAGS as DELIVERY_FLAGS};
use crate::fairness::hub_accepted as hub_published;
use crate::noisy::surge_over_half_a_level;
use crate::util::{assert_exit, settled, Scenario};

/// 4 tenants, levels of 20/s and 40/s of 3 s each; from level 2 tenant0001 publishes 9× its
/// share of 1/4: level 2 runs 3 s without the surge, then 3 s with 8 × 1/4 × 40 = 80 extra
/// per second. The hub answers tenant0001's publishes after 50 ms and the others' at once,
/// through 2 connections (HTTP/1.1: one publish at a time each).
const FLAGS: [&str; 20] = [
    "--tenants",
    "4",
    "--channels",
    "login",
    "--rate",
    "20,40",
    "--duration",
    "3s",
    "--surge",
    "tenant0001x9@level2",
    "--pool-per-host",
    "2",
    "--max-inflight",
    "2000",
    "--timeout",
    "15s",
    "--threshold",
    GATE,
    "--seed",
    "5",
];

/// Judged at level 2 only: level 1 has no surge by design.
const GATE: &str = "quiet_p99_increase<300%";

/// tenant0001's topics only, 50 ms a publish.
fn slow_tenant() -> FaultConfig {
    FaultConfig {
        latency_ms: 50,
        topic_prefixes: vec!["tenant0001.".into()],
        ..FaultConfig::default()
    }
}

/// TOTAL's fairness figures: every level's per-tenant statistics added.
fn total_fairness(out: &hubload::RunOutcome) -> &hubload::fairness::Fairness {
    let total = out.report.total.as_ref().expect("a TOTAL row");
    total.fairness.as_ref().expect("TOTAL's fairness figures")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_surge_from_level_2_is_judged_against_level_2_s_own_baseline_pass() {
    // Baseline pass: tenant0001 offers 10/s of 50 ms (half a connection), the others 30/s
    // answered at once. Surged pass: tenant0001 offers 90/s, 4.5 connections' worth of two:
    // its backlog grows for 3 s and every quiet publish waits behind it.
    let sc = Scenario::start(slow_tenant()).await;
    let out = sc.run(&FLAGS).await;
    let [one, two] = &out.report.levels[..] else {
        panic!("two levels: {:?}", out.report.levels.len())
    };
    assert!(one.isolation.is_none(), "level 1 has no surge");
    let v = two.isolation.as_ref().expect("level 2's isolation verdict");
    assert_eq!(v.surging, ["tenant0001"]);
    assert_eq!((v.level, v.from_s, v.quiet_tenants), (Some(2), 3, 3));
    assert_eq!(v.baseline.seconds, 3);
    let [lo, _] = v.p99_increase_ci_pct.unwrap();
    assert!(lo > 300.0, "{v:?}");
    assert!(v
        .sentence
        .contains("tenant0001 published 9× its share, the other 3 tenants' p99 rose"));
    // The gate judges level 2 alone, and fails there.
    assert!(out.thresholds_failed);
    let judged: Vec<(&str, bool)> = (out.report.verdicts.iter())
        .map(|v| (v.level.as_str(), v.passed))
        .collect();
    assert_eq!(judged, [("40/s", false)]);
    // Exact counts (constant arrivals): level 1 20/s × 3 s; level 2 40/s × 6 s of its own
    // schedule and 80/s × 3 s of the surge. Nothing dropped.
    let attempts = |l: &hubload::report::model::LevelReport| -> u64 {
        let f = l.fairness.as_ref().unwrap();
        f.by_tenant.iter().map(|t| t.attempts).sum()
    };
    assert_eq!((one.stats.dropped, two.stats.dropped), (0, 0));
    assert_eq!((attempts(one), attempts(two)), (60, 480));
    // Per tenant, the run's attempts over both levels are the hub's publishes.
    let hub = hub_published(&sc.hub.stats().await.topics);
    let total = total_fairness(&out);
    assert_eq!(total.by_tenant.len(), 4);
    for t in &total.by_tenant {
        assert_eq!(t.attempts, hub[&t.tenant], "{}", t.tenant);
    }
    // Level 2's quiet tenants: every attempt of theirs is in one of the two passes, and each
    // pass offered them the same rate: 120 events of the level's own schedule a pass, each a
    // quiet tenant's with probability 3/4, so 90 ± 5σ (σ = √(120·¾·¼) ≈ 4.7) in each, give
    // or take an attempt ending across the passes' boundary.
    let f = two.fairness.as_ref().unwrap();
    let quiet: u64 = (f.by_tenant.iter())
        .filter(|t| t.tenant != "tenant0001")
        .map(|t| t.attempts)
        .sum();
    assert_eq!(v.baseline.attempts + v.surge.attempts, quiet);
    for pass in [v.baseline.attempts, v.surge.attempts] {
        assert!((66..=114).contains(&pass), "{v:?}");
    }
    // tenant0001: its own draws of the level's 240 (those the quiet tenants did not get),
    // and exactly the surge's 240 on top: in the surged pass, its own ~30 and 8 × 30 more.
    let noisy = (f.by_tenant.iter())
        .find(|t| t.tenant == "tenant0001")
        .unwrap();
    assert_eq!(noisy.attempts - (240 - quiet), 240);
    // Designed shares: the surge covers half of level 2, as the time form's half a level.
    surge_over_half_a_level(f);
    let table = std::fs::read_to_string(sc.dir.path().join("table.txt")).unwrap();
    let line = format!("40/s (level 2, against its baseline pass): {}", v.sentence);
    assert!(table.contains(&line), "{table}");
    assert!(!table.contains("20/s (level"), "{table}");
}

/// fair_delivery.rs's run (4 tenants × 2 users, a subscriber each answering after 25 ms,
/// the hub's 2 delivery workers: 80 deliveries/s) as a sweep of 20/s and 40/s, 3 s each, with
/// tenant0001 at 17× from level 2: 200/s in level 2's surged pass, a FIFO backlog of seconds
/// (more than the time form's, so that the direction holds on a busy machine too, where the
/// deliveries' own baseline reaches hundreds of ms). Checks every delivery against the hub's
/// and returns level 2's delivery verdict.
async fn delivery_run(order: QueueOrder) -> Isolation {
    let sc = Scenario::start_with(hub(order)).await;
    let mut flags = DELIVERY_FLAGS.to_vec();
    for (flag, value) in [
        ("--rate", "20,40"),
        ("--duration", "3s"),
        ("--surge", "tenant0001x17@level2"),
    ] {
        let at = flags.iter().position(|f| *f == flag).unwrap();
        flags[at + 1] = value;
    }
    flags.extend(["--noise-floor", "1s"]);
    let out = sc.run(&flags).await;
    let hub = settled(&sc.hub).await;
    let [one, two] = &out.report.levels[..] else {
        panic!("two levels: {:?}", out.report.levels.len())
    };
    assert!(
        one.delivery_isolation.is_none(),
        "{order}: level 1 has no surge"
    );
    // 20/s × 3 s; 40/s × 6 s and the surge's 16 × ¼ × 40 = 160/s × 3 s; one subscriber each,
    // none lost.
    let delivered = |l: &hubload::report::model::LevelReport| {
        let c = &l.delivery.as_ref().expect("a delivery section").counts;
        assert_eq!(
            (c.expected, c.lost, c.duplicates),
            (c.delivered, 0, 0),
            "{order}"
        );
        c.delivered
    };
    assert_eq!((delivered(one), delivered(two)), (60, 720), "{order}");
    let total = total_fairness(&out);
    let ours: std::collections::BTreeMap<String, u64> = (total.delivery.as_ref().unwrap())
        .by_tenant
        .iter()
        .map(|t| (t.tenant.clone(), t.delivered))
        .collect();
    assert_eq!(ours, hub_delivered(&hub), "{order}");
    let v = two
        .delivery_isolation
        .clone()
        .expect("level 2's delivery verdict");
    assert_eq!(
        (v.level, v.from_s, v.baseline.seconds),
        (Some(2), 3, 3),
        "{order}"
    );
    // Every quiet delivery of level 2 is in one pass: the quiet tenants' share of its own 240.
    let f = two.fairness.as_ref().unwrap().delivery.as_ref().unwrap();
    let quiet: u64 = (f.by_tenant.iter())
        .filter(|t| t.tenant != "tenant0001")
        .map(|t| t.delivered)
        .sum();
    assert_eq!(
        v.baseline.attempts + v.surge.attempts,
        quiet,
        "{order}: {v:?}"
    );
    let table = std::fs::read_to_string(sc.dir.path().join("table.txt")).unwrap();
    let line = format!(
        "40/s (deliveries, level 2, against its baseline pass): {}",
        v.sentence
    );
    assert!(table.contains(&line), "{table}");
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_level_2_the_fifo_queue_delays_the_quiet_tenants_and_the_fair_queue_does_not() {
    let fifo = delivery_run(QueueOrder::Fifo).await;
    let fair = delivery_run(QueueOrder::Fair).await;
    eprintln!("{}\n{}", fifo.sentence, fair.sentence);
    // FIFO: a backlog growing by 120 deliveries a second for the surged pass's 3 s (4.5 s at
    // its end), which every tenant's deliveries wait behind; fair: a quiet delivery waits
    // for a few others at most.
    let [lo, _] = fifo.p99_increase_ci_pct.expect("FIFO's interval");
    assert!(lo > 0.0, "{fifo:?}");
    assert!(
        fifo.surge.p99_us >= 3 * fair.surge.p99_us,
        "FIFO {fifo:?}\nfair {fair:?}"
    );
    assert_eq!(fifo.within_noise, Some(false), "{fifo:?}");
    // Not the fair queue's `within_noise`: 3-second passes leave the bootstrap three seconds
    // to draw from in each, so one slow second on a busy machine stretches the interval past
    // any band (the time form's test, with 4-second windows, reads it).
}

#[test]
fn bad_levels_are_refused_in_one_line_naming_surge() {
    let dir = tempfile::tempdir().unwrap();
    for (surge, why) in [
        ("tenant0001x9@level0", "`level0` is not a level"),
        (
            "tenant0001x9@level3",
            "there is no level 3: the run has 2 level(s)",
        ),
        ("tenant0001x9@levelone", "`levelone` is not a level"),
    ] {
        let out = crate::util::bin(&["--rate", "20,40", "--surge", surge], dir.path());
        assert_exit(&out, 2);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!("invalid --surge `{surge}`: {why}")),
            "{err}"
        );
    }
    let out = crate::util::bin(
        &["--concurrency", "4,8", "--surge", "tenant0001x9@level2"],
        dir.path(),
    );
    assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("needs the open model (--rate)"), "{err}");
}
