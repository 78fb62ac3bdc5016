//! Broker mode under load and at its edges, against the emulator on 127.0.0.1:0: several
//! deliveries in flight per subscription (never more than the limit), sends counted when the
//! publisher leaves mid-publish, and a subscribe whose receiver cannot be attached, each
//! reconciled exactly with the emulator's own counts and the subscriber's.

use std::collections::BTreeSet;
use std::time::Duration;

use hubload_hub::testing::TestHub;
use hubload_hub::{Broker, HubConfig};
use hubload_servicebus::emulator::store::{EntityProps, StoreStats};
use hubload_servicebus::emulator::{config_file, EmulatorConfig, EmulatorHandle};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::broker::{emulator, subscribe};
use crate::util::{eventually_async, Subscriber};

async fn broker_hub(emu: &EmulatorHandle, cfg: HubConfig) -> TestHub {
    let hub = TestHub::start(cfg).await;
    let broker = Broker::connect(emu.connection_string_parsed(), None)
        .await
        .unwrap();
    assert!(hub.state.set_broker(broker));
    hub
}

/// A broker-backed hub delivering with `concurrency` workers of `pipeline` POSTs per write,
/// topic `t` registered, and one subscriber to it whose callback holds every POST until
/// released.
async fn held_subscriber(
    emu: &EmulatorHandle,
    concurrency: usize,
    pipeline: usize,
) -> (TestHub, Subscriber) {
    let cfg = HubConfig {
        delivery_concurrency: concurrency,
        delivery_pipeline: pipeline,
        ..HubConfig::default()
    };
    let hub = broker_hub(emu, cfg).await;
    let sub = Subscriber::start().await;
    hub.register("t").await;
    subscribe(&hub, "t", &sub.callback("cb")).await;
    sub.hold(true);
    (hub, sub)
}

