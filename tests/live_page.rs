//! The live page in a real headless browser (Debian's chromium), opened in the middle of a
//! run: the figures its script put in the DOM (the corrected p99 and the generator's CPU
//! among them) are the API's status of that second, exactly, and its screenshot is the one
//! docs/live.md shows (`UPDATE_SCREENSHOT=1` rewrites it).

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{free_port, tool, Scenario};
use hubload_hub::FaultConfig;

/// The flags the brief asks of a headless chromium, with a fresh profile in `profile`.
fn chromium(bin: &std::path::Path, profile: &std::path::Path) -> Command {
    let mut c = Command::new(bin);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--window-size=1280,1500",
        // Stop loading after 6 s and dump or shoot what the script drew by then (the page's
        // stream never ends while the run goes, so "loaded" never comes on its own). 3 s was
        // too short for a browser started cold on a machine busy with the other tests: five
        // dumps in a row showed no second yet.
        "--timeout=6000",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// The text of the element with `id` in `dom`.
fn text_of(dom: &str, id: &str) -> String {
    let open = format!("id=\"{id}\">");
    let at = dom
        .find(&open)
        .unwrap_or_else(|| panic!("no #{id} in the DOM: {}", &dom[..dom.len().min(2000)]));
    let rest = &dom[at + open.len()..];
    rest[..rest.find('<').unwrap()].to_string()
}

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
    let http = reqwest::Client::new();
    let status = |http: reqwest::Client, base: String| async move {
        let r = http.get(format!("{base}/v1/status")).send().await.ok()?;
        let v: Value = serde_json::from_str(&r.text().await.ok()?).ok()?;
        Some(v["data"]["attributes"].clone())
    };
    let look = async {
        // The run's fourth second, at least.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(s) = status(http.clone(), base.clone()).await {
                if s["second"]["t"].as_u64().unwrap_or(0) >= 4 && s["level"]["index"] == 0 {
                    break;
                }
            }
            assert!(Instant::now() < deadline, "the run never started");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let shot = sc.dir.path().join("live.png");
        // While the browser runs (on a thread of its own: the server shares this one), every
        // second the API shows. A dump taken before the stream's first records arrived shows
        // no second yet: the browser looks again (a bounded number of times).
        let mut seen: BTreeMap<u64, Value> = BTreeMap::new();
        let mut tries = 0;
        let out = loop {
            tries += 1;
            let profile = tempfile::tempdir().unwrap();
            let mut dump = chromium(&bin, profile.path());
            dump.arg("--dump-dom").arg(&base);
            let dump = tokio::task::spawn_blocking(move || dump.output());
            tokio::pin!(dump);
            let out = loop {
                tokio::select! {
                    out = &mut dump => break out.unwrap().unwrap(),
                    _ = tokio::time::sleep(Duration::from_millis(100)) => {
                        if let Some(s) = status(http.clone(), base.clone()).await {
                            let sec = s["second"].clone();
                            seen.insert(sec["t"].as_u64().unwrap(), sec);
                        }
                    }
                }
            };
            let dom = String::from_utf8_lossy(&out.stdout);
            if dom.contains("id=\"t\">–") && tries < 5 {
                continue;
            }
            break out;
        };
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let profile2 = tempfile::tempdir().unwrap();
        let mut take = chromium(&bin, profile2.path());
        take.arg(format!("--screenshot={}", shot.display()))
            .arg(&base);
        let taken = tokio::task::spawn_blocking(move || take.output())
            .await
            .unwrap()
            .unwrap();
        assert!(taken.status.success());
        (String::from_utf8(out.stdout).unwrap(), seen, shot)
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
        "--web",
        &web,
    ];
    let run = sc.run(&flags);
    let (_, (dom, seen, shot)) = tokio::join!(run, look);
    let t: u64 = text_of(&dom, "t").parse().expect("the page shows a second");
    let api = seen
        .get(&t)
        .unwrap_or_else(|| panic!("second {t} never in the API's status ({:?})", seen.keys()));
    for (id, key) in [
        ("achieved", "achieved_rps"),
        ("offered", "offered"),
        ("p50", "p50_ms"),
        ("p99", "p99_ms"),
        // The open model's corrected line and the generator's CPU, panels of the same second.
        ("cp99", "corrected_p99_ms"),
        ("cpu", "cpu_pct"),
    ] {
        assert_eq!(text_of(&dom, id), shown(&api[key]), "#{id} at second {t}");
    }
    assert_eq!(text_of(&dom, "level"), api["label"].as_str().unwrap());
    assert_eq!(text_of(&dom, "errors"), api["errors"].to_string());
    assert_eq!(text_of(&dom, "inflight"), api["inflight"].to_string());
    assert_eq!(text_of(&dom, "paused"), "no");
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    if std::env::var_os("UPDATE_SCREENSHOT").is_some() {
        let docs =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/live-screenshot.png");
        std::fs::write(docs, png).unwrap();
    }
}
