//! Broker mode against the Service Bus emulator on 127.0.0.1:0: every count the hub shows
//! under `broker` is reconciled exactly with the emulator's own, and with the subscriber.

use std::collections::BTreeSet;

use hubload_hub::testing::TestHub;
use hubload_hub::{Broker, HubConfig, RetryPolicy};
use hubload_servicebus::emulator::store::StoreStats;
use hubload_servicebus::emulator::{config_file, Emulator, EmulatorConfig, EmulatorHandle};

use crate::util::{eventually_async, Subscriber};

pub(crate) async fn emulator(cfg: EmulatorConfig) -> EmulatorHandle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    Emulator::start(listener, cfg).await.unwrap()
}

/// A hub in broker mode on `emu`, with `attempts` delivery attempts per message.
async fn broker_hub(emu: &EmulatorHandle, attempts: u32) -> TestHub {
    let hub = TestHub::start(HubConfig {
        retry: RetryPolicy {
            max_attempts: attempts,
            ..RetryPolicy::default()
        },
        ..HubConfig::default()
    })
    .await;
    let broker = Broker::connect(emu.connection_string_parsed(), None)
        .await
        .unwrap();
    assert!(hub.state.set_broker(broker));
    hub
}

/// The emulator's only subscription of topic `t`, once the hub has made it.
async fn subscription_of(emu: &EmulatorHandle, t: &str) -> String {
    let prefix = format!("{t}/Subscriptions/");
    let mut name = String::new();
    eventually_async("the broker subscription", || {
        let found = emu
            .counts()
            .entities
            .keys()
            .find(|k| k.starts_with(&prefix))
            .cloned();
        let hit = found.is_some();
        name = found.unwrap_or_default();
        async move { hit }
    })
    .await;
    name
}

pub(crate) async fn subscribe(hub: &TestHub, t: &str, callback: &str) {
    let (status, _) = hub
        .form(&[
            ("hub.mode", "subscribe"),
            ("hub.topic", t),
            ("hub.callback", callback),
        ])
        .await;
    assert_eq!(status, 202);
    eventually_async("the receive loop", || async {
        hub.state
            .stats()
            .broker
            .is_some_and(|b| b.subscriptions == 1)
    })
    .await;
}

fn store(emu: &EmulatorHandle, entity: &str) -> StoreStats {
    emu.counts()
        .entities
        .get(entity)
        .cloned()
        .unwrap_or_default()
}

#[tokio::test]
async fn every_publish_is_one_send_and_one_delivery() {
    let emu = emulator(EmulatorConfig::default()).await;
    let hub = broker_hub(&emu, 3).await;
    let sub = Subscriber::start().await;
    hub.register("t").await;
    subscribe(&hub, "t", &sub.callback("cb")).await;
    let entity = subscription_of(&emu, "t").await;

    let mut sent = BTreeSet::new();
    for i in 0..60 {
        let body = format!("{{\"i\":{i}}}");
        let r = hub
            .client
            .post(format!("{}?hub.mode=publish&hub.topic=t", hub.url))
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let timing = r.headers()["server-timing"].to_str().unwrap().to_owned();
        let (broker, rest) = timing.split_once(", ").unwrap();
        let dur: f64 = broker.strip_prefix("broker;dur=").unwrap().parse().unwrap();
        assert!(dur > 0.0, "{timing}");
        assert!(rest.starts_with("hub;dur="), "{timing}");
        sent.insert(body);
    }
    eventually_async("60 deliveries", || async { sub.delivered() == 60 }).await;
    let got: BTreeSet<String> = sub
        .deliveries()
        .iter()
        .map(|d| {
            assert_eq!(d.headers["content-type"], "application/json");
            assert!(d.headers["link"]
                .to_str()
                .unwrap()
                .contains("<t>; rel=\"self\""));
            String::from_utf8(d.body.to_vec()).unwrap()
        })
        .collect();
    assert_eq!(got, sent);
    eventually_async("the completions at the emulator", || async {
        store(&emu, &entity).completed == 60
    })
    .await;
    let s = hub.state.stats();
    let b = s.broker.unwrap();
    assert_eq!(
        (
            b.sends.accepted,
            b.sends.total(),
            b.receives,
            b.completes,
            b.abandons,
            b.dead_letters
        ),
        (60, 60, 60, 60, 0, 0)
    );
    assert_eq!((s.publish.accepted, s.distribution.delivered), (60, 60));
    let e = store(&emu, &entity);
    assert_eq!(
        (e.enqueued, e.delivered, e.completed, e.active),
        (60, 60, 60, 0)
    );
    assert_eq!(emu.counts().accepted, 60);
    let metrics = hub
        .client
        .get(format!("http://{}/metrics", hub.addr))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("hub_broker_sends_total{outcome=\"accepted\"} 60\n"));
    assert!(metrics.contains("hub_broker_completes_total 60\n"));

    // Unsubscribe ends the receive loop; deregister leaves none.
    let (status, _) = hub
        .form(&[
            ("hub.mode", "unsubscribe"),
            ("hub.topic", "t"),
            ("hub.callback", &sub.callback("cb")),
        ])
        .await;
    assert_eq!(status, 202);
    eventually_async("the loop to stop", || async {
        hub.state.stats().broker.unwrap().subscriptions == 0
    })
    .await;
}

