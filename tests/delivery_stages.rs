//! The hub's `Hub-Timing` on every delivery, read by hubload's own subscribers: each level's
//! delivery section splits the end-to-end latency into the publish's `hub` and `broker`, the
//! `queue` at the hub or broker, and the `rest`, one sample per delivery the hub counted
//! delivered; no stage of a delivery is longer than its end-to-end latency.

use hubload::report::model::delivery_report::DeliveryReport;
use hubload::report::model::LevelReport;
use hubload_hub::{Broker, FaultConfig, HubConfig};
use hubload_servicebus::emulator::EmulatorConfig;

use crate::delivery::sum;
use crate::util::{count, line, settled, Scenario, SMALL_RUN};

/// Every stage of `l`'s deliveries: one sample per delivery, none above the end-to-end
/// latency at any quantile the report gives (a stage is part of each delivery's end-to-end,
/// so its quantiles are at most the end-to-end's).
fn stages_within_e2e(l: &LevelReport) -> &DeliveryReport {
    let d = l.delivery.as_ref().expect("a delivery section");
    let delivered = d.counts.delivered;
    assert!(delivered > 0, "level {}", l.label);
    let names: Vec<&str> = d.stages.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        ["broker", "hub", "queue", "rest"],
        "level {}",
        l.label
    );
    for (name, s) in &d.stages {
        assert_eq!(s.count, delivered, "level {} stage {name}", l.label);
        let e = &d.e2e_us;
        assert!(
            s.p50_us <= e.p50 && s.p99_us <= e.p99 && s.max_us <= e.max,
            "level {} stage {name}: {s:?} above the end-to-end {e:?}",
            l.label
        );
    }
    assert_eq!(d.stages_malformed, 0);
    d
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_memory_hubs_deliveries_carry_the_publishs_stages() {
    // Its injected broker latency is the publish's `broker` stage, on the answer and on each
    // delivery.
    let sc = Scenario::start_with(HubConfig {
        faults: FaultConfig {
            broker_latency_ms: 1,
            ..FaultConfig::default()
        },
        ..HubConfig::default()
    })
    .await;
    let mut flags = line(SMALL_RUN);
    flags.extend(["--subscribers", "2"]);
    let o = sc.run(&flags).await;
    let hub = settled(&sc.hub).await;
    let r = &o.report;
    for l in &r.levels {
        let d = stages_within_e2e(l);
        assert_eq!(d.counts.delivered, 2 * count(l, "accepted"));
        let b = &d.stages["broker"];
        assert_eq!((b.p50_us, b.max_us), (1_000, 1_000), "level {}", l.label);
    }
    // Exactly the deliveries the hub counted.
    let delivered = sum(r, |c| c.delivered);
    assert_eq!(hub.distribution.delivered, delivered);
    let total = r.total.as_ref().unwrap().delivery.as_ref().unwrap();
    assert_eq!(total.stages["queue"].count, hub.distribution.delivered);
    // The table's block: per level and TOTAL, the four stages with the exact counts.
    let table = std::fs::read_to_string(sc.dir.path().join("table.txt")).unwrap();
    let block = table
        .split("Delivery stages (Hub-Timing")
        .nth(1)
        .expect("the block");
    // Up to the next block (the publishes' Server-Timing).
    let block = block.split("\nWhere the time went").next().unwrap();
    let rows: Vec<(String, String, String)> = block
        .lines()
        .skip(3)
        .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .filter(|c| c.len() == 6)
        .map(|c| (c[0].clone(), c[1].clone(), c[2].clone()))
        .collect();
    let mut want = Vec::new();
    for l in r.levels.iter().chain(r.total.as_ref()) {
        let n = l.delivery.as_ref().unwrap().counts.delivered.to_string();
        for stage in ["hub", "broker", "queue", "rest"] {
            want.push((l.label.clone(), stage.to_string(), n.clone()));
        }
    }
    assert_eq!(rows, want, "{table}");
    let html = std::fs::read_to_string(sc.dir.path().join("report.html")).unwrap();
    assert!(html.contains("id=\"delivery-stages\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_broker_backed_hubs_deliveries_carry_the_sends_own_timing() {
    let sc = Scenario::servicebus(EmulatorConfig::default()).await;
    let broker = Broker::connect(sc.emulator().connection_string_parsed(), None)
        .await
        .unwrap();
    assert!(sc.hub.state.set_broker(broker));
    let mut flags = line(SMALL_RUN);
    flags.extend(["--target", "websub", "--subscribers", "1"]);
    let o = sc.run(&flags).await;
    let r = &o.report;
    let mut delivered = 0;
    for l in &r.levels {
        let d = stages_within_e2e(l);
        assert_eq!(
            d.counts.delivered,
            count(l, "accepted"),
            "level {}",
            l.label
        );
        // One subscriber per topic: each publish's send is one delivery's `broker`, so the
        // two histograms are the same samples.
        assert_eq!(
            d.stages["broker"], l.derived.server_timing["broker"],
            "level {}",
            l.label
        );
        delivered += d.counts.delivered;
    }
    // Exactly the deliveries the hub completed at the broker.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    let s = loop {
        let s = sc.hub_stats().await;
        let done = s.broker.as_ref().is_some_and(|b| b.completes >= delivered);
        if done || tokio::time::Instant::now() >= deadline {
            break s;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(s.distribution.delivered, delivered);
    assert_eq!(s.broker.unwrap().completes, delivered);
}
