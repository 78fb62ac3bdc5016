//! hubload's own subscriber fleet (`--subscribers`) against flask-websub (PyPI, a hub this
//! repository did not write) in the websub dialect: the fleet subscribes to the topic URLs the
//! thin pings name, and its delivered, lost and duplicate counts reconcile exactly, per
//! subscriber and per topic, with the deliveries flask-websub itself logged and signed.
//!
//! Needs `python3` with `flask-websub` 0.4.x and `celery` (tests/support/flask_websub_hub.py);
//! without them the test is skipped loudly, or fails under `CI`.

use std::collections::BTreeMap;
use std::process::Command;

use hmac::{Hmac, Mac};
use hubload::result::Class;
use hubload::workload::Workload;
use sha2::Sha256;

use crate::flask_websub::{flask_ready, websub_run, FlaskHub, WebsubRun};
use crate::util::{assert_no_delivery_fault, read_summary, run};

const SECRET: &str = "flask-websub-fleet-secret";
const LEVELS: [u64; 2] = [1, 4];
const REQUESTS: u64 = 20;
const PER_TOPIC: usize = 2;

/// One line of the hub's own delivery log (the launcher's `DELIVERY_LOG`).
#[derive(Debug, serde::Deserialize)]
struct HubDelivery {
    callback: String,
    link: Option<String>,
    signature: Option<String>,
    body: String,
    status: Option<u16>,
    error: Option<String>,
}

/// What the hub's own log says it delivered: 2xx POSTs per callback path `<topic>/<index>`,
/// each checked here (signature under the secret, the topic URL in `Link`, the event's topic).
fn hub_deliveries(
    log: &str,
    workload: &Workload,
    topic_urls: &[String],
) -> BTreeMap<String, Vec<u64>> {
    let mut per_sub: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for line in log.lines().filter(|l| !l.trim().is_empty()) {
        let d: HubDelivery = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(d.error, None, "the hub failed a delivery: {line}");
        let status = d.status.expect("a status or an error");
        assert!((200..300).contains(&status), "answered {status}: {line}");
        let key = d
            .callback
            .split("/cb/")
            .nth(1)
            .unwrap_or_else(|| panic!("not a fleet callback: {}", d.callback))
            .to_owned();
        let topic: usize = key.split('/').next().unwrap().parse().unwrap();
        // Signed by the hub with the fleet's secret, checked here independently.
        let sig = d
            .signature
            .as_deref()
            .and_then(|s| s.strip_prefix("sha256="))
            .and_then(|h| hex::decode(h).ok())
            .unwrap_or_else(|| panic!("unsigned delivery: {line}"));
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(SECRET.as_bytes()).unwrap();
        mac.update(d.body.as_bytes());
        assert!(mac.verify_slice(&sig).is_ok(), "bad signature: {line}");
        // The hub delivered for the topic URL the subscriber subscribed to.
        let link = d.link.unwrap_or_default();
        assert!(
            link.contains(&format!("<{}>; rel=\"self\"", topic_urls[topic])),
            "Link {link:?} names another topic than {}",
            topic_urls[topic]
        );
        let (seq, _) = workload
            .parse_identity(d.body.as_bytes())
            .unwrap_or_else(|| panic!("not an event of this run: {line}"));
        assert_eq!(workload.topic_of_seq(seq), topic, "seq {seq} to its topic");
        per_sub.entry(key).or_default().push(seq);
    }
    per_sub
}