#[tokio::test]
async fn failures_are_abandoned_then_dead_lettered_past_the_retry_limit() {
    let emu = emulator(EmulatorConfig::default()).await;
    let hub = broker_hub(&emu, 3).await;
    let sub = Subscriber::start().await;
    hub.register("t").await;
    subscribe(&hub, "t", &sub.callback("cb")).await;
    let entity = subscription_of(&emu, "t").await;
    // The first message fails three times (the limit): dead-lettered. The second fails once.
    sub.answer(&[500, 500, 500, 503]);
    assert_eq!(hub.publish("t", "text/plain", b"first").await.0, 200);
    eventually_async("the dead-letter", || async {
        store(&emu, &entity).dead_lettered == 1
    })
    .await;
    assert_eq!(hub.publish("t", "text/plain", b"second").await.0, 200);
    eventually_async("the second delivery", || async { sub.delivered() == 1 }).await;
    eventually_async("its completion", || async {
        store(&emu, &entity).completed == 1
    })
    .await;
    let b = hub.state.stats().broker.unwrap();
    assert_eq!(
        (b.receives, b.abandons, b.dead_letters, b.completes),
        (5, 3, 1, 1)
    );
    let e = store(&emu, &entity);
    assert_eq!(
        (
            e.delivered,
            e.redelivered,
            e.abandoned,
            e.dead_lettered,
            e.completed,
            e.active
        ),
        (5, 3, 3, 1, 1, 0)
    );
    let s = hub.state.stats();
    assert_eq!(
        (
            s.distribution.attempts,
            s.distribution.delivered,
            s.distribution.failed
        ),
        (5, 1, 1)
    );
}

#[tokio::test]
async fn broker_failures_get_a_hubs_answers() {
    // Every second transfer is throttled; topic "known" is declared, others are not.
    let declared = config_file::parse(
        r#"{"UserConfig": {"Namespaces": [{"Name": "ns", "Topics": [{"Name": "known"}]}]}}"#,
    )
    .unwrap();
    let emu = emulator(EmulatorConfig {
        throttle_every: Some(2),
        strict: true,
        declared: Some(declared),
        ..EmulatorConfig::default()
    })
    .await;
    let hub = broker_hub(&emu, 3).await;
    // Register checks the broker: an unknown topic there is a 502.
    let r = hub
        .post("hub.mode=register&hub.topic=unknown", "text/plain", b"")
        .await;
    assert_eq!(r.0, 502, "{}", r.1);
    hub.register("known").await;
    let mut statuses = Vec::new();
    for _ in 0..4 {
        let r = hub
            .client
            .post(format!("{}?hub.mode=publish&hub.topic=known", hub.url))
            .body("x")
            .send()
            .await
            .unwrap();
        let retry = r
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_owned());
        assert!(r.headers().contains_key("server-timing"));
        statuses.push((r.status().as_u16(), retry));
    }
    assert_eq!(
        statuses,
        vec![
            (200, None),
            (503, Some("2".into())),
            (200, None),
            (503, Some("2".into()))
        ]
    );
    let s = hub.state.stats();
    let b = s.broker.unwrap();
    assert_eq!((b.sends.accepted, b.sends.throttled), (2, 2));
    assert_eq!((s.publish.accepted, s.publish.broker_error), (2, 2));
    assert_eq!(s.register.broker_error, 1);
    let c = emu.counts();
    assert_eq!((c.accepted, c.throttled, c.not_found), (2, 2, 1));
}

