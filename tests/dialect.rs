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
    assert_eq!(total.samples, 40);
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
    assert_eq!((reg.topics, reg.accepted), (1, 1));
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
