//! topics.jsonl (and topics.csv, tenants.csv): each level's per-topic rows outside summary.json,
//! appended as the level ends, so summary.json stays the same size whatever the topic count, a
//! signal loses no level's topics, and summaries with inline topics still render.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use hubload::report::document::Report;
use hubload::result::Class;
use hubload_hub::FaultConfig;

use crate::fairness_file::fairness_lines;
use crate::util::{bin, bin_child, hub_with, jsonl_lines, read_summary, run, SERIAL};

/// summary.json parsed as a value.
fn summary_value(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap()
}

/// topics.jsonl's complete lines, parsed.
fn topic_lines(dir: &Path) -> Vec<serde_json::Value> {
    jsonl_lines(dir, "topics.jsonl")
}

/// One closed level of 2,000 publishes over `topics` topics (4 per tenant), against a fresh
/// hub: summary.json's size (less its config and fairness figures, whose worst tenants' names
/// differ), and the hub's counts.
async fn run_over(topics: u32, out: &Path) -> (usize, hubload_hub::StatsSnapshot) {
    let hub = hub_with(FaultConfig::default()).await;
    let tenants = (topics / 4).to_string();
    run(&[
        "--hub-url",
        &hub.url,
        "--tenants",
        &tenants,
        "--topics",
        "per-tenant-channel",
        "--concurrency",
        "4",
        "--requests",
        "2000",
        "--out",
        out.to_str().unwrap(),
    ])
    .await;
    let mut s = summary_value(out);
    assert_eq!(read_summary(out).topics.len(), topics as usize);
    assert_eq!(s["schema_version"], 5);
    assert_eq!(s["topics_file"], "topics.jsonl");
    assert_eq!(s["topic_names_file"], "topic-names.jsonl");
    // No per-topic row or count in any level, nor in TOTAL.
    for row in s["levels"].as_array().unwrap().iter().chain([&s["total"]]) {
        assert!(row.get("topics").is_none() && row.get("topic_attempts").is_none());
        let stats = &row["stats"];
        assert!(stats.get("topics").is_none() && stats.get("topic_attempts").is_none());
        assert!(stats["counts"]["accepted"].as_u64().unwrap() > 0);
    }
    for row in s["levels"].as_array_mut().unwrap() {
        row.as_object_mut().unwrap().remove("fairness").unwrap();
    }
    s["total"]
        .as_object_mut()
        .unwrap()
        .remove("fairness")
        .unwrap();
    let obj = s.as_object_mut().unwrap();
    assert!(obj.get("topics").is_none() && obj.get("topic_tenants").is_none());
    obj.remove("config").unwrap();
    (
        serde_json::to_vec_pretty(&s).unwrap().len(),
        hub.stats().await,
    )
}

/// 5,000 topics against 8: summary.json keeps its size (inline, the names would take ~40 B a
/// topic, and the 5,000-topic level's rows ~100 B for each of its 1,000 and more topics with
/// attempts); the names are in topic-names.jsonl, the rows in topics.jsonl, one per topic with
/// attempts, each topic's attempts the hub's own count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summary_json_does_not_grow_with_the_topics() {
    let dir = tempfile::tempdir().unwrap();
    let (few, _) = run_over(8, &dir.path().join("few")).await;
    let many_dir = dir.path().join("many");
    let (many, hub) = run_over(5_000, &many_dir).await;
    assert!(
        many.abs_diff(few) < 4 * 1024,
        "{many} B at 5,000 topics, {few} B at 8"
    );
    let lines = topic_lines(&many_dir);
    assert_eq!(lines.len(), 1);
    let names = read_summary(&many_dir).topics;
    let ours: BTreeMap<String, u64> = lines[0]["topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let name = &names[t["topic"].as_u64().unwrap() as usize];
            (name.to_string(), t["attempts"].as_u64().unwrap())
        })
        .collect();
    let theirs: BTreeMap<String, u64> = hub
        .topics
        .iter()
        .filter(|(_, t)| t.published > 0)
        .map(|(n, t)| (n.clone(), t.published))
        .collect();
    assert_eq!(ours, theirs);
    assert_eq!(ours.values().sum::<u64>(), 2000);
    assert!(ours.len() > 1000, "{} topics with attempts", ours.len());
}