/// `hubload-hub --servicebus` with a bad string, or a broker that refuses the key: one line
/// naming the flag, no secret, exit 2.
#[tokio::test]
async fn bad_connection_strings_are_one_line_without_the_key() {
    let run = |cs: String| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_hubload-hub"))
            .args(["--listen", "127.0.0.1:0", "--servicebus", &cs])
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, err, _) = run("Endpoint=sb://h/;SharedAccessKey=c2VjcmV0LWtleQ==".into());
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        err.trim_end(),
        "hubload-hub: --servicebus: connection string is missing SharedAccessKeyName"
    );
    // A well-formed string with the wrong key: the emulator refuses the token.
    let emu = emulator(EmulatorConfig::default()).await;
    let wrong = format!(
        "Endpoint=sb://{}/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=d3Jvbmcta2V5LXZhbHVl;UseDevelopmentEmulator=true",
        emu.addr()
    );
    let (code, err, out) = tokio::task::spawn_blocking(move || run(wrong))
        .await
        .unwrap();
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.starts_with("hubload-hub: --servicebus: Service Bus refused the SAS token"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        !err.contains("d3Jvbmc") && !out.contains("d3Jvbmc"),
        "{err}{out}"
    );
}

/// Publish until the hub answers 200 (a send right after a broker drop may meet the dropped
/// link and be answered 503); returns the non-200 answers seen.
async fn publish_accepted(hub: &TestHub, body: &str) -> u64 {
    let mut refused = 0;
    for _ in 0..20 {
        match hub.publish("t", "text/plain", body.as_bytes()).await.0 {
            200 => return refused,
            503 => refused += 1,
            other => panic!("publish answered {other}"),
        }
    }
    panic!("no 200 in 20 publishes");
}

#[tokio::test]
async fn receive_loops_recover_from_dropped_links_and_connections() {
    let emu = emulator(EmulatorConfig::default()).await;
    let hub = broker_hub(&emu, 3).await;
    let sub = Subscriber::start().await;
    hub.register("t").await;
    subscribe(&hub, "t", &sub.callback("cb")).await;
    let entity = subscription_of(&emu, "t").await;
    let mut refused = publish_accepted(&hub, "before").await;
    eventually_async("the first delivery", || async { sub.delivered() == 1 }).await;
    // Each drop comes once the broker has the completion: a completion lost in a drop
    // leaves the message locked until its lock expires (then it comes again, as on Azure).
    eventually_async("its completion", || async {
        store(&emu, &entity).completed == 1
    })
    .await;
    // A forced link detach (Azure's maintenance), then a dropped connection (a broker
    // restart, as the clients see it): each is one restart of the receive loop.
    emu.drop_links();
    refused += publish_accepted(&hub, "after-links").await;
    eventually_async("a delivery after the link drop", || async {
        sub.delivered() == 2
    })
    .await;
    eventually_async("its completion", || async {
        store(&emu, &entity).completed == 2
    })
    .await;
    emu.drop_connections();
    refused += publish_accepted(&hub, "after-connections").await;
    eventually_async("a delivery after the connection drop", || async {
        sub.delivered() == 3
    })
    .await;
    eventually_async("three completions", || async {
        store(&emu, &entity).completed == 3
    })
    .await;
    let bodies: Vec<_> = sub.deliveries().iter().map(|d| d.body.clone()).collect();
    assert_eq!(bodies, ["before", "after-links", "after-connections"]);
    let s = hub.state.stats();
    let b = s.broker.unwrap();
    assert_eq!(b.receive_restarts, 2);
    assert_eq!(b.subscriptions, 1);
    // Every answer the hub gave is a send it counted, and only accepted ones reached the
    // emulator and the subscriber.
    assert_eq!(b.sends.accepted, 3);
    assert_eq!(b.sends.connection, refused);
    assert_eq!(s.publish.broker_error, refused);
    assert_eq!((b.receives, b.completes), (3, 3));
    assert_eq!(emu.counts().accepted, 3);
}
