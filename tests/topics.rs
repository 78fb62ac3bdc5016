//! topics.csv and tenants.csv against aggregate.csv and the hub's own per-topic counts.

use std::collections::BTreeMap;

use hubload_hub::FaultConfig;

use crate::util::{hub_with, run, TestHub};

type Rows = Vec<BTreeMap<String, String>>;

fn read_csv(path: &std::path::Path) -> Rows {
    let mut r = csv::Reader::from_path(path).unwrap();
    let head: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    r.records()
        .map(|rec| {
            head.iter()
                .cloned()
                .zip(rec.unwrap().iter().map(String::from))
                .collect()
        })
        .collect()
}

fn num(row: &BTreeMap<String, String>, col: &str) -> u64 {
    row[col]
        .parse()
        .unwrap_or_else(|_| panic!("{col}: {:?}", row[col]))
}

async fn run_with(hub: &TestHub, topics: &str, out: &std::path::Path) {
    run(&[
        "--hub-url",
        &hub.url,
        "--tenants",
        "3",
        "--topics",
        topics,
        "--concurrency",
        "1,4",
        "--requests",
        "300",
        "--out",
        out.to_str().unwrap(),
    ])
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_tenant_channel_topics_sum_to_the_aggregate_row_and_the_hubs_counts() {
    per_tenant_channel_topics_reconcile().await;
}

/// The same on one thread, as `--threads 1` runs (a current-thread runtime): there the
/// level's shared counters (per topic, the tickets, the started attempts) are added to
/// without atomic read-modify-writes, and must count exactly as well.
#[tokio::test]
async fn per_tenant_channel_topics_reconcile_on_a_current_thread_runtime() {
    per_tenant_channel_topics_reconcile().await;
}

async fn per_tenant_channel_topics_reconcile() {
    let hub = hub_with(FaultConfig {
        fail_503_every: Some(5),
        ..FaultConfig::default()
    })
    .await;
    let out = tempfile::tempdir().unwrap();
    run_with(&hub, "per-tenant-channel", out.path()).await;
    let topics = read_csv(&out.path().join("topics.csv"));
    let tenants = read_csv(&out.path().join("tenants.csv"));
    let aggregate = read_csv(&out.path().join("aggregate.csv"));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("summary.json")).unwrap())
            .unwrap();
    // 3 tenants × 4 channels (the default channels) per level, two levels.
    assert_eq!(topics.len(), 2 * 3 * 4);
    assert_eq!(tenants.len(), 2 * 3);
    for (li, level) in ["1", "4"].iter().enumerate() {
        let rows: Vec<_> = topics.iter().filter(|r| r["Level"] == *level).collect();
        assert_eq!(rows.len(), 12, "level {level}");
        let agg = aggregate
            .iter()
            .find(|r| r["Concurrency"] == *level)
            .unwrap();
        let sum = |col: &str| rows.iter().map(|r| num(r, col)).sum::<u64>();
        assert_eq!(sum("Attempts"), num(agg, "# Samples"), "level {level}");
        assert_eq!(sum("accepted"), num(agg, "Accepted"), "level {level}");
        assert_eq!(sum("http_503"), num(agg, "503"), "level {level}");
        // Every class of summary.json, exactly.
        for (class, n) in summary["levels"][li]["stats"]["counts"]
            .as_object()
            .unwrap()
        {
            assert_eq!(
                sum(class),
                n.as_u64().unwrap(),
                "level {level} class {class}"
            );
        }
        assert!(sum("http_503") > 0, "the fault hub answered some 503s");
        // tenants.csv is the same, rolled up: 3 tenants of 4 topics each.
        let trows: Vec<_> = tenants.iter().filter(|r| r["Level"] == *level).collect();
        assert!(trows.iter().all(|r| r["Topics"] == "4"));
        for col in ["Attempts", "accepted", "http_503"] {
            let t: u64 = trows.iter().map(|r| num(r, col)).sum();
            assert_eq!(t, sum(col), "tenants {level} {col}");
        }
        // A topic's max is at least its p99, which is at least its p50.
        for r in &rows {
            if num(r, "Attempts") > 0 {
                assert!(
                    num(r, "p50_us") <= num(r, "p99_us") && num(r, "p99_us") <= num(r, "max_us")
                );
            }
        }
    }
    // `hubload report` regenerates both files (and latency.csv) from summary.json alone.
    let files = ["topics.csv", "tenants.csv", "latency.csv"];
    let before: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(out.path().join(f)).unwrap())
        .collect();
    for f in files {
        std::fs::remove_file(out.path().join(f)).unwrap();
    }
    let o = crate::util::bin(&["report", "summary.json"], out.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for (f, b) in files.iter().zip(&before) {
        assert_eq!(
            &std::fs::read_to_string(out.path().join(f)).unwrap(),
            b,
            "{f}"
        );
    }
    // The hub's own per-topic count of accepted publishes, over both levels.
    let stats = hub.stats().await;
    let mut ours: BTreeMap<&str, u64> = BTreeMap::new();
    for r in &topics {
        *ours.entry(r["Topic"].as_str()).or_default() += num(r, "accepted");
    }
    for (name, n) in &ours {
        assert_eq!(stats.topics[*name].published, *n, "topic {name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_topic_is_one_row_per_level() {
    let hub = hub_with(FaultConfig::default()).await;
    let out = tempfile::tempdir().unwrap();
    run_with(&hub, "shared", out.path()).await;
    let topics = read_csv(&out.path().join("topics.csv"));
    assert_eq!(topics.len(), 2);
    for (r, level) in topics.iter().zip(["1", "4"]) {
        assert_eq!(r["Level"], level);
        assert_eq!(r["Tenant"], "shared");
        assert_eq!(num(r, "Attempts"), 300);
        assert_eq!(num(r, "accepted"), 300);
    }
    let stats = hub.stats().await;
    assert_eq!(stats.topics[&topics[0]["Topic"]].published, 600);
}
