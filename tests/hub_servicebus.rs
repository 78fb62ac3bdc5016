//! The reference hub in broker mode (`--servicebus`) against the emulator, loaded by hubload
//! with its own subscribers: every accepted publish is one send the emulator counted and
//! one delivery hubload's subscriber received, with the hub's stats in between, exactly, per
//! level; and side by side against the same hub and emulator, both paths count every send
//! (which is faster is bench/hub-vs-broker.sh's question).

use hubload_hub::Broker;
use hubload_servicebus::emulator::EmulatorConfig;

use crate::util::{count, line, Scenario, SMALL_RUN};

/// A hub and an emulator, the hub in broker mode on the emulator.
async fn broker_scenario() -> Scenario {
    let sc = Scenario::servicebus(EmulatorConfig::default()).await;
    let broker = Broker::connect(sc.emulator().connection_string_parsed(), None)
        .await
        .unwrap();
    assert!(sc.hub.state.set_broker(broker));
    sc
}

/// The hub's stats once its broker counts stop moving toward `completes` (bounded wait).
async fn broker_settled(sc: &Scenario, completes: u64) -> hubload_hub::StatsSnapshot {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let s = sc.hub_stats().await;
        let b = s.broker.unwrap();
        if b.completes >= completes || tokio::time::Instant::now() >= deadline {
            return s;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Every hub publish in a level includes the broker send the hub timed inside it, so the hub's
/// latency percentiles (p50, p99, max) are at least the broker's (both nearest-rank over the
/// same publishes in the same histogram layout). Holds however busy the machine is.
fn assert_covers(label: &str, hub: [u64; 3], broker: [u64; 3]) {
    for ((name, h), b) in ["p50", "p99", "max"].iter().zip(hub).zip(broker) {
        assert!(
            h >= b && b > 0,
            "level {label}: hub {name} {h} µs below its own broker time {b} µs"
        );
    }
}

/// [`assert_covers`] for one hub level of a summary.
macro_rules! hub_latency_covers_its_broker_time {
    ($level:expr) => {{
        let (l, st) = ($level, &$level.derived.server_timing["broker"]);
        let h = &l.derived.accepted_latency_us;
        assert_covers(
            &l.label,
            [h.p50, h.p99, h.max],
            [st.p50_us, st.p99_us, st.max_us],
        );
    }};
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_accepted_publish_is_sent_once_and_delivered_once() {
    let sc = broker_scenario().await;
    let mut flags = line(SMALL_RUN);
    flags.extend(["--target", "websub", "--subscribers", "1"]);
    let o = sc.run(&flags).await;
    let r = &o.report;
    let topics = r.topics.len() as u64;
    let p = r.subscription.as_ref().expect("a subscription section");
    if (p.verified, p.denied, p.unverified) != (topics, 0, 0) {
        // Which path failed: the broker receiver's attach (tried again, then given up and
        // denied) or the verification GET (no answer, tried again), as the hub counted it.
        let b = sc.hub_stats().await.broker.unwrap();
        panic!(
            "{} of {topics} subscriptions verified ({p:?}). The hub: {} receiver attaches \
             failed, {} subscribes given up and denied (no receiver attached in the \
             verification window), {} verification GETs without an answer tried again, {} \
             receive loops running",
            p.verified,
            b.receiver_open_failures,
            b.subscribes_failed,
            b.verify_retries,
            b.subscriptions
        );
    }
    let mut accepted_all = 0;
    let mut delivered_all = 0;
    for l in &r.levels {
        let accepted = count(l, "accepted");
        assert_eq!(accepted, 60, "level {}", l.label);
        let c = &l.delivery.as_ref().unwrap().counts;
        assert_eq!(c.delivered, accepted, "level {}: {c:?}", l.label);
        assert_eq!(
            (
                c.lost,
                c.duplicates,
                c.unexpected,
                c.bad_signature,
                c.body_mismatch
            ),
            (0, 0, 0, 0, 0),
            "level {}: {c:?}",
            l.label
        );
        // One `broker` metric per accepted publish: the hub's real send time.
        assert_eq!(
            l.derived.server_timing["broker"].count, accepted,
            "level {}",
            l.label
        );
        assert_eq!(
            l.derived.server_timing["hub"].count, accepted,
            "level {}",
            l.label
        );
        accepted_all += accepted;
        delivered_all += c.delivered;
    }
    // The hub in between: its publishes, its sends, its completions.
    let s = broker_settled(&sc, delivered_all).await;
    let b = s.broker.unwrap();
    assert_eq!(s.publish.accepted, accepted_all);
    assert_eq!(
        (b.sends.accepted, b.sends.total()),
        (accepted_all, accepted_all)
    );
    assert_eq!(
        (b.receives, b.completes, b.abandons, b.dead_letters),
        (delivered_all, delivered_all, 0, 0)
    );
    assert_eq!(s.distribution.delivered, delivered_all);
    // The broker: every send counted, one subscription per subscriber, each message
    // enqueued once and completed once.
    let c = sc.emulator_counts();
    assert_eq!(c.accepted, accepted_all);
    let subs: Vec<_> = c
        .entities
        .iter()
        .filter(|(k, _)| k.contains("/Subscriptions/hub-"))
        .collect();
    assert_eq!(subs.len() as u64, topics);
    let total = |f: fn(&hubload_servicebus::emulator::store::StoreStats) -> u64| {
        subs.iter().map(|(_, s)| f(s)).sum::<u64>()
    };
    assert_eq!(total(|s| s.enqueued), accepted_all);
    assert_eq!(total(|s| s.completed), delivered_all);
    assert_eq!(total(|s| s.redelivered), 0);
    assert_eq!(total(|s| s.active), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn side_by_side_counts_both_paths_at_every_level() {
    let sc = broker_scenario().await;
    let mut flags = line(SMALL_RUN);
    flags.extend(["--target", "websub,servicebus"]);
    let o = sc.run(&flags).await;
    assert!(!o.thresholds_failed);
    let hub = sc.summary("websub");
    let sb = sc.summary("servicebus");
    assert_eq!(hub.levels.len(), 2);
    for (h, b) in hub.levels.iter().zip(&sb.levels) {
        assert_eq!(h.label, b.label);
        let accepted = count(h, "accepted");
        assert_eq!(accepted, 60);
        assert_eq!(count(b, "accepted"), 60);
        assert_eq!(
            h.derived.server_timing["broker"].count, accepted,
            "level {}",
            h.label
        );
        // The hub's publish is a client → hub → broker chain: it covers its broker time.
        hub_latency_covers_its_broker_time!(h);
    }
    // The emulator counted both paths' sends: the hub's and hubload's own.
    let s = sc.hub_stats().await;
    let c = sc.emulator_counts();
    assert_eq!(s.broker.unwrap().sends.accepted, 120);
    assert_eq!(c.accepted, 240);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hub_servicebus_runs_the_embedded_hub_on_the_embedded_emulator() {
    // The scenario's own hub and emulator must see nothing: the run brings its own.
    let sc = Scenario::servicebus(EmulatorConfig::default()).await;
    let mut flags = line(SMALL_RUN);
    flags.extend(["--hub-servicebus", "--subscribers", "1"]);
    let o = sc.run_embedded(&flags).await;
    for l in &o.report.levels {
        let accepted = count(l, "accepted");
        assert_eq!(accepted, 60, "level {}", l.label);
        assert_eq!(
            l.derived.server_timing["broker"].count, accepted,
            "level {}",
            l.label
        );
        let c = &l.delivery.as_ref().unwrap().counts;
        assert_eq!(
            (c.delivered, c.lost, c.duplicates),
            (accepted, 0, 0),
            "{c:?}"
        );
    }
    // Side by side on the one embedded emulator. Every hub publish waits for its broker send,
    // so its latency is at least the broker time its `Server-Timing` reports, and so is each
    // percentile; which path is faster is a benchmark (bench/hub-vs-broker.sh), not a test.
    let mut flags = line(SMALL_RUN);
    flags.extend(["--hub-servicebus", "--target", "websub,servicebus"]);
    sc.run_embedded(&flags).await;
    let hub = sc.summary("websub");
    let sb = sc.summary("servicebus");
    for (h, b) in hub.levels.iter().zip(&sb.levels) {
        assert_eq!(h.label, b.label);
        assert_eq!(
            h.derived.server_timing["broker"].count,
            count(h, "accepted")
        );
        assert_eq!(count(b, "accepted"), 60, "level {}", b.label);
        hub_latency_covers_its_broker_time!(h);
    }
    // Its counts are both paths': the Service Bus report leaves them out.
    assert!(sb.servicebus.as_ref().unwrap().emulator.is_none());
    assert_eq!(sc.hub_stats().await.requests, 0);
    assert_eq!(sc.emulator_counts().connections, 0);
}

/// At 1, 8 and 32 in flight, with the real embedded hub, emulator and generator in one
/// process: both paths account for every send, and the hub's latency covers its broker time.
/// Which median is lower is measured by bench/hub-vs-broker.sh.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn side_by_side_counts_every_send_up_to_32_in_flight() {
    let sc = Scenario::servicebus(EmulatorConfig::default()).await;
    let flags = line(
        "--tenants 2 --sps 2 --users 3 --concurrency 1,8,32 --requests 600 \
         --hub-servicebus --target websub,servicebus",
    );
    sc.run_embedded(&flags).await;
    let hub = sc.summary("websub");
    let sb = sc.summary("servicebus");
    let labels: Vec<&str> = hub.levels.iter().map(|l| l.label.as_str()).collect();
    assert_eq!(labels, ["1", "8", "32"]);
    for (h, b) in hub.levels.iter().zip(&sb.levels) {
        assert_eq!(h.label, b.label);
        assert_eq!((count(h, "accepted"), count(b, "accepted")), (600, 600));
        assert_eq!(
            h.derived.server_timing["broker"].count, 600,
            "level {}",
            h.label
        );
        hub_latency_covers_its_broker_time!(h);
    }
}
