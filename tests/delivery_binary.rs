//! The built binary with subscribers against the reference hub: delivery gates written as the
//! issue writes them decide the exit code, and a signal ends the wait for deliveries at once
//! (reports written, what had not arrived counted not yet delivered rather than lost).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hubload::report::document::Report;
use hubload_hub::{HubConfig, StatsSnapshot};

use crate::util::{read_summary, Scenario, SERIAL};

/// A hub that drops deliveries: one delivery in flight and a queue of one per subscriber.
async fn dropping_hub() -> Scenario {
    Scenario::start_with(HubConfig {
        delivery_concurrency: 1,
        queue_size: 1,
        ..HubConfig::default()
    })
    .await
}

/// The binary against the scenario's hub, reports into its directory.
fn spawn(sc: &Scenario, flags: &[&str]) -> Child {
    let out = sc.dir.path().to_str().unwrap();
    crate::util::hubload_command()
        .args(["--quiet", "--hub-url", &sc.hub.url, "--out", out])
        .args(["--tenants", "2", "--sps", "2", "--users", "3"])
        .args(["--subscribers", "1", "--subscriber-latency", "20ms"])
        .args(flags)
        .env("RUST_LOG", "error")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Wait (bounded by 60 s) for `child` to exit: its exit code, stderr, and when it exited.
async fn exit_of(mut child: Child) -> (Option<i32>, String, Instant) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            let at = Instant::now();
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            return (st.code(), err, at);
        }
        assert!(Instant::now() < deadline, "hubload did not exit");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The hub's stats once `done` holds for them (bounded wait).
async fn hub_until(sc: &Scenario, done: impl Fn(&StatsSnapshot) -> bool) -> StatsSnapshot {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let s = sc.hub_stats().await;
        if done(&s) {
            return s;
        }
        assert!(Instant::now() < deadline, "the hub never got there: {s:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn sum(r: &Report, f: impl Fn(&hubload::subscriber::DeliveryCounts) -> u64) -> u64 {
    r.levels
        .iter()
        .map(|l| f(&l.delivery.as_ref().expect("a delivery section").counts))
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delivery_gates_as_the_issue_writes_them_decide_the_exit_code() {
    let _turn = SERIAL.lock().await;
    let sc = dropping_hub().await;
    let child = spawn(
        &sc,
        &[
            "--concurrency",
            "2,4",
            "--requests",
            "60",
            "--delivery-grace",
            "2s",
            "--threshold",
            "e2e_p99<2s",
            "--threshold",
            "lost=0",
            "--threshold",
            "duplicates<0.1%",
        ],
    );
    let (code, err, _) = exit_of(child).await;
    let hub = hub_until(&sc, |s| s.distribution.pending == 0).await;
    let r = read_summary(sc.dir.path());
    let d = &hub.distribution;
    assert!(d.dropped > 0, "the queue of one overflowed: {d:?}");
    assert_eq!(sum(&r, |c| c.lost), d.dropped, "{d:?}");
    assert_eq!(sum(&r, |c| c.not_yet_delivered), 0, "the grace ran out");
    // Each verdict as the summary's own numbers say it must be: 3 rules × (2 levels).
    assert_eq!(r.verdicts.len(), 6, "{:?}", r.verdicts);
    for v in &r.verdicts {
        let l = r.levels.iter().find(|l| l.label == v.level).unwrap();
        let dl = l.delivery.as_ref().unwrap();
        let c = &dl.counts;
        let want = match v.threshold.as_str() {
            "e2e_p99<2s" => dl.e2e_us.p99 < 2_000_000,
            "lost=0" => c.lost == 0,
            "duplicates<0.1%" => (c.duplicates as f64) * 100.0 / (c.expected as f64) < 0.1,
            other => panic!("unexpected verdict {other}"),
        };
        assert_eq!(v.passed, want, "{v:?}");
    }
    assert!(r
        .verdicts
        .iter()
        .any(|v| v.threshold == "lost=0" && !v.passed));
    assert_eq!(code, Some(1), "a failed gate exits 1: {err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_ends_the_wait_for_deliveries_at_once() {
    let _turn = SERIAL.lock().await;
    let sc = dropping_hub().await;
    // Dropped deliveries never arrive: without the signal the run would wait the full minute.
    let child = spawn(
        &sc,
        &[
            "--concurrency",
            "2",
            "--requests",
            "60",
            "--delivery-grace",
            "60s",
        ],
    );
    // Every publish accepted and every delivery made or dropped: hubload is waiting for the
    // dropped ones.
    let hub = hub_until(&sc, |s| {
        s.distribution.published == 60 && s.distribution.pending == 0
    })
    .await;
    assert!(hub.distribution.dropped > 0, "{:?}", hub.distribution);
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let signalled = Instant::now();
    let (code, err, exited) = exit_of(child).await;
    assert_eq!(code, Some(130), "{err}");
    let took = exited - signalled;
    assert!(
        took < Duration::from_secs(2),
        "exited {took:?} after SIGINT"
    );
    // The level and its deliveries were written after the signal (the 1.5 s exit guard would
    // leave a summary without the level).
    let r = read_summary(sc.dir.path());
    assert!(r.partial);
    assert_eq!(r.levels.len(), 1);
    let c = &r.levels[0]
        .delivery
        .as_ref()
        .expect("a delivery section")
        .counts;
    let d = &hub.distribution;
    assert_eq!((c.delivered, c.lost), (d.delivered, 0), "{c:?}");
    assert_eq!(c.not_yet_delivered, d.dropped, "{c:?}");
    assert_eq!(c.expected, c.delivered + c.not_yet_delivered);
    // Every report shows them apart from lost: delivery.csv's `Lost` and `Not yet delivered`
    // columns, and the terminal block's `Lost` and `NotYet`.
    let csv = std::fs::read_to_string(sc.dir.path().join("delivery.csv")).unwrap();
    let mut rd = csv::Reader::from_reader(csv.as_bytes());
    let head = rd.headers().unwrap().clone();
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let row = rd.records().next().unwrap().unwrap();
    assert_eq!(row[col("Lost")], *"0", "{csv}");
    assert_eq!(
        row[col("Not yet delivered")],
        d.dropped.to_string(),
        "{csv}"
    );
    let table = std::fs::read_to_string(sc.dir.path().join("table.txt")).unwrap();
    let block: Vec<Vec<&str>> = table
        .lines()
        .skip_while(|l| !l.starts_with("End-to-end delivery"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(block[1][3..5], ["Lost", "NotYet"], "{table}");
    let [expected, delivered, dropped] =
        [c.expected, c.delivered, d.dropped].map(|n| n.to_string());
    assert_eq!(block[3][..5], ["2", &expected, &delivered, "0", &dropped]);
}