/// Subscriptions flask-websub still holds in its database.
fn stored_subscriptions(db: &std::path::Path) -> u64 {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from hub').fetchone()[0])",
        ])
        .arg(db)
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// flask-websub in `dir`, logging every delivery to `deliveries.jsonl` there, and ready; the
/// log's path.
async fn logging_hub(dir: &std::path::Path) -> (FlaskHub, std::path::PathBuf) {
    let log = dir.join("deliveries.jsonl");
    let mut hub = FlaskHub::start_logging(dir, &[&log]);
    hub.ready().await;
    (hub, log)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hubload_subscribers_reconcile_with_flask_websub_deliveries() {
    if !flask_ready("flask_websub_fleet") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (hub, log) = logging_hub(dir.path()).await;

    let out = dir.path().join("out");
    let per_topic = PER_TOPIC.to_string();
    // flask-websub keeps subscriptions in SQLite, which fails concurrent writers with a 500
    // ("database is locked"): subscribe one at a time.
    let extra = [
        "--subscribers",
        &per_topic,
        "--subscriber-secret",
        SECRET,
        "--register-concurrency",
        "1",
    ];
    let WebsubRun {
        prefix,
        args,
        workload,
    } = websub_run(&hub.url, &out, &LEVELS, REQUESTS, &extra);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let topic_urls: Vec<String> = workload
        .topics()
        .iter()
        .map(|t| format!("{prefix}{}", t.name))
        .collect();
    let topics = topic_urls.len();
    assert_eq!(topics, 4);

    run(&args).await;
    let summary = read_summary(&out);
    let subs = (topics * PER_TOPIC) as u64;
    let sub = summary.subscription.as_ref().expect("a subscription phase");
    assert_eq!(
        (sub.requested, sub.verified, sub.refused),
        (subs, subs, 0),
        "{sub:?}\n{}",
        hub.log()
    );
    // The fleet unsubscribed from the same topic URLs: flask-websub holds nothing any more.
    let unsub = summary.unsubscription.as_ref().expect("unsubscribed");
    assert_eq!((unsub.requested, unsub.verified), (subs, subs), "{unsub:?}");
    assert_eq!(stored_subscriptions(&dir.path().join("hub.sqlite3")), 0);

    // hubload's side: per level and per subscriber, delivered == the topic's accepted pings.
    let mut fleet: BTreeMap<String, u64> = BTreeMap::new();
    let mut accepted_per_topic = vec![0u64; topics];
    let mut received = 0;
    for l in &summary.levels {
        assert_eq!(l.stats.counts.get(Class::Accepted), REQUESTS, "{}", l.label);
        let d = l.delivery.as_ref().expect("a delivery section");
        let c = &d.counts;
        assert_no_delivery_fault(c, &l.label);
        assert_eq!(c.delivered, REQUESTS * PER_TOPIC as u64, "{}", l.label);
        let mut level_accepted = vec![0u64; topics];
        for t in &l.topics {
            level_accepted[t.topic] = t.stats.counts.get(Class::Accepted);
        }
        for (key, sc) in &d.per_subscriber {
            let topic: usize = key.split('/').next().unwrap().parse().unwrap();
            assert_eq!(sc.expected, level_accepted[topic], "{}: {key}", l.label);
            assert_eq!(sc.delivered, level_accepted[topic], "{}: {key}", l.label);
            *fleet.entry(key.clone()).or_default() += sc.delivered;
        }
        for (a, b) in accepted_per_topic.iter_mut().zip(&level_accepted) {
            *a += b;
        }
        received += c.received;
    }
    assert_eq!(fleet.len() as u64, subs, "every subscriber reported");

    // flask-websub's side, from its own log: each subscriber got each event of its topic once,
    // signed, and exactly as many as hubload counted delivered.
    let hub_side = hub_deliveries(
        &std::fs::read_to_string(&log).unwrap(),
        &workload,
        &topic_urls,
    );
    let hub_counts: BTreeMap<String, u64> = hub_side
        .iter()
        .map(|(k, v)| (k.clone(), v.len() as u64))
        .collect();
    assert_eq!(
        hub_counts, fleet,
        "per subscriber: hub delivered vs hubload"
    );
    assert_eq!(
        received,
        hub_counts.values().sum::<u64>(),
        "every POST received"
    );
    for (key, seqs) in &hub_side {
        let topic: usize = key.split('/').next().unwrap().parse().unwrap();
        let mut unique = seqs.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(
            unique.len(),
            seqs.len(),
            "{key}: the hub sent an event twice"
        );
        assert_eq!(
            seqs.len() as u64,
            accepted_per_topic[topic],
            "{key}: delivered = pings accepted for its topic"
        );
    }
    let total = REQUESTS * LEVELS.len() as u64;
    assert_eq!(accepted_per_topic.iter().sum::<u64>(), total);
}

/// Subscription churn against flask-websub: subscribers leave and come back while thin pings
/// go out; flask-websub's own delivery log still equals what hubload's fleet received, per
/// subscriber, and nothing an active subscription was owed is lost or duplicated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn churning_subscribers_reconcile_with_flask_websub_deliveries() {
    if !flask_ready("flask_websub_fleet churn") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (hub, log) = logging_hub(dir.path()).await;
    let out = dir.path().join("out");
    let per_topic = PER_TOPIC.to_string();
    let extra = [
        "--subscribers",
        &per_topic,
        "--subscriber-secret",
        SECRET,
        "--subscriber-churn",
        "20",
        "--register-concurrency",
        "1",
    ];
    let WebsubRun {
        prefix,
        args,
        workload,
    } = websub_run(&hub.url, &out, &[2], 120, &extra);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let topic_urls: Vec<String> = workload
        .topics()
        .iter()
        .map(|t| format!("{prefix}{}", t.name))
        .collect();

    run(&args).await;
    let summary = read_summary(&out);
    let l = &summary.levels[0];
    let d = l.delivery.as_ref().expect("a delivery section");
    let (c, ch) = (&d.counts, d.churn.as_ref().expect("a churn section"));
    eprintln!("flask-websub churn: {ch:?}\n  counts: {c:?}");
    assert!(ch.stats.resubscribed > 0, "{ch:?}\n{}", hub.log());
    assert_eq!(
        (ch.stats.unsubscribed, ch.stats.failed),
        (ch.stats.resubscribed, 0),
        "{ch:?}"
    );
    assert_eq!(
        (
            c.lost,
            c.duplicates,
            c.bad_signature,
            c.body_mismatch,
            c.unexpected
        ),
        (0, 0, 0, 0, 0),
        "{c:?} {ch:?}"
    );
    // flask-websub's own log against hubload's counts, per subscriber.
    let hub_side = hub_deliveries(
        &std::fs::read_to_string(&log).unwrap(),
        &workload,
        &topic_urls,
    );
    let hub_counts: BTreeMap<String, u64> = hub_side
        .iter()
        .map(|(k, v)| (k.clone(), v.len() as u64))
        .collect();
    let fleet: BTreeMap<String, u64> = d
        .per_subscriber
        .iter()
        .filter(|(_, sc)| sc.received > 0)
        .map(|(k, sc)| (k.clone(), sc.delivered))
        .collect();
    assert_eq!(
        hub_counts, fleet,
        "per subscriber: hub delivered vs hubload"
    );
    assert_eq!(c.received, hub_counts.values().sum::<u64>());
    for (key, seqs) in &hub_side {
        let mut unique = seqs.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(
            unique.len(),
            seqs.len(),
            "{key}: the hub sent an event twice"
        );
    }
    // Every subscriber is back and then unsubscribed at the end: flask-websub holds nothing.
    let unsub = summary.unsubscription.as_ref().expect("unsubscribed");
    assert_eq!(unsub.verified, unsub.requested, "{unsub:?}");
    assert_eq!(stored_subscriptions(&dir.path().join("hub.sqlite3")), 0);
}
