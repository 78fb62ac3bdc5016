//! The built binary, end to end: the issue's command, SIGTERM, `kill -9` leaving a complete
//! JTL, and the report subcommands.

use std::process::{Command, Stdio};
use std::time::Duration;

use hubload_hub::FaultConfig;
use tokio::time::Instant;

use crate::util::{assert_exit, bin, bin_child, count, jtl_rows, read_summary, Scenario, SERIAL};

#[test]
fn the_documented_command_completes_with_zero_errors() {
    let _turn = SERIAL.blocking_lock();
    let dir = tempfile::tempdir().unwrap();
    let out = bin(
        &[
            "--tenants",
            "100",
            "--concurrency",
            "200",
            "--duration",
            "10s",
            "--out",
            "r",
        ],
        dir.path(),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let csv = std::fs::read_to_string(dir.path().join("r/aggregate.csv")).unwrap();
    let mut rows = csv::Reader::from_reader(csv.as_bytes());
    let header = rows.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = rows.records().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), 2, "{csv}");
    assert_eq!(&rows[0][0], "200");
    assert_eq!(&rows[1][0], "TOTAL");
    let samples: u64 = rows[1][col("# Samples")].parse().unwrap();
    assert!(samples > 1000, "{samples}");
    assert_eq!(&rows[1][col("Error %")], "0.000%");
    assert_eq!(rows[1][col("Accepted")].parse::<u64>().unwrap(), samples);
    for f in ["summary.json", "table.txt", "report.html", "whatif.csv"] {
        assert!(dir.path().join("r").join(f).is_file(), "{f}");
    }
    // The table went to stdout.
    assert!(String::from_utf8_lossy(&out.stdout).contains("TOTAL"));
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_writes_partial_reports_and_exits_130() {
    let _turn = SERIAL.lock().await;
    let sc = Scenario::start(FaultConfig::default()).await;
    let child = bin_child(
        &[
            "--hub-url",
            &sc.hub.url,
            "--tenants",
            "3",
            "--concurrency",
            "2,4",
            "--duration",
            "60s",
            "--out",
            "r",
            "--quiet",
        ],
        sc.dir.path(),
        Stdio::piped(),
    );
    // Signal once the first level is under way: the hub has answered 200 of its publishes.
    let deadline = Instant::now() + Duration::from_secs(60);
    let seen = loop {
        let seen = sc.hub_stats().await.publish.total();
        if seen >= 200 {
            break seen;
        }
        assert!(Instant::now() < deadline, "{seen} publishes in 60 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    let report = sc.summary("r");
    assert!(report.partial);
    assert_eq!(
        report.levels.len(),
        1,
        "only the interrupted first level was measured"
    );
    // The level's samples are the publishes answered before the signal and those in flight
    // then (at most the concurrency, 2), which are `cancelled`; the hub answered each of the
    // former and may have answered some of the latter.
    let level = &report.levels[0];
    let (accepted, cancelled) = (count(level, "accepted"), count(level, "cancelled"));
    assert_eq!(
        accepted + cancelled,
        level.derived.samples,
        "{:?}",
        level.stats.counts
    );
    assert!(cancelled <= 2, "{cancelled} cancelled");
    assert!(
        accepted + 2 >= seen,
        "{accepted} accepted, the hub had answered {seen}"
    );
    let hub = sc.hub_stats().await.publish;
    assert!(
        (accepted..=accepted + cancelled).contains(&hub.accepted),
        "hub {} accepted, hubload {accepted} + {cancelled} cancelled",
        hub.accepted
    );
    assert!(std::fs::read_to_string(sc.dir.path().join("r/table.txt"))
        .unwrap()
        .contains("PARTIAL"));
}

#[test]
fn report_and_compare_work_on_written_reports() {
    let _turn = SERIAL.blocking_lock();
    let dir = tempfile::tempdir().unwrap();
    for name in ["a", "b"] {
        let out = bin(
            &[
                "--tenants",
                "2",
                "--concurrency",
                "1,2",
                "--requests",
                "30",
                "--out",
                name,
                "--quiet",
            ],
            dir.path(),
        );
        assert_exit(&out, 0);
    }
    std::fs::remove_file(dir.path().join("a/report.html")).unwrap();
    let out = bin(&["report", "a/summary.json"], dir.path());
    assert_exit(&out, 0);
    assert!(dir.path().join("a/report.html").is_file());
    let out = bin(&["compare", "a", "b", "--out", "cmp"], dir.path());
    assert_exit(&out, 0);
    assert!(
        dir.path().join("cmp/compare.csv").is_file()
            && dir.path().join("cmp/compare.html").is_file()
    );
    // A gate no run can pass: exit 1.
    let out = bin(
        &[
            "compare",
            "a",
            "b",
            "--fail-if",
            "throughput>-100%",
            "--out",
            "cmp",
        ],
        dir.path(),
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // A threshold that fails makes the run exit 1.
    let out = bin(
        &[
            "--tenants",
            "2",
            "--concurrency",
            "1",
            "--requests",
            "10",
            "--threshold",
            "p99<1us",
            "--out",
            "c",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("FAIL"));
}

#[test]
fn jtl_streams_one_row_per_attempt() {
    let _turn = SERIAL.blocking_lock();
    let dir = tempfile::tempdir().unwrap();
    let out = bin(
        &[
            "--tenants",
            "2",
            "--concurrency",
            "2",
            "--requests",
            "25",
            "--jtl",
            "run.jtl",
            "--out",
            "r",
            "--quiet",
        ],
        dir.path(),
    );
    assert_exit(&out, 0);
    // The exact header is checked by `jtl_rows`.
    let rows = jtl_rows(&dir.path().join("run.jtl"));
    assert_eq!(rows.len(), 25);
    for r in &rows {
        assert!(r[5].starts_with("c2 ") && &r[3] == "200", "{r:?}");
    }
}

/// `kill -9` while the run is in its third level or later: the JTL holds every row of every
/// level summary.json lists (the JTL is synced before each level's row is written), and at
/// most one partial line at its end.
#[test]
fn after_kill_9_the_jtl_holds_every_row_of_every_listed_level() {
    let _turn = SERIAL.blocking_lock();
    let dir = tempfile::tempdir().unwrap();
    let mut child = bin_child(
        &[
            "--tenants",
            "4",
            "--concurrency",
            "1,2,3,4,5,6,7,8",
            "--requests",
            "4000",
            "--jtl",
            "run.jtl",
            "--out",
            "r",
            "--quiet",
        ],
        dir.path(),
        Stdio::null(),
    );
    let summary = dir.path().join("r/summary.json");
    let levels_listed = || -> usize {
        std::fs::read_to_string(&summary)
            .ok()
            .and_then(|t| serde_json::from_str::<hubload::report::document::Report>(&t).ok())
            .map_or(0, |r| r.levels.len())
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while levels_listed() < 2 {
        assert!(std::time::Instant::now() < deadline, "no 2 levels in 120 s");
        assert!(child.try_wait().unwrap().is_none(), "the run ended first");
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "the run ended before the kill"
    );
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let report = read_summary(&dir.path().join("r"));
    assert!(report.levels.len() >= 2 && report.levels.len() < 8);
    let text = std::fs::read(dir.path().join("run.jtl")).unwrap();
    let complete = match text.iter().rposition(|&b| b == b'\n') {
        Some(i) => &text[..=i],
        None => &text[..0],
    };
    // Whatever follows the last newline is the one partial line.
    assert!(!text[complete.len()..].contains(&b'\n'));
    let mut rd = csv::Reader::from_reader(complete);
    assert_eq!(rd.headers().unwrap().len(), 17);
    let mut per_level = std::collections::HashMap::<String, u64>::new();
    for rec in rd.records() {
        let rec = rec.unwrap();
        let tag = rec[2].split(' ').next().unwrap().to_string();
        *per_level.entry(tag).or_default() += 1;
    }
    for l in &report.levels {
        assert_eq!(l.derived.samples, 4000, "level {}", l.label);
        assert_eq!(
            per_level[&format!("c{}", l.label)],
            l.derived.samples,
            "level {}",
            l.label
        );
    }
}