/// SIGINT once summary.json lists two of three levels, at 4,000 topics (1,000 tenants × 4
/// channels; most topics without an attempt in a level): at every moment the run wrote,
/// topics.jsonl had a line for each level summary.json listed; after the signal both list the
/// same levels, each level's topic rows add up to its row's counts (so no level's table kept
/// an earlier level's attempts), all of them to the hub's own per-topic counts, and the
/// appended topics.csv and tenants.csv are what `hubload report` writes from them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_after_two_levels_loses_no_levels_topics() {
    let _turn = SERIAL.lock().await;
    let hub = hub_with(FaultConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let mut child = bin_child(
        &[
            "--hub-url",
            &hub.url,
            "--tenants",
            "1000",
            "--plan",
            "1,1s;2,1s;3,60s",
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ],
        dir.path(),
        Stdio::null(),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let listed = std::fs::read(out.join("summary.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<Report>(&b).ok())
            .map_or(0, |r| r.levels.len());
        // Read after summary.json: the lines were on disk before it was written.
        assert!(topic_lines(&out).len() >= listed, "{listed} levels listed");
        assert!(
            fairness_lines(&out).len() >= listed,
            "{listed} levels listed"
        );
        if listed >= 2 {
            break;
        }
        assert!(Instant::now() < deadline, "no two levels in 60 s");
        assert!(child.try_wait().unwrap().is_none(), "the run ended first");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let ok = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    let code = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.code();
        }
        assert!(Instant::now() < deadline, "hubload did not exit");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert_eq!(code, Some(130));
    let r = read_summary(&out);
    assert!(r.partial);
    let lines = topic_lines(&out);
    // Two levels, or three with the one the signal cut short.
    assert!(matches!(r.levels.len(), 2 | 3), "{} levels", r.levels.len());
    assert_eq!(lines.len(), r.levels.len());
    let mut accepted = vec![0u64; r.topics.len()];
    let mut cancelled = vec![0u64; r.topics.len()];
    for (i, (l, line)) in r.levels.iter().zip(&lines).enumerate() {
        assert_eq!(
            (&line["level"], &line["label"]),
            (&i.into(), &l.label.as_str().into())
        );
        // The level the signal cut short may have ended before any answer came.
        let cut = r.levels.len() == 3 && i == 2;
        assert!(cut || l.derived.samples > 0, "level {}", l.label);
        for c in Class::ALL {
            let by_topic: u64 = l.topics.iter().map(|t| t.stats.counts.get(c)).sum();
            assert_eq!(
                by_topic,
                l.stats.counts.get(c),
                "level {} {}",
                l.label,
                c.name()
            );
        }
        for t in &l.topics {
            accepted[t.topic] += t.stats.counts.get(Class::Accepted);
            cancelled[t.topic] += t.stats.counts.get(Class::Cancelled);
        }
    }
    let stats = hub.stats().await;
    // The signal cancels the publishes in flight: the hub may have taken one whose answer
    // never came (once seen in CI: 311 published, 310 accepted). Those are counted
    // `cancelled`, so the hub's count lies between the accepted and accepted + cancelled.
    for ((name, n), c) in r.topics.iter().zip(&accepted).zip(&cancelled) {
        let theirs = stats.topics.get(&**name).map_or(0, |t| t.published);
        assert!(
            *n <= theirs && theirs <= n + c,
            "topic {name}: hub {theirs}, accepted {n}, cancelled {c}"
        );
    }
    assert!(accepted.iter().sum::<u64>() > 0);
    // Each level with fairness figures has its tenants' line, and TOTAL its own at the end.
    let fair = fairness_lines(&out);
    let with_figures: Vec<usize> = (0..r.levels.len())
        .filter(|i| r.levels[*i].fairness.is_some())
        .collect();
    let lines: Vec<_> = fair.iter().map(|l| l["level"].clone()).collect();
    let mut want: Vec<serde_json::Value> = with_figures.iter().map(|i| (*i).into()).collect();
    want.push(serde_json::Value::Null);
    assert_eq!(lines, want);
    for i in with_figures {
        let f = r.levels[i].fairness.as_ref().unwrap();
        assert_eq!(f.by_tenant.len(), f.tenants, "level {i}");
        let attempts: u64 = f.by_tenant.iter().map(|t| t.attempts).sum();
        assert_eq!(attempts, r.levels[i].stats.counts.total(), "level {i}");
    }
    // topics.csv, tenants.csv and fairness.csv, appended level by level, are what `hubload
    // report` writes whole from summary.json and its files: every level listed, one row per
    // topic.
    let appended: Vec<String> = ["topics.csv", "tenants.csv", "fairness.csv"]
        .iter()
        .map(|f| std::fs::read_to_string(out.join(f)).unwrap())
        .collect();
    assert_eq!(r.topics.len(), 4_000);
    assert_eq!(
        appended[0].lines().count(),
        1 + r.levels.len() * r.topics.len()
    );
    assert_eq!(appended[1].lines().count(), 1 + r.levels.len() * 1_000);
    let o = bin(&["report", "summary.json"], &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for (f, a) in ["topics.csv", "tenants.csv", "fairness.csv"]
        .iter()
        .zip(&appended)
    {
        assert_eq!(&std::fs::read_to_string(out.join(f)).unwrap(), a, "{f}");
    }
}

/// A summary.json from before topics.jsonl (the shard fixtures' merge, its levels' topics
/// inline) renders the topics.csv and tenants.csv that build wrote.
#[test]
fn a_summary_with_inline_topics_still_renders() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/shards-v1");
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixtures.join("merged-summary.json"),
        dir.path().join("summary.json"),
    )
    .unwrap();
    let o = bin(&["report", "summary.json"], dir.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for name in ["topics.csv", "tenants.csv"] {
        let want = std::fs::read_to_string(fixtures.join(format!("merged-{name}"))).unwrap();
        let got = std::fs::read_to_string(dir.path().join(name)).unwrap();
        assert_eq!(got, want, "{name}");
    }
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.contains("<h2>Worst topics</h2>"));
    assert!(!dir.path().join("topics.jsonl").exists());
}

/// A summary.json naming a topics file that is not there: one error naming it, exit 2.
#[test]
fn a_missing_topics_file_is_one_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/shards-v1");
    let mut s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixtures.join("merged-summary.json")).unwrap())
            .unwrap();
    s["topics_file"] = "topics.jsonl".into();
    std::fs::write(dir.path().join("summary.json"), s.to_string()).unwrap();
    let o = bin(&["report", "summary.json"], dir.path());
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("topics.jsonl (summary.json's topics_file)"),
        "{err}"
    );
    // And a name that would lead out of the directory is refused as such.
    s["topics_file"] = "../elsewhere.jsonl".into();
    std::fs::write(dir.path().join("summary.json"), s.to_string()).unwrap();
    let o = bin(&["report", "summary.json"], dir.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not a file name"));
}

