//! The Service Bus path end to end: hubload's counts equal the emulator's own, a wrong key is
//! one clean error, throttling is counted exactly, and a side-by-side run writes both paths.

use std::collections::BTreeMap;
use std::path::Path;

use hubload::report::document::Report;
use hubload_servicebus::emulator::EmulatorConfig;
use hubload_servicebus::ConnectionString;

use crate::util::{self, count, line, Scenario};

const WORKLOAD: &[&str] = &["--tenants", "20", "--sps", "3", "--users", "5"];

/// `WORKLOAD` plus `extra`.
fn args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = WORKLOAD.to_vec();
    a.extend_from_slice(extra);
    a
}

/// A Service Bus scenario whose emulator has the default settings.
async fn servicebus() -> Scenario {
    Scenario::servicebus(EmulatorConfig::default()).await
}

/// The scenario's hub saw no request: the run went to Service Bus only.
async fn hub_untouched(sc: &Scenario) {
    assert_eq!(sc.hub_stats().await.requests, 0);
}

/// hubload's attempts per Service Bus topic name, from a per-topic report: its levels' topic
/// rows added up.
fn attempts_per_topic(r: &Report) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for t in r.levels.iter().flat_map(|l| &l.topics) {
        *out.entry(r.topics[t.topic].to_string()).or_default() += t.stats.counts.total();
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sends_reconcile_exactly_with_the_emulator_per_topic() {
    let sc = servicebus().await;
    let cs = sc.connection_string();
    let o = sc
        .run(&args(&line(
            "--target servicebus --sb-connections 2 --requests 300 --concurrency 1,8",
        )))
        .await;
    let r = &o.report;
    assert_eq!(r.target.as_str(), "servicebus");
    assert_eq!(r.target_url, format!("amqp://{}", sc.emulator().addr()));
    assert_eq!(r.levels.len(), 2);
    for l in &r.levels {
        assert_eq!(l.derived.samples, 300, "level {}", l.label);
        assert_eq!(count(l, "accepted"), 300, "level {}", l.label);
    }
    let c = sc.emulator_counts();
    assert_eq!(c.accepted, 600);
    assert_eq!((c.throttled, c.unauthorized), (0, 0));
    assert_eq!(attempts_per_topic(&sc.summary("")), c.accepted_per_topic);
    // 20 tenants × 4 channels, each attached before the load.
    let reg = r.registration.as_ref().unwrap();
    assert_eq!((reg.result.topics, reg.accepted, reg.failed), (80, 80, 0));
    let sb = r.servicebus.as_ref().unwrap();
    assert_eq!((sb.connections, sb.reconnects), (2, 0));
    assert_eq!(c.connections, 2);
    assert!(sb.conditions.is_empty());
    assert_eq!(sb.emulator, None, "an external emulator is not reported");
    hub_untouched(&sc).await;
    // The report files carry the Service Bus columns and never the key.
    let csv = std::fs::read_to_string(sc.dir.path().join("aggregate.csv")).unwrap();
    assert!(csv.starts_with("Concurrency,# Samples"), "{csv}");
    assert!(csv.lines().next().unwrap().contains(",Throttled,Rejected,"));
    let key = hubload_servicebus::emulator::DEV_KEY;
    assert!(cs.contains(key));
    for f in ["summary.json", "aggregate.csv", "table.txt", "report.html"] {
        let text = std::fs::read_to_string(sc.dir.path().join(f)).unwrap();
        assert!(!text.contains(key), "{f} contains the key");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_key_is_one_line_without_the_key_and_exit_2() {
    let sc = servicebus().await;
    let addr = sc.emulator().addr();
    let wrong_key = "d3Jvbmcta2V5LW5vdC10aGUtZW11bGF0b3Jz";
    let cs = ConnectionString::new(
        addr.ip().to_string(),
        Some(addr.port()),
        hubload_servicebus::emulator::DEV_KEY_NAME,
        wrong_key,
        true,
    )
    .expose();
    let sb = args(&[
        "--target",
        "servicebus",
        "--sb-connection-string",
        &cs,
        "--requests",
        "20",
    ]);
    let err = sc.try_run(&sb).await.unwrap_err();
    let msg = format!("{err:#}");
    assert!(!msg.contains('\n'), "{msg}");
    assert!(!msg.contains(wrong_key), "{msg}");
    assert!(msg.contains("refused the SAS token"), "{msg}");
    assert!(msg.contains("SharedAccessKey"), "{msg}");
    let c = sc.emulator_counts();
    assert_eq!((c.cbs_denied, c.cbs_ok, c.accepted), (1, 0, 0));

    let o = sc.bin(&sb).await;
    util::assert_exit(&o, 2);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(!stderr.contains(wrong_key) && !stdout.contains(wrong_key));
    let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("refused the SAS token"), "{stderr}");
    let c = sc.emulator_counts();
    assert_eq!((c.cbs_denied, c.cbs_ok, c.accepted), (2, 0, 0));
    hub_untouched(&sc).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_connection_string_is_exit_2_naming_the_field() {
    let sc = servicebus().await;
    let secret = "c2VjcmV0LWtleS12YWx1ZQ==";
    let cs = format!("Endpoint=http://x/;SharedAccessKeyName=k;SharedAccessKey={secret}");
    let o = sc
        .bin(&args(&[
            "--target",
            "servicebus",
            "--sb-connection-string",
            &cs,
        ]))
        .await;
    util::assert_exit(&o, 2);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains(secret), "{stderr}");
    let line = stderr.lines().find(|l| l.contains("error")).unwrap();
    assert!(line.contains("--sb-connection-string"), "{stderr}");
    assert!(line.contains("Endpoint"), "{stderr}");
    // Refused in config: neither server was reached.
    assert_eq!(sc.emulator_counts().connections, 0);
    hub_untouched(&sc).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_throttling_is_counted_exactly() {
    let sc = Scenario::servicebus(EmulatorConfig {
        throttle_every: Some(7),
        ..EmulatorConfig::default()
    })
    .await;
    let o = sc
        .run(&args(&line(
            "--target servicebus --requests 300 --concurrency 1,8 --retries 0",
        )))
        .await;
    let total = o.report.total.as_ref().unwrap();
    let c = sc.emulator_counts();
    assert_eq!(total.derived.samples, 600);
    // Every 7th transfer is throttled: 600 transfers → 85.
    assert_eq!(c.throttled, 85);
    assert_eq!(count(total, "throttled"), c.throttled);
    assert_eq!(count(total, "accepted"), c.accepted);
    assert_eq!(c.accepted, 600 - 85);
    let csv = std::fs::read_to_string(sc.dir.path().join("aggregate.csv")).unwrap();
    let total_row: Vec<&str> = csv.lines().last().unwrap().split(',').collect();
    // TOTAL row: Accepted, Throttled are columns 14 and 15 (SERVICEBUS_CLASSES in src/report/csv.rs).
    assert_eq!(total_row[0], "TOTAL");
    assert_eq!((total_row[13], total_row[14]), ("515", "85"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_topic_gets_everything() {
    let sc = servicebus().await;
    let o = sc
        .run(&args(&line(
            "--target servicebus --sb-topics single:events --requests 300 --concurrency 1,8",
        )))
        .await;
    let c = sc.emulator_counts();
    assert_eq!(
        c.accepted_per_topic,
        BTreeMap::from([("events".to_string(), 600)])
    );
    assert_eq!(count(o.report.total.as_ref().unwrap(), "accepted"), 600);
    let reg = o.report.registration.as_ref().unwrap();
    assert_eq!((reg.result.topics, reg.accepted), (1, 1));
    assert_eq!(
        o.report.servicebus.as_ref().unwrap().topics,
        "single:events"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_links_are_reattached_and_counted() {
    let sc = servicebus().await;
    // Drop every link once, when a fifth of the sends are in (polled alongside the run).
    let dropper = async {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
        while tokio::time::Instant::now() < deadline {
            if sc.emulator_counts().accepted >= 400 {
                sc.emulator().drop_links();
                return true;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        false
    };
    let flags = args(&line(
        "--target servicebus --sb-connections 1 --sb-topics single:events \
         --requests 2000 --concurrency 4 --retries 0",
    ));
    let (dropped, o) = tokio::join!(dropper, sc.run(&flags));
    assert!(dropped, "the links were never dropped");
    let total = o.report.total.as_ref().unwrap();
    let c = sc.emulator_counts();
    assert_eq!(total.derived.samples, 2000);
    assert_eq!(count(total, "accepted"), c.accepted);
    // Sends in flight when the link went are connection errors; nothing else fails.
    assert_eq!(c.accepted + count(total, "conn_closed"), 2000);
    assert_eq!(o.report.servicebus.as_ref().unwrap().reconnects, 1);
}

/// The side-by-side CSV's rows, as cells.
fn side_rows(out: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(out.join("side-by-side.csv")).unwrap();
    text.lines()
        .map(|l| l.split(',').map(String::from).collect())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn side_by_side_with_the_embedded_hub_and_emulator() {
    let sc = servicebus().await;
    let o = sc
        .run_embedded(&args(&line(
            "--target websub,servicebus --requests 200 --concurrency 1,4",
        )))
        .await;
    assert!(!o.thresholds_failed);
    let out = sc.dir.path();
    let hub = sc.summary("websub");
    let sb = sc.summary("servicebus");
    assert_eq!(
        (hub.target.as_str(), sb.target.as_str()),
        ("websub", "servicebus")
    );
    assert_eq!(o.report.target.as_str(), "websub");
    for r in [&hub, &sb] {
        let labels: Vec<&str> = r.levels.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(labels, ["1", "4"], "{}", r.target);
        assert_eq!(
            count(r.total.as_ref().unwrap(), "accepted"),
            400,
            "{}",
            r.target
        );
    }
    // The embedded servers took the load, not the scenario's.
    hub_untouched(&sc).await;
    assert_eq!(sc.emulator_counts().connections, 0);
    // The embedded emulator's own counts are in the Service Bus report.
    let emu = sb.servicebus.as_ref().unwrap().emulator.as_ref().unwrap();
    assert_eq!(emu.accepted, 400);
    assert_eq!(attempts_per_topic(&sb), emu.accepted_per_topic);
    let rows = side_rows(out);
    let labels: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(labels, ["Concurrency", "1", "4", "TOTAL"]);
    for r in &rows[1..] {
        assert_eq!(r.len(), 20);
        let want = if r[0] == "TOTAL" { "400" } else { "200" };
        assert_eq!((r[1].as_str(), r[8].as_str()), (want, want), "{r:?}");
    }
    assert!(out.join("side-by-side.txt").exists());
    // The Service Bus summary (with its `servicebus` section) validates against the schema.
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/summary.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("servicebus/summary.json")).unwrap(),
    )
    .unwrap();
    assert!(json["servicebus"]["emulator"]["accepted"] == 400, "{json}");
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert!(!out.join("summary.json").exists(), "no report at the root");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn side_by_side_reconciles_both_servers_and_fails_on_either_path() {
    let sc = Scenario::servicebus(EmulatorConfig {
        throttle_every: Some(2),
        ..EmulatorConfig::default()
    })
    .await;
    let out = sc.dir.path();
    let jtl = out.join("run.jtl");
    let o = sc
        .run(&args(&[
            "--target",
            "websub,servicebus",
            "--requests",
            "100",
            "--concurrency",
            "1,4",
            "--retries",
            "0",
            "--threshold",
            "errors<1%",
            "--jtl",
            jtl.to_str().unwrap(),
        ]))
        .await;
    // The hub path passes; the broker path (half throttled) fails, so the run fails.
    assert!(o.report.verdicts.iter().all(|v| v.passed));
    assert!(o.thresholds_failed);
    let hub_report = sc.summary("websub");
    let sb_report = sc.summary("servicebus");
    let s = sc.hub_stats().await;
    assert_eq!(count(hub_report.total.as_ref().unwrap(), "accepted"), 200);
    assert_eq!(s.publish.accepted, 200);
    let c = sc.emulator_counts();
    let sb_total = sb_report.total.as_ref().unwrap();
    assert_eq!((c.accepted, c.throttled), (100, 100));
    assert_eq!(count(sb_total, "accepted"), c.accepted);
    assert_eq!(count(sb_total, "throttled"), c.throttled);
    // `--jtl` gives one file per path, one row per attempt, each server's own count.
    let hub_rows = util::jtl_rows(&out.join("run.websub.jtl"));
    let sb_rows = util::jtl_rows(&out.join("run.servicebus.jtl"));
    assert_eq!(hub_rows.len() as u64, s.publish.total());
    assert_eq!(
        hub_rows.len() as u64,
        hub_report.total.as_ref().unwrap().derived.samples
    );
    assert_eq!(sb_rows.len() as u64, c.accepted + c.throttled);
    assert_eq!(sb_rows.len() as u64, sb_total.derived.samples);
    let ok = |rows: &[csv::StringRecord]| rows.iter().filter(|r| &r[7] == "true").count() as u64;
    assert_eq!(
        (ok(&hub_rows), ok(&sb_rows)),
        (s.publish.accepted, c.accepted)
    );
    assert!(hub_rows
        .iter()
        .all(|r| r[13].ends_with("/hub?hub.mode=publish")));
    let amqp = format!("amqp://{}", sc.emulator().addr());
    assert!(sb_rows.iter().all(|r| r[13].starts_with(&amqp)));
    assert!(!jtl.exists());
    // Overhead error column: hub 0 % − broker 50 % = −50 pp, at every level.
    for r in &side_rows(out)[1..] {
        assert_eq!(r[19], "-50.000", "{r:?}");
    }
}
