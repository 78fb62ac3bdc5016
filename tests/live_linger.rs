//! `--web-linger`: after the run, the final page and report.html stay served (the report the
//! same bytes as the file on disk) until the linger passes, and the process then exits 0; a
//! `POST /v1/stop` ends the linger sooner without making the run an interrupted one.

use std::time::{Duration, Instant};

use crate::live_control::{one_topic, spawn_bin, Api};
use crate::util::{free_port, line, Scenario};
use hubload_hub::FaultConfig;

/// How long the first test lingers.
const LINGER: Duration = Duration::from_secs(3);

/// Wait (bounded) until the status says `finished`; when it was first seen.
pub(crate) async fn finished(api: &Api) -> Instant {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let s = api.status().await;
        if s["status"] == "finished" {
            return Instant::now();
        }
        assert!(Instant::now() < deadline, "the run never finished: {s}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The real binary, a 100-request run lingering 3 s: report.html is served after the run and
/// equals the file; the process exits 0 once the linger has passed, and not long after.
#[tokio::test]
async fn after_the_run_report_html_is_served_until_the_linger_ends() {
    let sc = Scenario::start(FaultConfig::default()).await;
    let _turn = crate::util::SERIAL.lock().await;
    let port = free_port();
    let web = format!("127.0.0.1:{port}");
    let out = sc.dir.path().join("r");
    let linger = format!("{}s", LINGER.as_secs());
    let rest = [
        "--concurrency",
        "2",
        "--requests",
        "100",
        "--web-linger",
        &linger,
    ];
    let mut child = spawn_bin(&sc, &out, &web, &rest);
    let api = Api::new(port, None);
    let seen = finished(&api).await;
    let served = api
        .http
        .get(format!("{}/report.html", api.base))
        .send()
        .await
        .unwrap();
    assert_eq!(served.status(), 200);
    let served = served.bytes().await.unwrap();
    let on_disk = std::fs::read(out.join("report.html")).unwrap();
    assert!(
        served[..] == on_disk[..],
        "report.html served differs from the file"
    );
    assert!(
        child.try_wait().unwrap().is_none(),
        "exited before the linger"
    );
    let deadline = seen + LINGER + Duration::from_secs(2);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "still up 2 s past the linger");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // The linger began just before `finished` could be seen (a poll's time).
    let up = seen.elapsed();
    assert!(
        up + Duration::from_millis(500) >= LINGER,
        "exited {up:?} after the run"
    );
    assert_eq!(status.code(), Some(0));
}

/// In-process, a linger of a minute: a `POST /v1/stop` after the run ends it at once; the
/// run is not marked interrupted and the stop is not a control change of the run.
#[tokio::test]
async fn a_stop_ends_the_linger_sooner() {
    let sc = Scenario::start(FaultConfig::default()).await;
    let port = free_port();
    let web = format!("127.0.0.1:{port}");
    let api = Api::new(port, None);
    let flags = one_topic(&[
        "--concurrency",
        "2",
        "--requests",
        "100",
        "--web",
        &web,
        "--web-linger",
        "60s",
    ]);
    let stopped = async {
        finished(&api).await;
        assert_eq!(api.post("stop", None).await, 200);
        Instant::now()
    };
    let run = async {
        let o = sc.run(&flags).await;
        (o, Instant::now())
    };
    let ((outcome, ended), stop) = tokio::join!(run, stopped);
    assert!(!outcome.interrupted);
    assert!(
        ended.saturating_duration_since(stop) < Duration::from_secs(5),
        "the linger went on after the stop"
    );
    assert!(outcome.report.levels[0].derived.samples == 100);
    let report = crate::util::read_summary(sc.dir.path());
    assert!(report.control.is_empty(), "{:?}", report.control);
}

/// The real binary with a minute's linger, stopped during its run, once by `POST /v1/stop`
/// and once by SIGINT: neither lingers; each exits 130 as a stop does, its reports written
/// and marked partial, within the bound a stop without `--web-linger` has.
#[tokio::test]
async fn a_run_stopped_while_it_runs_does_not_linger() {
    let sc = Scenario::start(FaultConfig::default()).await;
    let _turn = crate::util::SERIAL.lock().await;
    for how in ["api", "sigint"] {
        let port = free_port();
        let web = format!("127.0.0.1:{port}");
        let out = sc.dir.path().join(how);
        let rest = line("--concurrency 2 --duration 60s --web-linger 60s");
        let mut child = spawn_bin(&sc, &out, &web, &rest);
        let api = Api::new(port, None);
        api.wait_level(0, 1).await;
        match how {
            "api" => assert_eq!(api.post("stop", None).await, 200),
            _ => {
                let ok = std::process::Command::new("kill")
                    .args(["-INT", &child.id().to_string()])
                    .status()
                    .unwrap();
                assert!(ok.success());
            }
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(
                Instant::now() < deadline,
                "{how}: still up 10 s after the stop"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(status.code(), Some(130), "{how}");
        let report = crate::util::read_summary(&out);
        assert!(report.partial, "{how}");
        assert!(out.join("report.html").is_file(), "{how}");
    }
}
