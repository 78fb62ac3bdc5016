//! The websub.rocks hub conformance checks 100–106, each with a test subscriber on port 0.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use hubload_hub::HubConfig;

use crate::util::{eventually, hub_with_subscriber, subscribe, subscribers, Subscriber, TestHub};

const JSON: &str = "application/json";

fn param<'a>(q: &'a [(String, String)], key: &str) -> Option<&'a str> {
    q.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

async fn wait_deliveries(sub: &Subscriber, n: usize) {
    eventually(&format!("{n} deliveries"), || sub.delivered() >= n).await;
}

/// Publish and check that the one subscriber got exactly this content with the right headers.
async fn publish_and_check(hub: &TestHub, sub: &Subscriber, topic: &str, ct: &str, body: &[u8]) {
    let before = sub.delivered();
    assert_eq!(hub.publish(topic, ct, body).await.0, 200);
    wait_deliveries(sub, before + 1).await;
    let d = sub.deliveries().pop().unwrap();
    assert_eq!(&d.body[..], body, "byte-identical body");
    assert_eq!(d.headers["content-type"], ct);
    assert_eq!(
        d.headers["link"],
        format!(
            "<http://{}/>; rel=\"hub\", <{topic}>; rel=\"self\"",
            hub.addr
        )
    );
}

#[tokio::test]
async fn t100_plain_subscription_gets_an_unsigned_delivery() {
    let hub = TestHub::default().await;
    let sub = Subscriber::start().await;
    let topic = "https://example.test/blog";
    hub.register(topic).await;
    subscribe(&hub, topic, &sub.callback("cb"), &[]).await;
    let v = sub.verifications();
    assert_eq!(v.len(), 1);
    assert_eq!(param(&v[0], "hub.mode"), Some("subscribe"));
    assert_eq!(param(&v[0], "hub.topic"), Some(topic));
    assert_eq!(param(&v[0], "hub.lease_seconds"), Some("864000"));
    assert!(param(&v[0], "hub.challenge").is_some_and(|c| c.len() >= 16));
    publish_and_check(&hub, &sub, topic, "text/html", b"<p>hello</p>").await;
    assert!(sub.deliveries()[0].headers.get("x-hub-signature").is_none());
    let s = hub.stats().await;
    assert_eq!(s.subscribe.accepted, 1);
    assert_eq!(
        (s.topics[topic].delivered, s.distribution.delivered),
        (1, 1)
    );
    assert_eq!(s.distribution.pending, 0);
    hub.stop().await;
}

#[tokio::test]
async fn t101_delivery_with_a_secret_is_signed() {
    let (hub, sub) = hub_with_subscriber(HubConfig::default()).await;
    let secret = "a-secret-under-200-bytes";
    subscribe(&hub, "t", &sub.callback("cb"), &[("hub.secret", secret)]).await;
    let body = br#"{"iss":"x","jti":"1"}"#;
    publish_and_check(&hub, &sub, "t", JSON, body).await;
    let d = &sub.deliveries()[0];
    let sig = d.headers["x-hub-signature"].to_str().unwrap();
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body);
    assert_eq!(
        sig,
        format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
    );
    hub.stop().await;
}

#[tokio::test]
async fn t102_extra_parameters_are_ignored() {
    let (hub, sub) = hub_with_subscriber(HubConfig::default()).await;
    let extra = [
        ("foo", "bar"),
        ("hub.unknown", "x"),
        ("hub.lease_seconds", "600"),
    ];
    subscribe(&hub, "t", &sub.callback("cb?keep=1"), &extra).await;
    let v = sub.verifications();
    assert_eq!(param(&v[0], "keep"), Some("1"), "callback query kept");
    assert_eq!(param(&v[0], "hub.lease_seconds"), Some("600"));
    assert!(param(&v[0], "foo").is_none());
    publish_and_check(&hub, &sub, "t", JSON, b"{}").await;
    hub.stop().await;
}

#[tokio::test]
async fn t103_resubscription_updates_and_does_not_duplicate() {
    let (log, _capturing) = Log::capture();
    let (hub, sub) = hub_with_subscriber(HubConfig::default()).await;
    let cb = sub.callback("cb");
    subscribe(&hub, "t", &cb, &[("hub.secret", "one")]).await;
    assert_eq!(
        hub.form(&[
            ("hub.mode", "subscribe"),
            ("hub.topic", "t"),
            ("hub.callback", &cb),
            ("hub.secret", "two")
        ])
        .await
        .0,
        202
    );
    eventually("second verification", || sub.verifications().len() == 2).await;
    // The renewal is applied once the hub has read the echo, and then logged.
    eventually("the renewal applied", || {
        log.text().matches(": subscribed ").count() == 2
    })
    .await;
    assert_eq!(subscribers(&hub, "t"), 1);
    publish_and_check(&hub, &sub, "t", JSON, b"{\"n\":1}").await;
    // The publish queued every delivery it makes; with none left pending, that was one.
    eventually("no delivery pending", || {
        hub.state.stats().distribution.pending == 0
    })
    .await;
    let s = hub.state.stats();
    assert_eq!((s.topics["t"].attempts, s.topics["t"].delivered), (1, 1));
    assert_eq!(sub.delivered(), 1, "one delivery, not two");
    let mut mac = Hmac::<Sha256>::new_from_slice(b"two").unwrap();
    mac.update(b"{\"n\":1}");
    let want = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
    assert_eq!(
        sub.deliveries()[0].headers["x-hub-signature"],
        want.as_str()
    );
    hub.stop().await;
}

