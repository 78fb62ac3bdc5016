//! The websub dialect against the reference hub: thin pings, with and without registration,
//! reconciled exactly with the hub's own publish and register counts.

use crate::util::{count, run, TestHub};

const PREFIX: &str = "http://127.0.0.1:9/topics/";
const TOPIC: &str = "hubload.shared.schema.WSO2.v1.event";

async fn websub_run(
    hub: &TestHub,
    register: &str,
    out: &std::path::Path,
) -> hubload::run::RunOutcome {
    run(&[
        "--hub-url",
        &hub.url,
        "--dialect",
        "websub",
        "--topic-url-prefix",
        PREFIX,
        "--register",
        register,
        "--topics",
        "shared",
        "--concurrency",
        "4",
        "--requests",
        "40",
        "--out",
        out.to_str().unwrap(),
    ])
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thin_pings_reconcile_with_the_hub() {
    let hub = TestHub::start(Default::default()).await;
    let out = tempfile::tempdir().unwrap();
    let topic_url = format!("{PREFIX}{TOPIC}");

    // Never registered: the hub knows no such topic and denies every thin ping.
    let o = websub_run(&hub, "never", out.path()).await;
    let total = o.report.total.as_ref().unwrap();
    assert_eq!(total.derived.samples, 40);
    assert_eq!(count(total, "denied"), 40);
    assert!(o.report.registration.is_none());
    let s = hub.stats().await;
    assert_eq!((s.publish.denied, s.publish.total()), (40, 40));
    assert_eq!(s.register.total(), 0);
    assert_eq!(s.topics[&topic_url].denied, 40);

    // `--register always` registers the topic URL; its thin pings are accepted.
    let o = websub_run(&hub, "always", out.path()).await;
    let total = o.report.total.as_ref().unwrap();
    assert_eq!(count(total, "accepted"), 40);
    let reg = o.report.registration.as_ref().unwrap();
    assert_eq!((reg.result.topics, reg.accepted), (1, 1));
    // Registered now, `never` publishes without registering again.
    let o = websub_run(&hub, "never", out.path()).await;
    assert_eq!(count(o.report.total.as_ref().unwrap(), "accepted"), 40);
    let s = hub.stats().await;
    assert_eq!(
        (s.publish.accepted, s.publish.denied, s.publish.total()),
        (80, 40, 120)
    );
    assert_eq!((s.register.accepted, s.register.total()), (1, 1));
    assert_eq!(s.topics[&topic_url].published, 80);
    // Every request was a publish or the one register: thin pings name their mode in the body.
    assert_eq!(s.requests, 121);
    assert_eq!(s.other.total(), 0);
}

#[test]
fn thin_pings_on_the_wire_and_a_202_html_answer_is_accepted() {
    use crate::support::capture::{summary, Capture, Reply};
    // flask-websub's answer to a publish.
    let cap = Capture::start(Reply {
        status: "202 ACCEPTED",
        content_type: "text/html; charset=utf-8",
        body: "Request received: publish",
    });
    let dir = tempfile::tempdir().unwrap();
    let out = crate::util::bin(
        &[
            "--hub-url",
            &cap.url,
            "--dialect",
            "websub",
            "--topic-url-prefix",
            "http://topics.ns.svc:9100/t/",
            "--topics",
            "2",
            "--concurrency",
            "2",
            "--requests",
            "30",
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
    let reqs = cap.requests();
    // No registration: exactly the 30 publishes.
    assert_eq!(reqs.len(), 30);
    let mut per_topic = std::collections::BTreeMap::<String, u64>::new();
    for r in &reqs {
        assert!(r.head.starts_with("POST /hub HTTP/1.1\r\n"), "{}", r.head);
        assert_eq!(
            r.headers("content-type"),
            ["application/x-www-form-urlencoded"]
        );
        let body = String::from_utf8(r.body.clone()).unwrap();
        let pairs: Vec<(String, String)> = url::form_urlencoded::parse(body.as_bytes())
            .into_owned()
            .collect();
        assert_eq!(pairs.len(), 3, "{body}");
        assert_eq!(pairs[0], ("hub.mode".into(), "publish".into()));
        assert_eq!(
            (pairs[1].0.as_str(), pairs[2].0.as_str()),
            ("hub.topic", "hub.url")
        );
        assert_eq!(pairs[1].1, pairs[2].1);
        *per_topic.entry(pairs[1].1.clone()).or_default() += 1;
    }
    let json = summary(&dir.path().join("r"));
    assert_eq!(json["levels"][0]["stats"]["counts"]["accepted"], 30);
    // Per topic, what the server received equals what hubload counted.
    let read = crate::util::read_summary(&dir.path().join("r"));
    let (names, attempts) = (&read.topics, read.levels[0].topic_attempts());
    assert_eq!((names.len(), attempts.len()), (2, 2));
    for (name, n) in names.iter().zip(attempts) {
        let url = format!("http://topics.ns.svc:9100/t/{name}");
        assert_eq!(per_topic.get(&url).copied(), Some(n), "{url}");
    }
    assert_eq!(per_topic.values().sum::<u64>(), 30);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_prefix_topics_are_named_after_the_topic_servers_address() {
    let hub = TestHub::start(Default::default()).await;
    let out = tempfile::tempdir().unwrap();
    let port = crate::util::free_port();
    let listen = format!("127.0.0.1:{port}");
    let o = run(&[
        "--hub-url",
        &hub.url,
        "--dialect",
        "websub",
        "--topic-server-listen",
        &listen,
        "--register",
        "always",
        "--topics",
        "shared",
        "--concurrency",
        "2",
        "--requests",
        "10",
        "--out",
        out.path().to_str().unwrap(),
    ])
    .await;
    let s = hub.stats().await;
    let topic_url = format!("http://{listen}/topics/{TOPIC}");
    assert_eq!(s.topics[&topic_url].published, 10, "{:?}", s.topics.keys());
    // The reference hub takes fat pings only: it never fetches, and the section says so.
    let level = &o.report.levels[0];
    assert_eq!(count(level, "accepted"), 10);
    assert_eq!(level.topic_server, Some(Default::default()));
}
