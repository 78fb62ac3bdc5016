//! The Service Bus path end to end: hubload's counts equal the emulator's own, a wrong key is
//! one clean error, throttling is counted exactly, and a side-by-side run writes both paths.

use std::collections::BTreeMap;
use std::path::Path;

use hubload::report::Report;
use hubload_hub::FaultConfig;
use hubload_servicebus::emulator::{Emulator, EmulatorConfig, EmulatorHandle};
use hubload_servicebus::ConnectionString;

use crate::util::{self, count, hub_with, read_summary as summary, run};

/// An emulator on 127.0.0.1:0 on the test's runtime.
async fn emulator(cfg: EmulatorConfig) -> EmulatorHandle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    Emulator::start(listener, cfg).await.unwrap()
}

const WORKLOAD: &[&str] = &["--tenants", "20", "--sps", "3", "--users", "5"];

/// `WORKLOAD` plus `extra` plus `--out dir`.
fn args<'a>(extra: &[&'a str], out: &'a Path) -> Vec<&'a str> {
    let mut a = WORKLOAD.to_vec();
    a.extend_from_slice(extra);
    a.extend(["--out", out.to_str().unwrap()]);
    a
}

/// hubload's attempts per Service Bus topic name, from a per-topic report.
fn attempts_per_topic(r: &Report) -> BTreeMap<String, u64> {
    let total = r.total.as_ref().unwrap();
    r.topics
        .iter()
        .zip(&total.topic_attempts)
        .filter(|(_, n)| **n > 0)
        .map(|(t, n)| (t.clone(), *n))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sends_reconcile_exactly_with_the_emulator_per_topic() {
    let emu = emulator(EmulatorConfig::default()).await;
    let cs = emu.connection_string();
    let out = tempfile::tempdir().unwrap();
    let o = run(&args(
        &[
            "--target",
            "servicebus",
            "--sb-connection-string",
            &cs,
            "--sb-connections",
            "2",
            "--requests",
            "300",
            "--concurrency",
            "1,8",
        ],
        out.path(),
    ))
    .await;
    let r = &o.report;
    assert_eq!(r.target.as_str(), "servicebus");
    assert!(
        r.target_url.starts_with("amqp://127.0.0.1:"),
        "{}",
        r.target_url
    );
    assert_eq!(r.levels.len(), 2);
    for l in &r.levels {
        assert_eq!(l.samples, 300, "level {}", l.label);
        assert_eq!(count(l, "accepted"), 300, "level {}", l.label);
    }
    let c = emu.counts();
    assert_eq!(c.accepted, 600);
    assert_eq!((c.throttled, c.unauthorized), (0, 0));
    assert_eq!(attempts_per_topic(r), c.accepted_per_topic);
    // 20 tenants × 4 channels, each attached before the load.
    let reg = r.registration.as_ref().unwrap();
    assert_eq!((reg.topics, reg.accepted, reg.failed), (80, 80, 0));
    let sb = r.servicebus.as_ref().unwrap();
    assert_eq!((sb.connections, sb.reconnects), (2, 0));
    assert!(sb.conditions.is_empty());
    assert_eq!(sb.emulator, None, "an external emulator is not reported");
    // The report files carry the Service Bus columns and never the key.
    let csv = std::fs::read_to_string(out.path().join("aggregate.csv")).unwrap();
    assert!(csv.starts_with("Concurrency,# Samples"), "{csv}");
    assert!(csv.lines().next().unwrap().contains(",Throttled,Rejected,"));
    let key = hubload_servicebus::emulator::DEV_KEY;
    assert!(cs.contains(key));
    for f in ["summary.json", "aggregate.csv", "table.txt", "report.html"] {
        let text = std::fs::read_to_string(out.path().join(f)).unwrap();
        assert!(!text.contains(key), "{f} contains the key");
    }
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_key_is_one_line_without_the_key_and_exit_2() {
    let emu = emulator(EmulatorConfig::default()).await;
    let addr = emu.addr();
    let wrong_key = "d3Jvbmcta2V5LW5vdC10aGUtZW11bGF0b3Jz";
    let cs = ConnectionString::new(
        addr.ip().to_string(),
        Some(addr.port()),
        hubload_servicebus::emulator::DEV_KEY_NAME,
        wrong_key,
        true,
    )
    .expose();
    let out = tempfile::tempdir().unwrap();
    let sb = [
        "--target",
        "servicebus",
        "--sb-connection-string",
        &cs,
        "--requests",
        "20",
    ];
    let err = util::try_run(&args(&sb, out.path())).await.unwrap_err();
    let msg = format!("{err:#}");
    assert!(!msg.contains('\n'), "{msg}");
    assert!(!msg.contains(wrong_key), "{msg}");
    assert!(msg.contains("refused the SAS token"), "{msg}");
    assert!(msg.contains("SharedAccessKey"), "{msg}");
    assert_eq!(emu.counts().cbs_denied, 1);
    assert_eq!(emu.counts().accepted, 0);

    let o = util::bin(&args(&sb, out.path()), out.path());
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(!stderr.contains(wrong_key) && !stdout.contains(wrong_key));
    let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("refused the SAS token"), "{stderr}");
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_connection_string_is_exit_2_naming_the_field() {
    let out = tempfile::tempdir().unwrap();
    let secret = "c2VjcmV0LWtleS12YWx1ZQ==";
    let cs = format!("Endpoint=http://x/;SharedAccessKeyName=k;SharedAccessKey={secret}");
    let o = util::bin(
        &args(
            &["--target", "servicebus", "--sb-connection-string", &cs],
            out.path(),
        ),
        out.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains(secret), "{stderr}");
    let line = stderr.lines().find(|l| l.contains("error")).unwrap();
    assert!(line.contains("--sb-connection-string"), "{stderr}");
    assert!(line.contains("Endpoint"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_throttling_is_counted_exactly() {
    let emu = emulator(EmulatorConfig {
        throttle_every: Some(7),
        ..EmulatorConfig::default()
    })
    .await;
    let cs = emu.connection_string();
    let out = tempfile::tempdir().unwrap();
    let o = run(&args(
        &[
            "--target",
            "servicebus",
            "--sb-connection-string",
            &cs,
            "--requests",
            "300",
            "--concurrency",
            "1,8",
            "--retries",
            "0",
        ],
        out.path(),
    ))
    .await;
    let total = o.report.total.as_ref().unwrap();
    let c = emu.counts();
    assert_eq!(total.samples, 600);
    // Every 7th transfer is throttled: 600 transfers → 85.
    assert_eq!(c.throttled, 85);
    assert_eq!(count(total, "throttled"), c.throttled);
    assert_eq!(count(total, "accepted"), c.accepted);
    assert_eq!(c.accepted, 600 - 85);
    let csv = std::fs::read_to_string(out.path().join("aggregate.csv")).unwrap();
    let total_row: Vec<&str> = csv.lines().last().unwrap().split(',').collect();
    // TOTAL row: Accepted, Throttled are columns 14 and 15 (SERVICEBUS_CLASSES in src/report/csv.rs).
    assert_eq!(total_row[0], "TOTAL");
    assert_eq!((total_row[13], total_row[14]), ("515", "85"));
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_topic_gets_everything() {
    let emu = emulator(EmulatorConfig::default()).await;
    let cs = emu.connection_string();
    let out = tempfile::tempdir().unwrap();
    let o = run(&args(
        &[
            "--target",
            "servicebus",
            "--sb-connection-string",
            &cs,
            "--sb-topics",
            "single:events",
            "--requests",
            "300",
            "--concurrency",
            "1,8",
        ],
        out.path(),
    ))
    .await;
    let c = emu.counts();
    assert_eq!(
        c.accepted_per_topic,
        BTreeMap::from([("events".to_string(), 600)])
    );
    assert_eq!(count(o.report.total.as_ref().unwrap(), "accepted"), 600);
    let reg = o.report.registration.as_ref().unwrap();
    assert_eq!((reg.topics, reg.accepted), (1, 1));
    assert_eq!(
        o.report.servicebus.as_ref().unwrap().topics,
        "single:events"
    );
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_links_are_reattached_and_counted() {
    let emu = std::sync::Arc::new(emulator(EmulatorConfig::default()).await);
    let cs = emu.connection_string();
    let out = tempfile::tempdir().unwrap();
    // Drop every link once, when a fifth of the sends are in.
    let dropper = {
        let emu = emu.clone();
        tokio::spawn(async move {
            for _ in 0..2000 {
                if emu.counts().accepted >= 400 {
                    emu.drop_links();
                    return true;
                }
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            false
        })
    };
    let o = run(&args(
        &[
            "--target",
            "servicebus",
            "--sb-connection-string",
            &cs,
            "--sb-connections",
            "1",
            "--sb-topics",
            "single:events",
            "--requests",
            "2000",
            "--concurrency",
            "4",
            "--retries",
            "0",
        ],
        out.path(),
    ))
    .await;
    assert!(dropper.await.unwrap(), "the links were never dropped");
    let total = o.report.total.as_ref().unwrap();
    let c = emu.counts();
    assert_eq!(total.samples, 2000);
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
    let out = tempfile::tempdir().unwrap();
    let o = run(&args(
        &[
            "--target",
            "websub,servicebus",
            "--requests",
            "200",
            "--concurrency",
            "1,4",
        ],
        out.path(),
    ))
    .await;
    assert!(!o.thresholds_failed);
    let hub = summary(&out.path().join("websub"));
    let sb = summary(&out.path().join("servicebus"));
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
    // The embedded emulator's own counts are in the Service Bus report.
    let emu = sb.servicebus.as_ref().unwrap().emulator.as_ref().unwrap();
    assert_eq!(emu.accepted, 400);
    assert_eq!(attempts_per_topic(&sb), emu.accepted_per_topic);
    let rows = side_rows(out.path());
    let labels: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(labels, ["Concurrency", "1", "4", "TOTAL"]);
    for r in &rows[1..] {
        assert_eq!(r.len(), 20);
        let want = if r[0] == "TOTAL" { "400" } else { "200" };
        assert_eq!((r[1].as_str(), r[8].as_str()), (want, want), "{r:?}");
    }
    assert!(out.path().join("side-by-side.txt").exists());
    // The Service Bus summary (with its `servicebus` section) validates against the schema.
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/summary.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("servicebus/summary.json")).unwrap(),
    )
    .unwrap();
    assert!(json["servicebus"]["emulator"]["accepted"] == 400, "{json}");
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert!(
        !out.path().join("summary.json").exists(),
        "no report at the root"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn side_by_side_reconciles_both_servers_and_fails_on_either_path() {
    let hub = hub_with(FaultConfig::default()).await;
    let emu = emulator(EmulatorConfig {
        throttle_every: Some(2),
        ..EmulatorConfig::default()
    })
    .await;
    let cs = emu.connection_string();
    let out = tempfile::tempdir().unwrap();
    let o = run(&args(
        &[
            "--target",
            "websub,servicebus",
            "--hub-url",
            &hub.url,
            "--sb-connection-string",
            &cs,
            "--requests",
            "100",
            "--concurrency",
            "1,4",
            "--retries",
            "0",
            "--threshold",
            "errors<1%",
            "--jtl",
            out.path().join("run.jtl").to_str().unwrap(),
        ],
        out.path(),
    ))
    .await;
    // The hub path passes; the broker path (half throttled) fails, so the run fails.
    assert!(o.report.verdicts.iter().all(|v| v.passed));
    assert!(o.thresholds_failed);
    let hub_report = summary(&out.path().join("websub"));
    let sb_report = summary(&out.path().join("servicebus"));
    let s = hub.stats().await;
    assert_eq!(count(hub_report.total.as_ref().unwrap(), "accepted"), 200);
    assert_eq!(s.publish.accepted, 200);
    let c = emu.counts();
    let sb_total = sb_report.total.as_ref().unwrap();
    assert_eq!((c.accepted, c.throttled), (100, 100));
    assert_eq!(count(sb_total, "accepted"), c.accepted);
    assert_eq!(count(sb_total, "throttled"), c.throttled);
    // `--jtl` gives one file per path, one row per attempt, each server's own count.
    let hub_rows = util::jtl_rows(&out.path().join("run.websub.jtl"));
    let sb_rows = util::jtl_rows(&out.path().join("run.servicebus.jtl"));
    assert_eq!(hub_rows.len() as u64, s.publish.total());
    assert_eq!(
        hub_rows.len() as u64,
        hub_report.total.as_ref().unwrap().samples
    );
    assert_eq!(sb_rows.len() as u64, c.accepted + c.throttled);
    assert_eq!(sb_rows.len() as u64, sb_total.samples);
    let ok = |rows: &[csv::StringRecord]| rows.iter().filter(|r| &r[7] == "true").count() as u64;
    assert_eq!(
        (ok(&hub_rows), ok(&sb_rows)),
        (s.publish.accepted, c.accepted)
    );
    assert!(hub_rows
        .iter()
        .all(|r| r[13].ends_with("/hub?hub.mode=publish")));
    assert!(sb_rows
        .iter()
        .all(|r| r[13].starts_with("amqp://127.0.0.1:")));
    assert!(!out.path().join("run.jtl").exists());
    // Overhead error column: hub 0 % − broker 50 % = −50 pp, at every level.
    for r in &side_rows(out.path())[1..] {
        assert_eq!(r[19], "-50.000", "{r:?}");
    }
    emu.shutdown().await;
}