#[tokio::test]
async fn t104_unsubscribed_gets_nothing() {
    let (hub, sub) = hub_with_subscriber(HubConfig::default()).await;
    let cb = sub.callback("cb");
    subscribe(&hub, "t", &cb, &[]).await;
    publish_and_check(&hub, &sub, "t", JSON, b"{}").await;
    let (status, _) = hub
        .form(&[
            ("hub.mode", "unsubscribe"),
            ("hub.topic", "t"),
            ("hub.callback", &cb),
        ])
        .await;
    assert_eq!(status, 202);
    eventually("unsubscribed", || subscribers(&hub, "t") == 0).await;
    let v = sub.verifications();
    assert_eq!(param(&v[1], "hub.mode"), Some("unsubscribe"));
    assert!(param(&v[1], "hub.lease_seconds").is_none());
    // A publish offers its content to the subscribers of that moment (none now) before it is
    // answered, so once nothing is pending no delivery of it can follow.
    assert_eq!(hub.publish("t", JSON, b"{}").await.0, 200);
    eventually("no delivery pending", || {
        hub.state.stats().distribution.pending == 0
    })
    .await;
    let s = hub.stats().await;
    assert_eq!(s.subscribe.accepted, 2);
    assert_eq!((s.topics["t"].published, s.topics["t"].delivered), (2, 1));
    assert_eq!(s.topics["t"].attempts, 1);
    assert_eq!(sub.delivered(), 1);
    hub.stop().await;
}

#[tokio::test]
async fn t105_text_plain_topic() {
    let (hub, sub) = hub_with_subscriber(HubConfig::default()).await;
    subscribe(&hub, "t", &sub.callback("cb"), &[]).await;
    publish_and_check(
        &hub,
        &sub,
        "t",
        "text/plain",
        b"plain text\nwith \x00 bytes",
    )
    .await;
    hub.stop().await;
}

#[tokio::test]
async fn t106_json_topic() {
    let (hub, sub) = hub_with_subscriber(HubConfig::default()).await;
    subscribe(&hub, "t", &sub.callback("cb"), &[]).await;
    let event = br#"{"iss":"https://api.asgardeo.io/t/acme","jti":"6f1c","events":{"login":{"user":{"id":"u1"}}}}"#;
    publish_and_check(&hub, &sub, "t", "application/json; charset=utf-8", event).await;
    hub.stop().await;
}

#[tokio::test]
async fn a_wrong_echo_does_not_subscribe() {
    let (log, _capturing) = Log::capture();
    let hub = TestHub::default().await;
    let sub = Subscriber::start().await;
    sub.wrong_echo(true);
    hub.register("t").await;
    let cb = sub.callback("cb");
    let (status, _) = hub
        .form(&[
            ("hub.mode", "subscribe"),
            ("hub.topic", "t"),
            ("hub.callback", &cb),
        ])
        .await;
    assert_eq!(status, 202);
    eventually("a verification", || sub.verifications().len() == 1).await;
    // The hub has read the wrong echo and decided once it logs so.
    eventually("the hub's verdict", || {
        log.text().contains("intent not verified")
    })
    .await;
    assert_eq!(subscribers(&hub, "t"), 0);
    hub.stop().await;
}

/// The `debug` events logged on this thread, as text. A current-thread test runtime runs the
/// hub's spawned tasks on the test's thread, so they are the hub's.
#[derive(Clone, Default)]
struct Log(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Log {
    /// Capture this thread's events until the guard is dropped.
    fn capture() -> (Log, tracing::subscriber::DefaultGuard) {
        let log = Log::default();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .with_writer(log.clone())
            .finish();
        (log, tracing::subscriber::set_default(subscriber))
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Log {
    type Writer = Log;

    fn make_writer(&'a self) -> Log {
        self.clone()
    }
}

#[tokio::test]
async fn subscribing_to_an_unregistered_topic_is_denied() {
    let hub = TestHub::default().await;
    let (status, body) = hub
        .form(&[
            ("hub.mode", "subscribe"),
            ("hub.topic", "nope"),
            ("hub.callback", "http://127.0.0.1:9/cb"),
        ])
        .await;
    assert_eq!(status, 404);
    assert!(body.starts_with("hub.mode=denied"));
    assert_eq!(hub.stats().await.subscribe.denied, 1);
    hub.stop().await;
}
