//! `--web`'s control API against the real hub and a real run: a pause in which no attempt
//! starts (the JTL's own timestamps), a rate change whose two sides reach their rates, a level
//! ended early whose row says so, a stop that writes every report and exits 130, and requests
//! without the token or from another origin that are refused and change nothing.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{free_port, jtl_rows, line, read_summary, Scenario};
use hubload_hub::FaultConfig;

/// The control API of a run at `base` (`http://127.0.0.1:PORT`).
pub(crate) struct Api {
    pub(crate) base: String,
    pub(crate) http: reqwest::Client,
    token: Option<String>,
}

impl Api {
    pub(crate) fn new(port: u16, token: Option<&str>) -> Self {
        Api {
            base: format!("http://127.0.0.1:{port}"),
            http: reqwest::Client::new(),
            token: token.map(String::from),
        }
    }

    pub(crate) fn with_token(&self, r: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.token {
            Some(t) => r.bearer_auth(t),
            None => r,
        }
    }

    /// `GET /v1/status`'s attributes, once the server answers (bounded wait).
    pub(crate) async fn status(&self) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let r = self
                .with_token(self.http.get(format!("{}/v1/status", self.base)))
                .send()
                .await;
            if let Ok(r) = r {
                let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
                return v["data"]["attributes"].clone();
            }
            assert!(Instant::now() < deadline, "the control API never answered");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Wait (bounded) until the status says level `index` is running with ≥ `secs` in it.
    pub(crate) async fn wait_level(&self, index: u64, secs: u64) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let s = self.status().await;
            if s["level"]["index"] == index && s["level"]["elapsed_s"].as_u64().unwrap_or(0) >= secs
            {
                return;
            }
            assert!(Instant::now() < deadline, "level {index} never ran: {s}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// `POST /v1/PATH` with `body`; the status code.
    pub(crate) async fn post(&self, path: &str, body: Option<&str>) -> u16 {
        let mut r = self.with_token(self.http.post(format!("{}/v1/{path}", self.base)));
        if let Some(b) = body {
            r = r
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        r.send().await.unwrap().status().as_u16()
    }
}

/// The JTL's start times (Unix ms), in file order.
fn starts(path: &std::path::Path) -> Vec<u64> {
    jtl_rows(path)
        .iter()
        .map(|r| r[0].parse().unwrap())
        .collect()
}

/// One topic (one tenant, the login channel), then `rest`.
pub(crate) fn one_topic<'a>(rest: &[&'a str]) -> Vec<&'a str> {
    let mut f = vec!["--tenants", "1", "--channels", "login"];
    f.extend_from_slice(rest);
    f
}

/// A steered run's set-up: a hub with given faults, `--web` on a free port with its API
/// client, and the JTL's path in the scenario's directory.
struct Steered {
    sc: Scenario,
    web: String,
    jtl: std::path::PathBuf,
    api: Api,
}

impl Steered {
    async fn start(faults: FaultConfig) -> Self {
        let sc = Scenario::start(faults).await;
        let port = free_port();
        let jtl = sc.dir.path().join("run.jtl");
        Steered {
            sc,
            web: format!("127.0.0.1:{port}"),
            jtl,
            api: Api::new(port, None),
        }
    }

    /// One topic ([`one_topic`]) with the `load` flags, the JTL and `--web`.
    fn flags<'a>(&'a self, load: &'a str) -> Vec<&'a str> {
        let mut rest = line(load);
        rest.extend(["--jtl", self.jtl.to_str().unwrap(), "--web", &self.web]);
        one_topic(&rest)
    }
}

/// The real binary against `sc`'s hub, one topic, reports into `out`, `--web web`, `rest`.
pub(crate) fn spawn_bin(
    sc: &Scenario,
    out: &std::path::Path,
    web: &str,
    rest: &[&str],
) -> std::process::Child {
    let out = out.to_str().unwrap();
    let mut args = vec![
        "--quiet",
        "--hub-url",
        &sc.hub.url,
        "--out",
        out,
        "--web",
        web,
    ];
    args.extend(one_topic(rest));
    crate::util::bin_child(&args, sc.dir.path(), std::process::Stdio::null())
}

