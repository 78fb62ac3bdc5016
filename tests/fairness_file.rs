//! fairness.jsonl (and fairness.csv): every tenant's fairness row outside summary.json, appended
//! as each level ends, so summary.json stays the same size whatever the tenant count, while the
//! rows still reconcile with the hub's own counts and `hubload report` writes the same files.

use std::collections::BTreeMap;
use std::path::Path;

use hubload_hub::FaultConfig;

use crate::fairness::hub_accepted;
use crate::util::{bin, hub_with, jsonl_lines, read_summary, run};

/// fairness.jsonl's complete lines, parsed.
pub(crate) fn fairness_lines(dir: &Path) -> Vec<serde_json::Value> {
    jsonl_lines(dir, "fairness.jsonl")
}

/// One closed level of 2,000 publishes over `tenants` tenants of one topic each, against a
/// fresh hub: summary.json's size (less its config), its fairness figures kept, and the hub's
/// per-tenant counts.
async fn run_over(tenants: u32, out: &Path) -> (usize, BTreeMap<String, u64>) {
    let (size, hub) = run_with(tenants, &["--requests", "2000"], out).await;
    (size, hub_accepted(&hub.topics))
}

/// [`run_over`] with `flags`: the size, and the hub's own counts (topics with a publish).
async fn run_with(tenants: u32, flags: &[&str], out: &Path) -> (usize, hubload_hub::StatsSnapshot) {
    let hub = hub_with(FaultConfig::default()).await;
    let tenants = tenants.to_string();
    let mut args = vec![
        "--hub-url",
        &hub.url,
        "--tenants",
        &tenants,
        "--topics",
        "per-tenant",
        "--concurrency",
        "4",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(flags);
    run(&args).await;
    let mut s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["schema_version"], 5);
    assert_eq!(s["fairness_file"], "fairness.jsonl");
    for row in s["levels"].as_array().unwrap().iter().chain([&s["total"]]) {
        let f = &row["fairness"];
        assert!(f["jain_index"].is_f64(), "{f}");
        assert!(f.get("by_tenant").is_none());
        if let Some(d) = f.get("delivery") {
            assert!(d["median_p99_us"].is_u64(), "{d}");
            assert!(d.get("by_tenant").is_none());
        }
    }
    // Nothing that grows with the topics or subscribers: the names are in topic-names.jsonl,
    // each subscriber's counts (`delivery.per_subscriber`) in subscribers.jsonl.
    for row in s["levels"].as_array().unwrap().iter().chain([&s["total"]]) {
        if let Some(d) = row.get("delivery") {
            assert!(d.get("per_subscriber").is_none(), "{d}");
        }
    }
    let obj = s.as_object_mut().unwrap();
    assert!(obj.get("topics").is_none() && obj.get("topic_tenants").is_none());
    obj.remove("config").unwrap();
    let mut stats = crate::util::settled(&hub).await;
    stats.topics.retain(|_, t| t.published > 0);
    (serde_json::to_vec_pretty(&s).unwrap().len(), stats)
}

/// With subscribers, 200 tenants against 2: summary.json keeps the same size too (inline,
/// each level's list of every tenant's deliveries would take ~150 B a tenant, twice with
/// TOTAL's); fairness.jsonl's lines hold each tenant's deliveries, each the hub's own count,
/// and read back they are the figures' rows again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_subscribers_summary_json_does_not_grow_with_the_tenants() {
    let dir = tempfile::tempdir().unwrap();
    let flags = ["--requests", "400", "--subscribers", "1"];
    let (few, _) = run_with(2, &flags, &dir.path().join("few")).await;
    let out = dir.path().join("many");
    let (many, hub) = run_with(200, &flags, &out).await;
    assert!(
        many.abs_diff(few) < 4 * 1024,
        "{many} B at 200 tenants, {few} B at 2"
    );
    let lines = fairness_lines(&out);
    assert_eq!(lines.len(), 2, "the level and TOTAL");
    let ours: BTreeMap<String, u64> = lines[0]["delivery"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let name = t["tenant"].as_str().unwrap().to_string();
            (name, t["delivered"].as_u64().unwrap())
        })
        .collect();
    let hub_delivered: BTreeMap<String, u64> = crate::fair_delivery::hub_delivered(&hub)
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect();
    assert_eq!(ours, hub_delivered);
    assert_eq!(ours.values().sum::<u64>(), 400);
    assert!(ours.len() > 100, "{} tenants with deliveries", ours.len());
    assert_eq!(
        lines[1]["delivery"], lines[0]["delivery"],
        "one level: TOTAL is it"
    );
    let r = read_summary(&out);
    let d = r.levels[0].fairness.as_ref().unwrap();
    let d = d.delivery.as_ref().unwrap();
    assert_eq!((d.tenants, d.by_tenant.len()), (ours.len(), ours.len()));
    let back: BTreeMap<String, u64> = (d.by_tenant.iter())
        .map(|t| (t.tenant.clone(), t.delivered))
        .collect();
    assert_eq!(back, ours);
    // Each subscriber's counts are in subscribers.jsonl (the level's line and TOTAL's), and
    // read back they add up to the deliveries the hub made.
    let subscribers = jsonl_lines(&out, "subscribers.jsonl");
    assert_eq!(subscribers.len(), 2, "the level and TOTAL");
    assert_eq!(subscribers[1]["level"], serde_json::Value::Null);
    for l in r.levels.iter().chain(&r.total) {
        let per = &l.delivery.as_ref().unwrap().per_subscriber;
        assert_eq!(per.len(), 200, "{}", l.label);
        assert_eq!(per.values().map(|c| c.delivered).sum::<u64>(), 400);
    }
}

