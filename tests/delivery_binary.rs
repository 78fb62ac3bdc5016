//! The built binary with subscribers against the reference hub: a signal ends the wait for
//! deliveries at once (reports written, what had not arrived counted not yet delivered rather
//! than lost).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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
    Command::new(env!("CARGO_BIN_EXE_hubload"))
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
}