fn store(emu: &EmulatorHandle, prefix: &str) -> (String, StoreStats) {
    emu.counts()
        .entities
        .into_iter()
        .find(|(k, _)| k.starts_with(prefix))
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_run_concurrently_up_to_the_limit() {
    let emu = emulator(EmulatorConfig::default()).await;
    // 4 workers, 2 POSTs per write: 8 deliveries in flight at most.
    let (hub, sub) = held_subscriber(&emu, 4, 2).await;
    let mut sent = BTreeSet::new();
    for i in 0..20 {
        let body = format!("m{i}");
        assert_eq!(hub.publish("t", "text/plain", body.as_bytes()).await.0, 200);
        sent.insert(body);
    }
    // With the callback holding every POST: each of the 4 workers has one POST written on
    // its new connection (a new connection gets one request until it has answered), the
    // loop has taken exactly the limit from the broker, and the broker has sent the link
    // its credit (16) ahead: what the loop could take, and did not.
    eventually_async("8 in flight, 4 at the callback, 16 at the link", || async {
        let b = hub.state.stats().broker.unwrap();
        let (_, e) = store(&emu, "t/Subscriptions/");
        sub.arrived() == 4 && b.receives == 8 && e.delivered == 16
    })
    .await;
    assert_eq!(hub.state.stats().broker.unwrap().completes, 0);
    sub.hold(false);
    eventually_async("20 deliveries, completed", || async {
        sub.delivered() == 20 && hub.state.stats().broker.unwrap().completes == 20
    })
    .await;
    let got: BTreeSet<String> = sub
        .deliveries()
        .iter()
        .map(|d| String::from_utf8(d.body.to_vec()).unwrap())
        .collect();
    assert_eq!(got, sent);
    // The callback saw 4 POSTs at once (one per connection), never more.
    assert_eq!(sub.max_in_flight(), 4);
    let s = hub.state.stats();
    let b = s.broker.unwrap();
    assert_eq!(
        (
            b.receives,
            b.completes,
            b.abandons,
            b.dead_letters,
            b.locks_expired
        ),
        (20, 20, 0, 0, 0)
    );
    assert_eq!(
        (s.distribution.attempts, s.distribution.delivered),
        (20, 20)
    );
    eventually_async("the emulator's completions", || async {
        store(&emu, "t/Subscriptions/").1.completed == 20
    })
    .await;
    let (_, e) = store(&emu, "t/Subscriptions/");
    assert_eq!(
        (e.enqueued, e.completed, e.redelivered, e.active),
        (20, 20, 0, 0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_that_runs_out_during_a_delivery_is_counted_not_hidden() {
    // Locks of 1 s, and a callback that holds its POSTs past them.
    let emu = emulator(EmulatorConfig {
        entity_defaults: EntityProps {
            lock_duration: Duration::from_secs(1),
            ..EntityProps::default()
        },
        ..EmulatorConfig::default()
    })
    .await;
    let (hub, sub) = held_subscriber(&emu, 2, 1).await;
    for body in ["a", "b"] {
        assert_eq!(hub.publish("t", "text/plain", body.as_bytes()).await.0, 200);
    }
    eventually_async("both locks run out at the broker", || async {
        sub.arrived() == 2 && store(&emu, "t/Subscriptions/").1.lock_expired == 2
    })
    .await;
    sub.hold(false);
    // The first answers come after the locks ran out: the hub completes each, counts it, and
    // the broker refuses those completions and delivers the messages again, which are then
    // completed in time.
    eventually_async("the redeliveries completed", || async {
        store(&emu, "t/Subscriptions/").1.completed == 2
            && hub.state.stats().broker.unwrap().completes == 4
    })
    .await;
    let b = hub.state.stats().broker.unwrap();
    assert_eq!(
        (b.receives, b.completes, b.locks_expired, b.abandons),
        (4, 4, 2, 0)
    );
    assert_eq!(sub.delivered(), 4);
    let (_, e) = store(&emu, "t/Subscriptions/");
    assert_eq!(
        (
            e.enqueued,
            e.delivered,
            e.redelivered,
            e.lock_expired,
            e.completed,
            e.active
        ),
        (2, 4, 2, 2, 2, 0)
    );
    assert_eq!(emu.counts().lock_lost, 2);
}

/// One publish on its own connection, written whole; the connection is kept open.
async fn publish_raw(hub: &TestHub, i: usize) -> TcpStream {
    let mut s = TcpStream::connect(hub.addr).await.unwrap();
    let body = format!("{{\"i\":{i}}}");
    let req = format!(
        "POST /?hub.mode=publish&hub.topic=t HTTP/1.1\r\nHost: hub\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sends_are_counted_when_the_publisher_leaves_mid_publish() {
    // The emulator settles each send 300 ms late, so every publish is still at the broker
    // when its client leaves.
    let emu = emulator(EmulatorConfig {
        latency: Duration::from_millis(300),
        ..EmulatorConfig::default()
    })
    .await;
    let hub = broker_hub(&emu, HubConfig::default()).await;
    let sub = Subscriber::start().await;
    hub.register("t").await;
    subscribe(&hub, "t", &sub.callback("cb")).await;
    const N: usize = 12;
    let mut conns = Vec::new();
    for i in 0..N {
        conns.push(publish_raw(&hub, i).await);
    }
    // Every handler is in its send.
    eventually_async("12 publishes in flight", || async {
        hub.state.inflight() == N as u64
    })
    .await;
    // Every client leaves without reading its answer (the hub sees the connection end).
    drop(conns);
    eventually_async("every handler gone and every send settled", || async {
        let s = hub.state.stats();
        s.publish.abandoned == N as u64
            && s.broker.unwrap().sends.total() == N as u64
            && emu.counts().accepted == N as u64
    })
    .await;
    // The hub answered none of them, yet counted each send the broker accepted: the same
    // number as the emulator's own count.
    let s = hub.state.stats();
    let b = s.broker.unwrap();
    assert_eq!((s.publish.accepted, s.publish.abandoned), (0, N as u64));
    assert_eq!((b.sends.accepted, b.sends.total()), (N as u64, N as u64));
    assert_eq!(emu.counts().accepted, N as u64);
    assert_eq!(s.topics["t"].published, N as u64);
    // Each message is delivered once, with its publish's stages (its send was settled and
    // recorded, not left waiting for a handler that was gone).
    eventually_async("12 deliveries", || async { sub.delivered() == N }).await;
    eventually_async("12 completions", || async {
        hub.state.stats().broker.unwrap().completes == N as u64
    })
    .await;
    for d in sub.deliveries() {
        assert!(d.headers.contains_key("hub-timing"), "{:?}", d.headers);
    }
}

#[tokio::test]
async fn a_subscribe_whose_receiver_cannot_attach_is_denied_and_counted() {
    // A strict emulator with the topic and no subscription, and no administration API to
    // make one: every attach of the subscriber's receiver is refused (not found).
    let declared = config_file::parse(
        r#"{"UserConfig": {"Namespaces": [{"Name": "ns", "Topics": [{"Name": "t"}]}]}}"#,
    )
    .unwrap();
    let emu = emulator(EmulatorConfig {
        strict: true,
        declared: Some(declared),
        ..EmulatorConfig::default()
    })
    .await;
    let hub = broker_hub(
        &emu,
        HubConfig {
            verify_timeout: Duration::from_secs(1),
            ..HubConfig::default()
        },
    )
    .await;
    let sub = Subscriber::start().await;
    hub.register("t").await;
    let (status, _) = hub
        .form(&[
            ("hub.mode", "subscribe"),
            ("hub.topic", "t"),
            ("hub.callback", &sub.callback("cb")),
        ])
        .await;
    assert_eq!(status, 202);
    // Tried again within the verification window, then given up: the subscriber is told.
    eventually_async("the denial", || async { !sub.verifications().is_empty() }).await;
    let v = sub.verifications();
    assert_eq!(v.len(), 1, "{v:?}");
    let mode = v[0]
        .iter()
        .find(|(k, _)| k == "hub.mode")
        .map(|(_, m)| m.as_str());
    assert_eq!(mode, Some("denied"), "{v:?}");
    assert!(v[0].iter().any(|(k, _)| k == "hub.reason"), "{v:?}");
    let b = hub.state.stats().broker.unwrap();
    assert_eq!((b.subscribes_failed, b.subscriptions), (1, 0));
    // Each failed try is one the emulator refused.
    assert!(b.receiver_open_failures >= 2, "{b:?}");
    assert_eq!(b.receiver_open_failures, emu.counts().not_found, "{b:?}");
}