/// 2,000 tenants against 2: summary.json keeps the same size (inline, the 2,000-tenant level's
/// list of every tenant would take ~300 B for each of its 1,000 and more tenants with
/// attempts, twice with TOTAL's); fairness.jsonl holds the level's line and TOTAL's, one row
/// per tenant with attempts, each tenant's attempts the hub's own count; fairness.csv has the
/// same rows, and `hubload report` writes it again byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summary_json_does_not_grow_with_the_tenants() {
    let dir = tempfile::tempdir().unwrap();
    let (few, _) = run_over(2, &dir.path().join("few")).await;
    let out = dir.path().join("many");
    let (many, hub) = run_over(2_000, &out).await;
    assert!(
        many.abs_diff(few) < 4 * 1024,
        "{many} B at 2,000 tenants, {few} B at 2"
    );
    let lines = fairness_lines(&out);
    assert_eq!(lines.len(), 2, "the level and TOTAL");
    assert_eq!(
        (&lines[0]["level"], &lines[0]["label"]),
        (&0.into(), &"4".into())
    );
    assert_eq!(
        (&lines[1]["level"], &lines[1]["label"]),
        (&serde_json::Value::Null, &"TOTAL".into())
    );
    let ours: BTreeMap<String, u64> = lines[0]["tenants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let name = t["tenant"].as_str().unwrap().to_string();
            (name, t["attempts"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(ours, hub);
    assert_eq!(ours.values().sum::<u64>(), 2000);
    assert!(ours.len() > 1000, "{} tenants with attempts", ours.len());
    assert_eq!(
        lines[1]["tenants"], lines[0]["tenants"],
        "one level: TOTAL is it"
    );
    // Read back, the figures have their tenants again, as one process had them.
    let r = read_summary(&out);
    let f = r.levels[0].fairness.as_ref().unwrap();
    assert_eq!(f.tenants, ours.len());
    assert_eq!(f.by_tenant.len(), ours.len());
    let total = r.total.as_ref().unwrap().fairness.as_ref().unwrap();
    assert_eq!(total.by_tenant, f.by_tenant);
    let appended = std::fs::read_to_string(out.join("fairness.csv")).unwrap();
    assert_eq!(appended.lines().count(), 1 + ours.len());
    let o = bin(&["report", "summary.json"], &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        std::fs::read_to_string(out.join("fairness.csv")).unwrap(),
        appended
    );
}

/// A summary.json from before fairness.jsonl (its tenants inline) still loads with them, and
/// a summary naming a fairness file that is not there is one error naming it, exit 2.
#[test]
fn inline_tenants_still_load_and_a_missing_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/shards-v1");
    let v1 = std::fs::read(fixtures.join("merged-summary.json")).unwrap();
    let mut s: serde_json::Value = serde_json::from_slice(&v1).unwrap();
    // A version 2 summary: the list of every tenant inline in the figures.
    let share = |tenant: &str, attempts: u64| {
        serde_json::json!({"tenant": tenant, "attempts": attempts, "good": attempts,
            "offered_share": 0.5, "achieved_share": 0.5, "error_pct": 0.0,
            "p50_us": 100, "p99_us": 200, "max_us": 300})
    };
    s["levels"][0]["fairness"] = serde_json::json!({"tenants": 2, "jain_index": 1.0,
        "median_p99_us": 200, "error_spread_pp": 0.0, "median_error_pct": 0.0,
        "worst_p99": [share("a", 5)], "worst_errors": [],
        "by_tenant": [share("a", 5), share("b", 5)]});
    // And a summary with the tenants' delivery rows inline, as they were written before
    // fairness.jsonl took them.
    let owed = |tenant: &str| {
        serde_json::json!({"tenant": tenant, "expected": 5, "delivered": 5, "lost": 0,
            "loss_pct": 0.0, "p50_us": 100, "p99_us": 200, "max_us": 300})
    };
    s["levels"][0]["fairness"]["delivery"] = serde_json::json!({"tenants": 2,
        "median_p99_us": 200, "loss_spread_pp": 0.0, "median_loss_pct": 0.0,
        "worst_p99": [owed("a")], "worst_loss": [], "by_tenant": [owed("a"), owed("b")]});
    std::fs::write(dir.path().join("summary.json"), s.to_string()).unwrap();
    let r = read_summary(dir.path());
    let names: Vec<&str> = r.levels[0]
        .fairness
        .as_ref()
        .unwrap()
        .by_tenant
        .iter()
        .map(|t| t.tenant.as_str())
        .collect();
    assert_eq!(names, ["a", "b"]);
    let d = r.levels[0].fairness.as_ref().unwrap().delivery.as_ref();
    let delivered: Vec<(&str, u64)> = (d.unwrap().by_tenant.iter())
        .map(|t| (t.tenant.as_str(), t.delivered))
        .collect();
    assert_eq!(delivered, [("a", 5), ("b", 5)]);
    let o = bin(&["report", "summary.json"], dir.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(dir.path().join("fairness.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");

    s["fairness_file"] = "fairness.jsonl".into();
    std::fs::write(dir.path().join("summary.json"), s.to_string()).unwrap();
    let o = bin(&["report", "summary.json"], dir.path());
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("fairness.jsonl (summary.json's fairness_file)"),
        "{err}"
    );
}
