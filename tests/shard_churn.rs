//! Churn in a sharded run, merged: two hubload shards (the Indexed Job contract) against one
//! reference hub, each churning its own subscribers (or topics); `hubload merge` adds the
//! shards' churn counts exactly, and the merged delivery reconciles with the hub's own counts.

use hubload::report::document::Report;
use hubload_hub::HubConfig;

use crate::delivery::sum;
use crate::shards::{merge_logs, run_shards};
use crate::util::{count, read_summary, settled, TestHub};

const ARGS: &[&str] = &[
    "--tenants",
    "4",
    "--sps",
    "2",
    "--users",
    "3",
    "--seed",
    "7",
    "--rate",
    "200",
    "--duration",
    "2s",
    "--quiet",
];

/// Run two shards with `extra` against `hub`; the merged report and each shard's.
async fn two_shards(hub: &TestHub, id: &str, extra: &[&str]) -> (Report, Vec<Report>) {
    let dir = tempfile::tempdir().unwrap();
    let mut args = ARGS.to_vec();
    args.extend(extra);
    args.extend(["--hub-url", &hub.url]);
    let logs = run_shards(dir.path(), 2, id, &args).await;
    let merged = merge_logs(dir.path(), &logs);
    let shards = (0..2)
        .map(|i| read_summary(&dir.path().join(format!("shard{i}"))))
        .collect();
    (merged, shards)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shards_with_subscriber_churn_merge_to_the_sum_and_to_the_hubs_count() {
    let hub = TestHub::start(HubConfig::default()).await;
    let (merged, shards) = two_shards(
        &hub,
        "churn",
        &["--subscribers", "3", "--subscriber-churn", "20"],
    )
    .await;
    let stats = settled(&hub).await;
    let churn = |r: &Report| {
        let d = r.levels[0].delivery.as_ref().expect("a delivery section");
        d.churn.clone().expect("a churn section")
    };
    let parts: Vec<_> = shards.iter().map(churn).collect();
    let m = churn(&merged);
    eprintln!("merged {m:?}\nshards {parts:?}");
    // Each shard churned its own subscribers (10 a second each).
    assert!(parts.iter().all(|p| p.stats.resubscribed > 0), "{parts:?}");
    let add = |f: fn(&hubload::report::model::delivery_report::ChurnReport) -> u64| {
        parts.iter().map(f).sum::<u64>()
    };
    assert_eq!(m.stats.unsubscribed, add(|c| c.stats.unsubscribed));
    assert_eq!(m.stats.resubscribed, add(|c| c.stats.resubscribed));
    assert_eq!(m.stats.failed, add(|c| c.stats.failed));
    assert_eq!(m.stats.skipped, add(|c| c.stats.skipped));
    assert_eq!(
        m.stats.after_unsubscribe,
        add(|c| c.stats.after_unsubscribe)
    );
    assert_eq!(m.stats.ambiguous, add(|c| c.stats.ambiguous));
    assert_eq!(
        m.derived.first_deliveries,
        add(|c| c.derived.first_deliveries)
    );
    // The histograms themselves are in summary.json and add exactly.
    let samples = |c: &hubload::report::model::delivery_report::ChurnReport| {
        c.stats.time_to_first_delivery.len()
    };
    assert_eq!(samples(&m), add(samples));
    assert_eq!(samples(&m), m.derived.first_deliveries);
    assert_eq!(m.stats.failed, 0, "{m:?}");
    // The merged delivery is the hub's: every delivery it made, one hubload received.
    let c = &merged.levels[0].delivery.as_ref().unwrap().counts;
    assert_eq!(
        (
            c.lost,
            c.duplicates,
            c.unexpected,
            c.bad_signature,
            c.body_mismatch
        ),
        (0, 0, 0, 0, 0),
        "{c:?}"
    );
    let dist = &stats.distribution;
    assert_eq!((dist.failed, dist.dropped), (0, 0), "{dist:?}");
    assert_eq!(dist.delivered, sum(&merged, |c| c.received), "{dist:?}");
    assert_eq!(dist.delivered, sum(&merged, |c| c.delivered), "{dist:?}");
    let shard_received: u64 = shards.iter().map(|s| sum(s, |c| c.received)).sum();
    assert_eq!(sum(&merged, |c| c.received), shard_received);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shards_with_topic_churn_merge_to_the_sum_and_to_the_hubs_counts() {
    let hub = TestHub::start(HubConfig::default()).await;
    let (merged, shards) = two_shards(&hub, "topic-churn", &["--topic-churn", "10"]).await;
    let stats = settled(&hub).await;
    let tc = |r: &Report| {
        r.levels[0]
            .topic_churn
            .clone()
            .expect("a topic_churn section")
    };
    let parts: Vec<_> = shards.iter().map(tc).collect();
    let m = tc(&merged);
    eprintln!("merged {m:?}\nshards {parts:?}");
    assert!(parts.iter().all(|p| p.cycles > 0), "{parts:?}");
    let mut want = hubload::stats::TopicChurnStats::default();
    for p in &parts {
        want += p;
    }
    assert_eq!(m, want);
    assert_eq!(m.failed, 0, "{m:?}");
    // The hub's own counts equal the merged run's.
    let l = &merged.levels[0];
    assert_eq!(count(l, "expected_refusal"), m.expected_refusals);
    assert_eq!(count(l, "denied"), 0);
    assert_eq!(
        stats.publish.denied, m.expected_refusals,
        "{:?}",
        stats.publish
    );
    assert_eq!(stats.publish.accepted, count(l, "accepted"));
    assert_eq!(stats.deregister.accepted, m.deregistered);
    let initial = merged.registration.as_ref().unwrap().accepted;
    assert_eq!(stats.register.accepted, initial + m.reregistered);
    assert_eq!(l.derived.error_pct, 0.0);
}