/// A 2 s pause: no attempt starts between the pause and the resume (the JTL's timestamps,
/// at its 1 ms grain); `/metrics` counts it and says paused; the level's row notes the time
/// paused; then the level is ended early,
/// and its row holds every attempt up to then and none after (the hub's own count agrees).
#[tokio::test]
async fn a_pause_starts_nothing_and_an_ended_level_keeps_its_true_row() {
    let st = Steered::start(FaultConfig::default()).await;
    let (sc, jtl, api) = (&st.sc, &st.jtl, &st.api);
    let metrics_port = free_port();
    let metrics = format!("127.0.0.1:{metrics_port}");
    let steer = async {
        api.wait_level(0, 1).await;
        assert_eq!(api.post("pause", None).await, 200);
        // Counted in hubload's own series, and the gauge says paused.
        let metrics = reqwest::get(format!("http://127.0.0.1:{metrics_port}/metrics"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let line = |name: &str| {
            metrics
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.rsplit(' ').next())
                .map(String::from)
        };
        assert_eq!(
            line("hubload_control_actions_total{action=\"pause\"").as_deref(),
            Some("1"),
            "{metrics}"
        );
        assert_eq!(line("hubload_paused{").as_deref(), Some("1"), "{metrics}");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(api.post("resume", None).await, 200);
        api.wait_level(0, 5).await;
        assert_eq!(api.post("end_level", None).await, 200);
    };
    let mut flags = st.flags("--concurrency 4 --duration 60s");
    flags.extend(["--metrics-listen", &metrics]);
    let run = sc.run(&flags);
    let (outcome, ()) = tokio::join!(run, steer);
    assert!(!outcome.interrupted);
    let report = read_summary(sc.dir.path());
    let actions: Vec<&str> = report.control.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(actions, ["pause", "resume", "end_level"]);
    assert!(report
        .control
        .iter()
        .all(|e| e.client.starts_with("127.0.0.1:")));
    let (pause, resume, end) = (
        report.control[0].at_unix_ms,
        report.control[1].at_unix_ms,
        report.control[2].at_unix_ms,
    );
    let starts = starts(jtl);
    // The JTL's ms are truncated: an attempt started just before the pause shows its ms.
    let inside: Vec<_> = starts
        .iter()
        .filter(|&&t| t > pause && t < resume)
        .collect();
    assert!(inside.is_empty(), "started while paused: {inside:?}");
    assert!(starts.iter().any(|&t| t < pause) && starts.iter().any(|&t| t >= resume));
    assert!(
        starts.iter().all(|&t| t <= end),
        "an attempt started after the end"
    );
    let row = &report.levels[0];
    assert_eq!(row.derived.samples, starts.len() as u64);
    let paused = row.paused_s.expect("the row notes the pause");
    let asked = (resume - pause) as f64 / 1000.0;
    assert!(
        (paused - asked).abs() < 0.05,
        "paused {paused} s, asked {asked} s"
    );
    // TOTAL leaves the pause out too: its attempts over its span less the levels' pauses.
    let total = report.total.as_ref().expect("a TOTAL row");
    assert_eq!(total.paused_s, Some(paused));
    assert_eq!(total.derived.samples, row.derived.samples);
    let want = total.derived.samples as f64 / (total.derived.span_s - paused);
    assert!(
        (total.derived.throughput - want).abs() <= want * 1e-9,
        "TOTAL {} req/s, {} attempts over {} s less {paused} s paused is {want}",
        total.derived.throughput,
        total.derived.samples,
        total.derived.span_s
    );
    let hub = crate::util::settled(&sc.hub).await;
    assert_eq!(hub.publish.accepted, crate::util::count(row, "accepted"));
    // Marked on report.html's time chart.
    let html = std::fs::read_to_string(sc.dir.path().join("report.html")).unwrap();
    for action in ["pause", "resume", "end_level"] {
        assert!(
            html.contains(&format!(">{action}</text>")),
            "no {action} mark"
        );
    }
}

/// The open model at 200/s, changed to 400/s after 4 s, ended 4 s later: the JTL's starts
/// on each side of the change come at 200/s and 400/s, within 3 %.
#[tokio::test]
async fn a_rate_change_gives_the_new_rate_from_then_on() {
    let st = Steered::start(FaultConfig::default()).await;
    let (sc, jtl, api) = (&st.sc, &st.jtl, &st.api);
    let steer = async {
        api.wait_level(0, 4).await;
        assert_eq!(
            api.post("load", Some(r#"{"rate": 800}"#)).await,
            422,
            "above the run's highest rate"
        );
        assert_eq!(
            api.post("load", Some(r#"{"concurrency": 3}"#)).await,
            422,
            "not the closed model"
        );
        assert_eq!(api.post("load", Some(r#"{"rate": 400}"#)).await, 200);
        api.wait_level(0, 8).await;
        assert_eq!(api.post("end_level", None).await, 200);
        api.wait_level(1, 0).await;
        assert_eq!(api.post("end_level", None).await, 200);
    };
    let flags = st.flags("--rate 200,400 --duration 60s --max-inflight 200");
    let run = sc.run(&flags);
    let (outcome, ()) = tokio::join!(run, steer);
    assert!(!outcome.interrupted);
    let report = read_summary(sc.dir.path());
    let ev: Vec<_> = report
        .control
        .iter()
        .map(|e| (e.action.as_str(), e.value, e.level.as_str()))
        .collect();
    assert_eq!(
        ev,
        [
            ("rate", Some(400.0), "200/s"),
            ("end_level", None, "200/s"),
            ("end_level", None, "400/s")
        ]
    );
    let (change, end) = (report.control[0].at_unix_ms, report.control[1].at_unix_ms);
    let first_level: Vec<u64> = starts(jtl).into_iter().filter(|&t| t <= end).collect();
    let first = first_level[0];
    // Whole windows a second away from the edges: [first + 1 s, change) and [change + 1 s, end).
    let rate_in = |from: u64, to: u64| {
        let n = first_level.iter().filter(|&&t| t >= from && t < to).count();
        n as f64 * 1000.0 / (to - from) as f64
    };
    let before = rate_in(first + 1000, change);
    let after = rate_in(change + 1000, end);
    assert!(
        (before / 200.0 - 1.0).abs() <= 0.03,
        "before the change: {before}/s"
    );
    assert!(
        (after / 400.0 - 1.0).abs() <= 0.03,
        "after the change: {after}/s"
    );
}

/// A token set: no request without it, or with a wrong one, gets anything (401), a control
/// verb from another origin is refused (403) even with the token, and none of them changed
/// anything: the run was never paused and summary.json records no change.
#[tokio::test]
async fn requests_without_the_token_or_from_elsewhere_are_refused_and_change_nothing() {
    let sc = Scenario::start(FaultConfig::default()).await;
    let port = free_port();
    let web = format!("127.0.0.1:{port}");
    let token_file = sc.dir.path().join("token");
    std::fs::write(&token_file, "t0ken-for-the-test\n").unwrap();
    let good = Api::new(port, Some("t0ken-for-the-test"));
    let none = Api::new(port, None);
    let wrong = Api::new(port, Some("t0ken-for-the-tesT"));
    let probe = async {
        good.wait_level(0, 1).await;
        let http = reqwest::Client::new();
        for (who, api) in [("no token", &none), ("a wrong token", &wrong)] {
            for path in ["status", "events", "control", "config"] {
                let r = api
                    .with_token(http.get(format!("{}/v1/{path}", api.base)))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status().as_u16(), 401, "GET {path} with {who}");
            }
            let page = api
                .with_token(http.get(format!("{}/", api.base)))
                .send()
                .await
                .unwrap();
            assert_eq!(page.status().as_u16(), 401, "the page with {who}");
            for verb in ["pause", "end_level", "stop"] {
                assert_eq!(api.post(verb, None).await, 401, "POST {verb} with {who}");
            }
        }
        let cross = http
            .post(format!("{}/v1/pause", good.base))
            .bearer_auth("t0ken-for-the-test")
            .header("origin", "http://evil.example")
            .send()
            .await
            .unwrap();
        assert_eq!(cross.status().as_u16(), 403);
        let page = http
            .get(format!("{}/?token=t0ken-for-the-test", good.base))
            .send()
            .await
            .unwrap();
        assert_eq!(page.status().as_u16(), 200);
        let body = page.text().await.unwrap();
        assert!(
            !body.contains("t0ken-for-the-test"),
            "the page shows the token"
        );
        let config = good
            .with_token(http.get(format!("{}/v1/config", good.base)))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(!config.contains("t0ken-for-the-test"), "{config}");
        let s = good.status().await;
        assert_eq!(
            (s["paused"].as_bool(), s["controls"].as_u64()),
            (Some(false), Some(0))
        );
    };
    let flags = [
        "--tenants",
        "1",
        "--channels",
        "login",
        "--concurrency",
        "2",
        "--duration",
        "4s",
        "--web",
        &web,
        "--web-token-file",
        token_file.to_str().unwrap(),
    ];
    let run = sc.run(&flags);
    let (outcome, ()) = tokio::join!(run, probe);
    assert!(!outcome.interrupted);
    let report = read_summary(sc.dir.path());
    assert!(report.control.is_empty());
    assert!(report.levels[0].paused_s.is_none());
    let summary = std::fs::read_to_string(sc.dir.path().join("summary.json")).unwrap();
    assert!(!summary.contains("t0ken-for-the-test"));
}

/// Stop through the API, on the real binary: exit 130 (as a SIGINT), every report written and
/// marked partial, the stop in summary.json.
#[tokio::test]
async fn stop_writes_every_report_and_exits_130() {
    let sc = Scenario::start(FaultConfig::default()).await;
    let _turn = crate::util::SERIAL.lock().await;
    let port = free_port();
    let web = format!("127.0.0.1:{port}");
    let out = sc.dir.path().join("r");
    let mut child = spawn_bin(
        &sc,
        &out,
        &web,
        &["--concurrency", "2", "--duration", "60s"],
    );
    let api = Api::new(port, None);
    api.wait_level(0, 1).await;
    assert_eq!(api.post("stop", None).await, 200);
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "still running after a stop");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(status.code(), Some(130));
    let report = read_summary(&out);
    assert!(report.partial);
    assert_eq!(
        report.control.last().map(|e| e.action.as_str()),
        Some("stop")
    );
    for f in ["summary.json", "report.html", "aggregate.csv"] {
        assert!(out.join(f).is_file(), "{f} not written");
    }
}

/// A non-loopback `--web` without a token: refused before anything starts, one line naming
/// `--web-token-file`, exit 2.
#[test]
fn a_non_loopback_web_without_a_token_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = crate::util::hubload_command()
        .args(["--web", "0.0.0.0:0", "--requests", "1"])
        .current_dir(dir.path())
        .env_remove("HUBLOAD_WEB_TOKEN")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("--web-token-file"), "{err}");
    assert!(!dir.path().join("reports").exists(), "it ran");
}

/// The closed model at concurrency 4, lowered to 2 after 2 s and ended 2 s later: after the
/// change only workers 1 and 2 start attempts (JTL `threadName`), before it all four did.
#[tokio::test]
async fn a_lower_concurrency_leaves_only_that_many_workers_sending() {
    let st = Steered::start(FaultConfig::default()).await;
    let (sc, jtl, api) = (&st.sc, &st.jtl, &st.api);
    let steer = async {
        api.wait_level(0, 2).await;
        assert_eq!(api.post("load", Some(r#"{"concurrency": 5}"#)).await, 422);
        assert_eq!(api.post("load", Some(r#"{"rate": 10}"#)).await, 422);
        assert_eq!(api.post("load", Some(r#"{"concurrency": 2}"#)).await, 200);
        api.wait_level(0, 4).await;
        assert_eq!(api.post("end_level", None).await, 200);
    };
    let flags = st.flags("--concurrency 4 --duration 60s");
    let run = sc.run(&flags);
    let (outcome, ()) = tokio::join!(run, steer);
    assert!(!outcome.interrupted);
    let report = read_summary(sc.dir.path());
    assert_eq!(report.control[0].action, "concurrency");
    assert_eq!(report.control[0].value, Some(2.0));
    let change = report.control[0].at_unix_ms;
    let workers = |keep: &dyn Fn(u64) -> bool| {
        let mut w: Vec<String> = jtl_rows(jtl)
            .iter()
            .filter(|r| keep(r[0].parse().unwrap()))
            .map(|r| r[5].rsplit(' ').next().unwrap().to_string())
            .collect();
        w.sort();
        w.dedup();
        w
    };
    assert_eq!(workers(&|t| t < change), ["1-1", "1-2", "1-3", "1-4"]);
    // An attempt of worker 3 or 4 may have started in the change's own ms.
    assert_eq!(workers(&|t| t > change), ["1-1", "1-2"]);
}

/// The closed model at 10 with a sweep up to 20, each request held 200 ms by the hub: the
/// hub's own count of requests in flight stays at 10 until the concurrency is raised to 20
/// mid-level, then reaches 20 (not more); 21 is beyond the sweep and refused.
#[tokio::test]
async fn a_higher_concurrency_starts_that_many_workers_within_the_sweep() {
    let sc = Scenario::start(FaultConfig {
        latency_ms: 200,
        ..FaultConfig::default()
    })
    .await;
    let port = free_port();
    let web = format!("127.0.0.1:{port}");
    let api = Api::new(port, None);
    // The hub's in-flight count, polled (bounded) until `want` or the deadline; the highest seen.
    let peak = |want: u64| {
        let hub = sc.hub.state.clone();
        async move {
            let deadline = Instant::now() + Duration::from_secs(15);
            let mut most = 0;
            while most < want && Instant::now() < deadline {
                most = most.max(hub.inflight());
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            most
        }
    };
    let steer = async {
        api.wait_level(0, 1).await;
        assert_eq!(peak(10).await, 10, "the level's own 10 in flight");
        assert_eq!(api.post("load", Some(r#"{"concurrency": 21}"#)).await, 422);
        assert_eq!(api.post("load", Some(r#"{"concurrency": 20}"#)).await, 200);
        assert_eq!(peak(20).await, 20, "20 in flight after the raise");
        assert_eq!(api.post("end_level", None).await, 200);
        api.wait_level(1, 0).await;
        assert_eq!(api.post("end_level", None).await, 200);
    };
    let flags = one_topic(&["--concurrency", "10,20", "--duration", "60s", "--web", &web]);
    let run = sc.run(&flags);
    let (outcome, ()) = tokio::join!(run, steer);
    assert!(!outcome.interrupted);
    let report = read_summary(sc.dir.path());
    assert_eq!(report.control[0].action, "concurrency");
    assert_eq!(report.control[0].value, Some(20.0));
    let hub = crate::util::settled(&sc.hub).await;
    let accepted: u64 = report
        .levels
        .iter()
        .map(|r| crate::util::count(r, "accepted"))
        .sum();
    assert_eq!(hub.publish.accepted, accepted);
}

/// A closed sweep with a page, steered by nobody: each level starts the run's highest
/// concurrency of workers and holds those above its own, and at the level's deadline the held
/// ones end with it, so the run goes through every level and ends (bounded here, as a hang
/// would never end) with the hub's count and no control change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_sweep_with_a_page_ends_each_level_at_its_deadline() {
    let sc = Scenario::start(FaultConfig::default()).await;
    let web = format!("127.0.0.1:{}", free_port());
    let flags = one_topic(&["--concurrency", "1,2", "--duration", "1s", "--web", &web]);
    let o = tokio::time::timeout(Duration::from_secs(600), sc.run(&flags))
        .await
        .expect("the sweep never ended");
    assert!(!o.interrupted);
    let r = &o.report;
    let labels: Vec<&str> = r.levels.iter().map(|l| l.label.as_str()).collect();
    assert_eq!(labels, ["1", "2"]);
    assert!(r.control.is_empty());
    let samples: u64 = r.levels.iter().map(|l| l.derived.samples).sum();
    assert!(r.levels.iter().all(|l| l.derived.samples > 0));
    assert_eq!(samples, sc.hub_stats().await.publish.total());
}
