//! The live page's server-metrics and delivery panels in a real run against the reference
//! hub, its `/metrics` scraped and hubload's own subscribers listening: every scraped value the
//! stream carries is one the scraper took for summary.json, and the stream's per-second
//! deliveries add up to summary.json's (and the hub's) counts, as its run totals do; and each
//! level's seconds add up to its row, class by class, its last part included.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hubload::result::Class;
use hubload::stats::Counts;
use serde_json::Value;

use crate::delivery::sum;
use crate::live_control::Api;
use crate::util::{free_port, settled, Scenario};
use hubload_hub::FaultConfig;

/// The hub's counter the test follows.
const SERIES: &str = "hub_distribution_total";
const LABELS: &str = "{kind=\"published\"}";

/// Every record of a finished run's stream, as (event, data).
pub(crate) async fn stream(api: &Api) -> Vec<(String, Value)> {
    let r = api
        .http
        .get(format!("{}/v1/events", api.base))
        .send()
        .await
        .unwrap();
    // The stream of a finished run ends with its `end` record.
    let text = tokio::time::timeout(Duration::from_secs(30), r.text())
        .await
        .expect("the stream of a finished run ends")
        .unwrap();
    text.split("\n\n")
        .filter_map(|block| {
            let field = |name: &str| {
                block
                    .lines()
                    .find_map(|l| l.strip_prefix(name).map(str::trim_start))
            };
            Some((
                field("event:")?.to_string(),
                serde_json::from_str(field("data:")?).unwrap(),
            ))
        })
        .collect()
}

/// Once the run serving on `port` (with `--web-linger`) has finished: its whole stream and its
/// last status; then the stop that ends its linger.
async fn after_the_run(api: &Api, port: u16) -> (Vec<(String, Value)>, Value) {
    // In-process runs take turns (util::SERIAL): the server answers once this one's began.
    let deadline = Instant::now() + Duration::from_secs(600);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "the run never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    crate::live_linger::finished(api).await;
    let records = stream(api).await;
    let status = api.status().await;
    assert_eq!(api.post("stop", None).await, 200);
    (records, status)
}