/// A schema 3 summary.json (written by the build before topic-names.jsonl and
/// subscribers.jsonl: the topics' names, their tenants and every subscriber's counts inline)
/// still loads: read back it has its names and subscribers, `hubload report` writes the
/// topics.csv, tenants.csv and delivery.csv that build wrote, and `compare` reads it.
#[test]
fn a_schema_3_summary_still_loads_in_report_and_compare() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reports/v3");
    let dir = tempfile::tempdir().unwrap();
    for name in ["summary.json", "topics.jsonl", "fairness.jsonl"] {
        std::fs::copy(fixtures.join(name), dir.path().join(name)).unwrap();
    }
    let r = read_summary(dir.path());
    assert_eq!(r.schema_version, 3);
    assert_eq!((r.topics.len(), r.topic_tenants.len()), (12, 12));
    assert_eq!(r.topic_tenants[4], Some(1));
    assert!(r.topics[4].starts_with("tenant0001."), "{}", r.topics[4]);
    for l in r.levels.iter().chain(&r.total) {
        let d = l.delivery.as_ref().unwrap();
        let delivered: u64 = d.per_subscriber.values().map(|c| c.delivered).sum();
        assert_eq!(d.per_subscriber.len(), 12, "{}", l.label);
        assert_eq!(delivered, d.counts.delivered, "{}", l.label);
    }
    let o = bin(&["report", "summary.json"], dir.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for name in ["topics.csv", "tenants.csv", "delivery.csv"] {
        let want = std::fs::read_to_string(fixtures.join(name)).unwrap();
        let got = std::fs::read_to_string(dir.path().join(name)).unwrap();
        assert_eq!(got, want, "{name}");
    }
    assert!(!dir.path().join("topic-names.jsonl").exists());
    let o = bin(
        &["compare", "summary.json", "summary.json", "--out", "cmp"],
        dir.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(dir.path().join("cmp/compare.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + r.levels.len() + 1, "{csv}");
}
