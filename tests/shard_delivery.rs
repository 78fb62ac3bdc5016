//! Sharded runs with subscribers, merged: two shard processes (the Indexed Job contract) against
//! one reference hub deliver exactly what one process does against another, and what the hub
//! itself counted; the e2e histograms merge sample for sample. And a websub-dialect run's topic
//! server fetches, per shard, merge to what the fetching hub counted.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use hubload::report::document::Report;
use hubload::report::model::LevelReport;
use hubload::subscriber::DeliveryCounts;
use hubload_hub::HubConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::shards::{merge_logs, run_shards};
use crate::util::{count, read_summary, run, settled, TestHub};

const ARGS: &[&str] = &[
    "--tenants",
    "4",
    "--sps",
    "2",
    "--users",
    "3",
    "--seed",
    "7",
    "--requests",
    "60",
    "--concurrency",
    "2,4",
];

/// [`ARGS`] in the open model: two levels of 60 events at 100 and 200 per second.
fn open_args() -> Vec<&'static str> {
    let mut v = ARGS[..ARGS.len() - 2].to_vec();
    v.extend(["--rate", "100,200"]);
    v
}

/// One delivery in flight per subscriber, so the order check is meaningful (and 0) too.
fn one_in_flight() -> HubConfig {
    HubConfig {
        delivery_concurrency: 1,
        ..HubConfig::default()
    }
}

/// A level's delivery counters without those that depend on timing (`before_accepted`,
/// `out_of_order`, `e2e_from_body`).
fn exact(c: &DeliveryCounts) -> DeliveryCounts {
    DeliveryCounts {
        before_accepted: 0,
        out_of_order: 0,
        e2e_from_body: 0,
        ..*c
    }
}

/// A level's two e2e histograms, decoded from summary.json.
fn e2e(l: &LevelReport) -> [hubload::stats::Histogram; 2] {
    let h = l.delivery.as_ref().unwrap().histograms.as_ref().unwrap();
    [&h.from_start, &h.from_accepted].map(|b| hubload::stats::from_base64(b).unwrap())
}