/// The followed series' value in a `server` round, if it has it.
pub(crate) fn followed(server: &Value) -> Option<f64> {
    server["series"]
        .as_array()?
        .iter()
        .find(|p| p["series"] == SERIES && p["labels"] == LABELS)
        .and_then(|p| p["value"].as_f64())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_carries_the_scraped_values_and_deliveries_that_add_up_to_the_summary() {
    let sc = Scenario::start(FaultConfig::default()).await;
    let port = free_port();
    let web = format!("127.0.0.1:{port}");
    let metrics = format!("http://{}/metrics", sc.hub.addr);
    let api = Api::new(port, None);
    let flags = [
        "--tenants",
        "2",
        "--sps",
        "2",
        "--users",
        "3",
        "--rate",
        "40,80",
        "--duration",
        "3s",
        "--subscribers",
        "2",
        "--server-metrics",
        &metrics,
        "--server-metrics-match",
        "^hub_(distribution_total|inflight)$",
        "--web",
        &web,
        "--web-linger",
        "60s",
    ];
    let (o, (records, status)) = tokio::join!(sc.run(&flags), after_the_run(&api, port));
    let r = &o.report;
    let hub = settled(&sc.hub).await;
    let seconds: Vec<&Value> = records
        .iter()
        .filter(|(k, _)| k == "second")
        .map(|(_, v)| v)
        .collect();
    assert!(seconds.len() >= 4, "{} seconds", seconds.len());

    // Deliveries: the seconds add up to the levels' counts, which are the hub's.
    let delivered = sum(r, |c| c.delivered);
    let expected = sum(r, |c| c.expected);
    let per_second = |k: &str| -> u64 {
        seconds
            .iter()
            .map(|s| s["delivery"][k].as_u64().unwrap_or_else(|| panic!("{s}")))
            .sum()
    };
    assert_eq!(delivered, hub.distribution.delivered);
    assert!(delivered > 0);
    assert_eq!(
        (per_second("delivered"), per_second("owed")),
        (delivered, expected)
    );
    let last = seconds.last().unwrap();
    assert_eq!(
        (
            last["delivery"]["delivered_total"].as_u64(),
            last["delivery"]["owed_total"].as_u64(),
            last["delivery"]["backlog"].as_u64()
        ),
        (Some(delivered), Some(expected), Some(0))
    );
    // The API's status at the end shows the same last second.
    assert_eq!(&status["second"], *last);
    assert!(
        seconds
            .iter()
            .any(|s| s["delivery"]["delivered"].as_u64() > Some(0)
                && s["delivery"]["p99_ms"].as_f64().is_some()),
        "no second with deliveries and their latency"
    );

    // The server's series: every value the stream carries is a sample summary.json's levels
    // hold (the same scrapes), and the stream has several.
    let taken: Vec<f64> = r
        .levels
        .iter()
        .flat_map(|l| &l.server.as_ref().expect("a server section").series)
        .filter(|s| s.series == SERIES && s.labels == LABELS)
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .collect();
    let carried: Vec<f64> = seconds
        .iter()
        .filter_map(|s| followed(&s["server"]))
        .collect();
    assert!(carried.len() >= 3, "{carried:?}");
    for v in &carried {
        assert!(taken.contains(v), "{v} is no sample of {taken:?}");
    }
    // The last round is the last level's last sample, taken once its publishes had ended:
    // every publish the hub accepted for distribution.
    assert_eq!(
        followed(&status["server"]),
        Some(hub.distribution.published as f64)
    );
    assert_eq!(
        taken.last().copied(),
        Some(hub.distribution.published as f64)
    );
}

/// Each level's `second` records, by class, added up (`level` is the record's level index).
pub(crate) fn per_level(seconds: &[&Value]) -> BTreeMap<u64, Counts> {
    let mut by_level = BTreeMap::<u64, Counts>::new();
    for s in seconds {
        let Some(level) = s["level"].as_u64() else {
            assert!(
                s["by_class"].as_object().is_none_or(|m| m.is_empty()),
                "attempts outside a level: {s}"
            );
            continue;
        };
        let m: BTreeMap<String, u64> = serde_json::from_value(s["by_class"].clone()).unwrap();
        *by_level.entry(level).or_default() += &Counts::from_map(&m).unwrap();
    }
    by_level
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_levels_seconds_add_up_to_its_row_class_by_class() {
    let sc = Scenario::start(FaultConfig {
        fail_503_every: Some(7),
        ..FaultConfig::default()
    })
    .await;
    let port = free_port();
    let web = format!("127.0.0.1:{port}");
    let api = Api::new(port, None);
    let flags = [
        "--rate",
        "60,120,90",
        "--duration",
        "1500ms",
        "--web",
        &web,
        "--web-linger",
        "60s",
    ];
    let (o, (records, _)) = tokio::join!(sc.run(&flags), after_the_run(&api, port));
    let r = &o.report;
    let seconds: Vec<&Value> = records
        .iter()
        .filter(|(k, _)| k == "second")
        .map(|(_, v)| v)
        .collect();
    let by_level = per_level(&seconds);
    assert_eq!(by_level.len(), 3, "{by_level:?}");
    for (i, l) in r.levels.iter().enumerate() {
        let summed = by_level[&(i as u64)];
        assert_eq!(summed, l.stats.counts, "level {}", l.label);
        assert_eq!(summed.total(), l.derived.samples, "level {}", l.label);
        assert!(
            summed.get(Class::Http503) > 0 && summed.get(Class::Accepted) > 0,
            "level {}: {summed:?}",
            l.label
        );
    }
    // ... and the hub's own count of what it was sent.
    let hub = settled(&sc.hub).await;
    let total: u64 = by_level.values().map(Counts::total).sum();
    assert_eq!(total, hub.publish.total());
    assert_eq!(
        by_level
            .values()
            .map(|c| c.get(Class::Http503))
            .sum::<u64>(),
        hub.publish.fault_503
    );
}
