//! The first failure of each class per level, as the server said it, in the report and in
//! summary.json: from the reference hub's fault injection and from a capture server.

use std::collections::BTreeMap;

use hubload_hub::FaultConfig;

use crate::support::capture::{summary, Capture, WEBSUB_HUB_400};
use crate::util::{bin, count, hub_with, run};

const TOPIC: &str = "hubload.shared.schema.WSO2.v1.event";

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_503s_are_shown_once_per_level_with_the_hub_page() {
    let hub = hub_with(FaultConfig {
        fail_503_every: Some(4),
        ..FaultConfig::default()
    })
    .await;
    let out = tempfile::tempdir().unwrap();
    let o = run(&[
        "--hub-url",
        &hub.url,
        "--topics",
        "shared",
        "--concurrency",
        "1,2",
        "--requests",
        "40",
        "--register",
        "never",
        "--out",
        out.path().to_str().unwrap(),
    ])
    .await;
    // Unregistered: 3 of 4 publishes are denied, every 4th is the injected 503.
    let page = "<html><head><title>503 Service Temporarily Unavailable</title></head><body>\
                <center><h1>503 Service Temporarily Unavailable</h1></center></body></html>";
    let want = map(&[
        (
            "denied",
            &format!("publish {TOPIC}: denied (HTTP 404: Topic [{TOPIC}] is not registered with the Hub)"),
        ),
        ("http_503", &format!("publish {TOPIC}: HTTP 503 ({page})")),
    ]);
    let s = hub.stats().await;
    assert_eq!((s.publish.denied, s.publish.fault_503), (60, 20));
    for l in &o.report.levels {
        assert_eq!(
            (count(l, "denied"), count(l, "http_503")),
            (30, 10),
            "{}",
            l.label
        );
        assert_eq!(l.first_failures, want, "level {}", l.label);
    }
    // The TOTAL row keeps none (it is not a level), and summary.json carries the same.
    assert!(o.report.total.as_ref().unwrap().first_failures.is_empty());
    let json = summary(out.path());
    for l in json["levels"].as_array().unwrap() {
        assert_eq!(l["first_failures"]["http_503"], want["http_503"].as_str());
    }
    let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    assert!(html.contains("<h2>First failures</h2>"));
    assert!(html.contains("503 Service Temporarily Unavailable&lt;/h1&gt;"));
}

#[test]
fn a_400_with_a_reason_is_shown_with_the_dialect_hint() {
    let cap = Capture::start(WEBSUB_HUB_400);
    let dir = tempfile::tempdir().unwrap();
    let out = bin(
        &[
            "--hub-url",
            &cap.url,
            "--topics",
            "shared",
            "--register",
            "never",
            "--concurrency",
            "2",
            "--requests",
            "10",
            "--out",
            "r",
        ],
        dir.path(),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(cap.requests().len(), 10);
    let json = summary(&dir.path().join("r"));
    let level = &json["levels"][0];
    assert_eq!(level["stats"]["counts"]["http_4xx"], 10);
    assert_eq!(
        level["first_failures"],
        serde_json::json!({
            "http_4xx": format!("publish {TOPIC}: HTTP 400 (Missing form argument: hub.mode); does this hub speak the websub dialect? try --dialect websub")
        })
    );
}
