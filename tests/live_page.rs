//! The live page in a real headless browser (Debian's chromium), opened in the middle of a
//! run: the figures its script put in the DOM (the corrected p99, the generator's CPU, the
//! delivery panel and the server-metrics table among them) are the API's status of that
//! second, exactly, and its screenshot is the one docs/live.md shows (`UPDATE_SCREENSHOT=1`
//! rewrites it).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::browser::Browser;
use crate::util::{free_port, tool, Scenario};
use hubload_hub::FaultConfig;

/// The page elements the test reads, each the id of one figure.
const IDS: [&str; 17] = [
    "t",
    "level",
    "achieved",
    "offered",
    "p50",
    "p99",
    "cp99",
    "cpu",
    "errors",
    "inflight",
    "paused",
    "ddelivered",
    "dowed",
    "dbacklog",
    "dp50",
    "dp99",
    "dtotal",
];

/// The server-metrics table's rows as `{key: [value, rate]}`, as the page shows them.
const SERVER_ROWS: &str = "Object.fromEntries([...document.querySelectorAll('#server tr')]\
    .map(tr => [tr.dataset.key, [tr.querySelector('.v').textContent, \
    tr.querySelector('.r').textContent]]))";

/// The page's way of showing a number (one decimal, none when whole; "–" for none).
fn shown(v: &Value) -> String {
    match v.as_f64() {
        Some(x) => {
            let r = (x * 10.0).round() / 10.0;
            if r.fract() == 0.0 {
                format!("{}", r as i64)
            } else {
                format!("{r}")
            }
        }
        None => "–".into(),
    }
}

#[tokio::test]
async fn a_browser_opened_mid_run_shows_the_status_of_that_second() {
    let Some(bin) = tool("chromium", "tests/live_page.rs") else {
        return;
    };
    let sc = Scenario::start(FaultConfig::default()).await;
    let port = free_port();
    let web = format!("127.0.0.1:{port}");
    let base = format!("http://127.0.0.1:{port}");
    let metrics = format!("http://{}/metrics", sc.hub.addr);
    let http = reqwest::Client::new();
    let status = |http: reqwest::Client, base: String| async move {
        let r = http.get(format!("{base}/v1/status")).send().await.ok()?;
        let v: Value = serde_json::from_str(&r.text().await.ok()?).ok()?;
        Some(v["data"]["attributes"].clone())
    };
    let look = async {
        // The page's server answers once the run has started.
        let deadline = Instant::now() + Duration::from_secs(60);
        while status(http.clone(), base.clone()).await.is_none() {
            assert!(Instant::now() < deadline, "the run never started");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut browser = Browser::open(&bin, &base).await;
        // Every second the API shows, and the page's figures read in one script (so they are
        // of one second), until the page shows a second the API has shown: a bounded poll.
        let mut seen: BTreeMap<u64, Value> = BTreeMap::new();
        let read = format!(
            "JSON.stringify(Object.assign(Object.fromEntries({:?}.map(id => [id, \
             (document.getElementById(id) || {{}}).textContent ?? null])), \
             {{server: JSON.stringify({SERVER_ROWS})}}))",
            IDS
        );
        let deadline = Instant::now() + Duration::from_secs(60);
        let page = loop {
            assert!(
                Instant::now() < deadline,
                "the page never showed a second: {seen:?}"
            );
            if let Some(s) = status(http.clone(), base.clone()).await {
                let sec = s["second"].clone();
                if let Some(t) = sec["t"].as_u64() {
                    seen.insert(t, sec);
                }
            }
            let page: BTreeMap<String, Option<String>> =
                serde_json::from_str(browser.eval(&read).await.as_str().unwrap()).unwrap();
            let t = page["t"].as_deref().and_then(|t| t.parse::<u64>().ok());
            // At least the run's fourth second, so the page has had a stream to draw, and one
            // that brought a scrape round, so the table is that second's.
            if t.is_some_and(|t| t >= 4 && seen.get(&t).is_some_and(|s| !s["server"].is_null())) {
                break page;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let png = browser.screenshot().await;
        (page, seen, png)
    };
    let flags = [
        "--tenants",
        "1",
        "--channels",
        "login",
        "--rate",
        "100",
        "--duration",
        "45s",
        "--subscribers",
        "1",
        "--server-metrics",
        &metrics,
        "--server-metrics-match",
        "^hub_(distribution_total|inflight)$",
        "--web",
        &web,
    ];
    let run = sc.run(&flags);
    let (_, (page, seen, png)) = tokio::join!(run, look);
    let text = |id: &str| {
        page[id]
            .clone()
            .unwrap_or_else(|| panic!("no #{id} in the page"))
    };
    let t: u64 = text("t").parse().unwrap();
    let api = &seen[&t];
    for (id, key) in [
        ("achieved", "achieved_rps"),
        ("offered", "offered"),
        ("p50", "p50_ms"),
        ("p99", "p99_ms"),
        // The open model's corrected line and the generator's CPU, panels of the same second.
        ("cp99", "corrected_p99_ms"),
        ("cpu", "cpu_pct"),
    ] {
        assert_eq!(text(id), shown(&api[key]), "#{id} at second {t}");
    }
    assert_eq!(text("level"), api["label"].as_str().unwrap());
    assert_eq!(text("errors"), api["errors"].to_string());
    assert_eq!(text("inflight"), api["inflight"].to_string());
    assert_eq!(text("paused"), "no");
    // The delivery panel: the second's figures and the run's deliveries so far.
    let d = &api["delivery"];
    for (id, key) in [
        ("ddelivered", "delivered"),
        ("dowed", "owed"),
        ("dbacklog", "backlog"),
        ("dtotal", "delivered_total"),
    ] {
        assert_eq!(text(id), d[key].to_string(), "#{id} at second {t}: {d}");
    }
    assert_eq!(text("dp50"), shown(&d["p50_ms"]), "#dp50 at second {t}");
    assert_eq!(text("dp99"), shown(&d["p99_ms"]), "#dp99 at second {t}");
    // The server-metrics table: the round that second brought, row by row.
    let rows: BTreeMap<String, (String, String)> = serde_json::from_str(&text("server")).unwrap();
    let round = api["server"]["series"].as_array().unwrap();
    assert!(!round.is_empty(), "{api}");
    assert_eq!(rows.len(), round.len(), "{rows:?}");
    for p in round {
        let key = format!(
            "{} {}{}",
            p["source"].as_str().unwrap(),
            p["series"].as_str().unwrap(),
            p["labels"].as_str().unwrap()
        );
        assert_eq!(
            rows.get(&key),
            Some(&(shown(&p["value"]), shown(&p["rate"]))),
            "{key} at second {t}"
        );
    }
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    if std::env::var_os("UPDATE_SCREENSHOT").is_some() {
        let docs =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/live-screenshot.png");
        std::fs::write(docs, png).unwrap();
    }
}