/// Two shards with `per_topic` subscribers per topic, merged, against one single-process run,
/// both with `base` (two levels of 60 events).
async fn two_shards_deliver_as_one_process(per_topic: usize, base: &[&str]) {
    let n = per_topic.to_string();
    let hub = TestHub::start(one_in_flight()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut args = base.to_vec();
    args.extend(["--subscribers", &n, "--quiet", "--hub-url", &hub.url]);
    let logs = run_shards(dir.path(), 2, "deliver", &args).await;
    let merged = merge_logs(dir.path(), &logs);
    let shards: Vec<Report> = (0..2)
        .map(|i| read_summary(&dir.path().join(format!("shard{i}"))))
        .collect();
    let hub_stats = settled(&hub).await;

    let single_hub = TestHub::start(one_in_flight()).await;
    let out = tempfile::tempdir().unwrap();
    let mut args = base.to_vec();
    let out_dir = out.path().to_str().unwrap();
    args.extend([
        "--subscribers",
        &n,
        "--hub-url",
        &single_hub.url,
        "--out",
        out_dir,
    ]);
    let single = run(&args).await.report;

    // The same subscribers: every topic once, by the shard that owns it.
    let subs = merged.topics.len() as u64 * per_topic as u64;
    let (p, q) = (
        merged.subscription.as_ref().unwrap(),
        single.subscription.as_ref().unwrap(),
    );
    assert_eq!((p.requested, p.verified), (subs, subs), "{p:?}");
    assert_eq!((q.requested, q.verified), (subs, subs), "{q:?}");
    let parts: u64 = shards
        .iter()
        .map(|s| s.subscription.as_ref().unwrap().verified)
        .sum();
    assert_eq!(parts, subs);
    assert!(shards
        .iter()
        .all(|s| s.subscription.as_ref().unwrap().verified > 0));

    assert_eq!((merged.levels.len(), single.levels.len()), (2, 2));
    let mut delivered = 0;
    for (i, (m, s)) in merged.levels.iter().zip(&single.levels).enumerate() {
        assert_eq!(
            (count(m, "accepted"), count(s, "accepted")),
            (60, 60),
            "level {}",
            m.label
        );
        let (md, sd) = (m.delivery.as_ref().unwrap(), s.delivery.as_ref().unwrap());
        let c = &md.counts;
        assert_eq!(
            exact(c),
            exact(&sd.counts),
            "level {}: {c:?} vs {:?}",
            m.label,
            sd.counts
        );
        assert_eq!(
            (c.delivered, c.expected, c.lost),
            (60 * per_topic as u64, c.delivered, 0)
        );
        assert_eq!(
            (c.duplicates, c.unexpected, c.late, c.bad_signature),
            (0, 0, 0, 0)
        );
        // Owner striping: each delivery was checked by the process that published it, on its
        // monotonic clock, never from the body's wall-clock time.
        assert_eq!(c.e2e_from_body, 0, "level {}", m.label);
        // Per subscriber too: the same subscribers received the same numbers of events.
        let per_sub =
            |d: &hubload::report::model::delivery_report::DeliveryReport| -> BTreeMap<String, u64> {
                d.per_subscriber
                    .iter()
                    .map(|(k, v)| (k.clone(), v.delivered))
                    .collect()
            };
        assert_eq!(per_sub(md), per_sub(sd), "level {}", m.label);
        // The e2e histograms merge sample for sample: the merged count is the shards' counts
        // added, decoded from each summary, and every delivery has its sample.
        // added, decoded from each summary, and every delivery has its sample; added by the
        // HdrHistogram library, the shards' histograms are the merged one, value for value.
        let [from_start, from_accepted] = e2e(m);
        let parts: Vec<_> = shards.iter().map(|r| e2e(&r.levels[i])).collect();
        for (k, merged_h) in [&from_start, &from_accepted].into_iter().enumerate() {
            let sum: u64 = parts.iter().map(|p| p[k].len()).sum();
            assert_eq!(merged_h.len(), sum, "level {} histogram {k}", m.label);
            let mut added = parts[0][k].clone();
            added.add(&parts[1][k]).unwrap();
            assert_eq!(&added, merged_h, "level {} histogram {k}", m.label);
        }
        assert_eq!(from_start.len(), c.delivered);
        assert_eq!(from_accepted.len() + c.before_accepted, c.delivered);
        assert_eq!(md.e2e_us.max, from_start.max(), "level {}", m.label);
        delivered += c.delivered;
    }
    // The hub's own distribution counters equal the merged deliveries.
    let d = &hub_stats.distribution;
    assert_eq!(
        (d.published, d.delivered, d.retried, d.dropped, d.failed),
        (120, delivered, 0, 0, 0)
    );
    // delivery.csv of the merge has the single run's counter columns, level by level.
    let rows = |p: &std::path::Path| -> Vec<String> {
        let csv = std::fs::read_to_string(p.join("delivery.csv")).unwrap();
        csv.lines()
            .map(|l| l.split(',').take(8).collect::<Vec<_>>().join(","))
            .collect()
    };
    let merged_rows = rows(&dir.path().join("merged"));
    assert_eq!(merged_rows.len(), 4, "levels and TOTAL: {merged_rows:?}");
    assert_eq!(merged_rows, rows(out.path()));
    // Delivery thresholds judge the merged run (they fail on a run without deliveries).
    let judged = crate::util::bin(
        &[
            "merge",
            "shards.log",
            "--out",
            "judged",
            "--threshold",
            "lost=0",
            "--threshold",
            "duplicates=0",
        ],
        dir.path(),
    );
    crate::util::assert_exit(&judged, 0);
    let verdicts = read_summary(&dir.path().join("judged")).verdicts;
    assert!(
        !verdicts.is_empty() && verdicts.iter().all(|v| v.passed),
        "{verdicts:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shards_with_one_subscriber_deliver_exactly_as_one_process() {
    two_shards_deliver_as_one_process(1, ARGS).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shards_with_three_subscribers_deliver_exactly_as_one_process() {
    two_shards_deliver_as_one_process(3, ARGS).await;
}

/// The open model: each shard runs the whole schedule and sends its own topics' slots of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_open_model_shards_with_subscribers_deliver_exactly_as_one_process() {
    two_shards_deliver_as_one_process(1, &open_args()).await;
}

/// A thin-ping hub of this test's own: every publish form names a topic URL (`hub.url`); the
/// hub fetches it before answering 202, and counts the fetches answered 200 per topic name.
async fn fetching_hub() -> (String, Arc<Mutex<BTreeMap<String, u64>>>) {
    let fetched = Arc::new(Mutex::new(BTreeMap::new()));
    async fn publish(
        State(fetched): State<Arc<Mutex<BTreeMap<String, u64>>>>,
        body: Bytes,
    ) -> StatusCode {
        let Some(topic_url) = url::form_urlencoded::parse(&body)
            .find(|(k, _)| k == "hub.url")
            .and_then(|(_, v)| url::Url::parse(&v).ok())
        else {
            return StatusCode::BAD_REQUEST;
        };
        let at = format!(
            "{}:{}",
            topic_url.host_str().unwrap(),
            topic_url.port().unwrap()
        );
        let mut s = tokio::net::TcpStream::connect(&at).await.unwrap();
        let get = format!(
            "GET {} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            topic_url.path()
        );
        s.write_all(get.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        s.read_to_end(&mut answer).await.unwrap();
        if answer.starts_with(b"HTTP/1.1 200") {
            let name = topic_url
                .path_segments()
                .unwrap()
                .next_back()
                .unwrap()
                .to_owned();
            *fetched.lock().unwrap().entry(name).or_insert(0) += 1;
        }
        StatusCode::ACCEPTED
    }
    let app = axum::Router::new()
        .route("/hub", axum::routing::post(publish))
        .with_state(fetched.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hub", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, fetched)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_websub_shards_merge_their_topic_server_fetches_to_the_hubs() {
    let (hub_url, fetched) = fetching_hub().await;
    let dir = tempfile::tempdir().unwrap();
    let mut args = ARGS.to_vec();
    args.extend(["--dialect", "websub", "--quiet", "--hub-url", &hub_url]);
    let logs = run_shards(dir.path(), 2, "fetches", &args).await;
    let merged = merge_logs(dir.path(), &logs);
    let shards: Vec<Report> = (0..2)
        .map(|i| read_summary(&dir.path().join(format!("shard{i}"))))
        .collect();
    let fetched = fetched.lock().unwrap().clone();
    let mut by_topic = vec![0u64; merged.topics.len()];
    let mut total = 0;
    for (i, l) in merged.levels.iter().enumerate() {
        assert_eq!(count(l, "accepted"), 60, "level {}", l.label);
        let t = l
            .topic_server
            .as_ref()
            .expect("the merged topic_server section");
        // Each ping fetched its own event, once.
        assert_eq!(
            (t.fetches, t.fetched_new, t.fetched_again),
            (60, 60, 0),
            "{t:?}"
        );
        let parts: Vec<_> = shards
            .iter()
            .map(|r| r.levels[i].topic_server.clone().unwrap())
            .collect();
        assert!(parts.iter().all(|p| p.fetches > 0), "{parts:?}");
        assert_eq!(t.fetches, parts.iter().map(|p| p.fetches).sum::<u64>());
        for (k, n) in t.by_topic.iter().enumerate() {
            by_topic[k] += n;
        }
        total += t.fetches;
    }
    // The hub's own count of the fetches, in all and per topic.
    assert_eq!(total, fetched.values().sum::<u64>());
    let hubs: Vec<u64> = merged
        .topics
        .iter()
        .map(|name| fetched.get(&**name).copied().unwrap_or(0))
        .collect();
    assert_eq!(by_topic, hubs);
}
