//! SbReceiver against the emulator on 127.0.0.1:0: what it receives and settles is
//! reconciled exactly with the emulator's own per-subscription counts (`/counts`).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use hubload_servicebus::emulator::store::StoreStats;
use hubload_servicebus::emulator::{config_file, Emulator, EmulatorConfig, EmulatorHandle};
use hubload_servicebus::{
    OutgoingMessage, ReceiveError, ReceiverConfig, SbError, SbReceiver, SbSender, SendOutcome,
    SenderConfig,
};

const SUB: &str = "orders/Subscriptions/hub";

async fn emulator(cfg: EmulatorConfig) -> EmulatorHandle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    Emulator::start(listener, cfg).await.unwrap()
}

fn rx_config(emu: &EmulatorHandle, topic: &str, sub: &str) -> ReceiverConfig {
    let mut c = ReceiverConfig::new(emu.connection_string_parsed(), topic, sub);
    c.connect_timeout = Duration::from_secs(5);
    c
}

async fn sender(emu: &EmulatorHandle) -> SbSender {
    SbSender::connect(SenderConfig {
        connection: emu.connection_string_parsed(),
        connections: 1,
        connect_timeout: Duration::from_secs(5),
        send_timeout: Duration::from_secs(5),
        token_ttl: Duration::from_secs(3600),
    })
    .await
    .unwrap()
}

async fn send(s: &SbSender, topic: &str, i: usize) {
    let body = format!("{{\"i\":{i}}}");
    let id = format!("jti-{i}");
    let r = s
        .send(
            topic,
            OutgoingMessage {
                body: body.as_bytes(),
                message_id: &id,
                content_type: "application/json",
                properties: &[("tenant", "t1")],
            },
        )
        .await;
    assert_eq!(r.outcome, SendOutcome::Accepted);
}

/// The subscription's counts once `done` holds for them, polled for 5 s at most: the
/// emulator applies a disposition after the client has written it.
async fn stats_when(
    emu: &EmulatorHandle,
    entity: &str,
    done: impl Fn(&StoreStats) -> bool,
) -> StoreStats {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let s = emu
            .counts()
            .entities
            .get(entity)
            .cloned()
            .unwrap_or_default();
        if done(&s) || Instant::now() > until {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn receives_and_completes_every_message_once() {
    let emu = emulator(EmulatorConfig::default()).await;
    // The attach makes the subscription (lenient emulator), so sends after it are copied to it.
    let mut rx = SbReceiver::connect(rx_config(&emu, "orders", "hub"))
        .await
        .unwrap();
    assert_eq!(rx.entity(), SUB);
    let tx = sender(&emu).await;
    for i in 0..200 {
        send(&tx, "orders", i).await;
    }
    let mut ids = BTreeSet::new();
    while ids.len() < 200 {
        let m = rx
            .receive(Duration::from_secs(5))
            .await
            .unwrap()
            .expect("a message within 5 s");
        assert_eq!(m.delivery_count, 0);
        assert_eq!(m.property("tenant"), Some("t1"));
        assert_eq!(m.content_type.as_deref(), Some("application/json"));
        let id = m.message_id.clone().unwrap();
        assert_eq!(m.body, format!("{{\"i\":{}}}", &id[4..]).into_bytes());
        assert!(m.sequence_number.is_some() && m.enqueued_time_ms.is_some());
        assert!(ids.insert(id), "delivered twice");
        rx.complete(&m).await.unwrap();
    }
    // Nothing more: an empty receive ends at its wait.
    let t0 = Instant::now();
    assert!(rx
        .receive(Duration::from_millis(300))
        .await
        .unwrap()
        .is_none());
    let waited = t0.elapsed();
    assert!(waited >= Duration::from_millis(290) && waited < Duration::from_secs(2));
    let s = stats_when(&emu, SUB, |s| s.completed == 200).await;
    assert_eq!(
        (
            s.enqueued,
            s.delivered,
            s.redelivered,
            s.completed,
            s.active
        ),
        (200, 200, 0, 200, 0)
    );
    assert_eq!(emu.counts().accepted, 200);
    assert_eq!(rx.restarts(), 0);
    rx.close().await;
}

#[tokio::test]
async fn abandon_redelivers_and_dead_letter_moves_to_the_sub_queue() {
    let emu = emulator(EmulatorConfig::default()).await;
    let mut rx = SbReceiver::connect(rx_config(&emu, "orders", "hub"))
        .await
        .unwrap();
    let tx = sender(&emu).await;
    send(&tx, "orders", 1).await;
    send(&tx, "orders", 2).await;
    let first = rx.receive(Duration::from_secs(5)).await.unwrap().unwrap();
    assert_eq!(first.message_id.as_deref(), Some("jti-1"));
    rx.abandon(&first).await.unwrap();
    // The abandoned message comes back (after or before the second, by sequence), with one
    // delivery before it.
    let mut seen = Vec::new();
    for _ in 0..2 {
        let m = rx.receive(Duration::from_secs(5)).await.unwrap().unwrap();
        seen.push((m.message_id.clone().unwrap(), m.delivery_count));
        if m.message_id.as_deref() == Some("jti-1") {
            rx.dead_letter(&m, "HubRetriesExhausted", "callback failed twice")
                .await
                .unwrap();
        } else {
            rx.complete(&m).await.unwrap();
        }
    }
    seen.sort();
    assert_eq!(seen, vec![("jti-1".into(), 1), ("jti-2".into(), 0)]);
    let s = stats_when(&emu, SUB, |s| s.dead_lettered == 1 && s.completed == 1).await;
    assert_eq!(
        (
            s.enqueued,
            s.delivered,
            s.redelivered,
            s.abandoned,
            s.completed,
            s.dead_lettered,
            s.dead_letter_now,
            s.active
        ),
        (2, 3, 1, 1, 1, 1, 1, 0)
    );
    rx.close().await;
}

#[tokio::test]
async fn a_dropped_link_and_a_dropped_connection_are_restarts() {
    // A five-second lock (Azure's least), so a message locked on a lost link comes back within the test.
    let declared = config_file::parse(
        r#"{"UserConfig": {"Namespaces": [{"Name": "ns", "Topics": [{"Name": "orders",
            "Subscriptions": [{"Name": "hub", "Properties": {"LockDuration": "PT5S"}}]}]}]}}"#,
    )
    .unwrap();
    let emu = emulator(EmulatorConfig {
        declared: Some(declared),
        ..EmulatorConfig::default()
    })
    .await;
    let mut rx = SbReceiver::connect(rx_config(&emu, "orders", "hub"))
        .await
        .unwrap();
    let tx = sender(&emu).await;
    send(&tx, "orders", 1).await;
    let m = rx.receive(Duration::from_secs(5)).await.unwrap().unwrap();
    rx.complete(&m).await.unwrap();

    emu.drop_links();
    // The sender's topic link was dropped too: a fresh sender sends.
    tx.close().await;
    let tx = sender(&emu).await;
    send(&tx, "orders", 2).await;
    let m = rx.receive(Duration::from_secs(5)).await.unwrap().unwrap();
    assert_eq!(m.message_id.as_deref(), Some("jti-2"));
    assert_eq!(rx.restarts(), 1);
    rx.complete(&m).await.unwrap();

    // Received on one link, settled after a re-attach: the lock went with the link.
    send(&tx, "orders", 3).await;
    let held = rx.receive(Duration::from_secs(5)).await.unwrap().unwrap();
    emu.drop_connections();
    // The sender's connection went too: a fresh one sends.
    tx.close().await;
    let tx = sender(&emu).await;
    send(&tx, "orders", 4).await;
    let m = rx.receive(Duration::from_secs(5)).await.unwrap().unwrap();
    assert_eq!(rx.restarts(), 2);
    assert_eq!(rx.complete(&held).await, Err(ReceiveError::LinkLost));
    // jti-4 is settled now, within its own lock: its lock started just after jti-3's, so
    // waiting out jti-3's lock first would let jti-4's run out too.
    rx.complete(&m).await.unwrap();
    let mut ids = vec![m.message_id.clone().unwrap()];
    // jti-3 stays locked after its link went (as Azure keeps it) until the lock runs
    // out; then it is delivered again.
    if let Some(more) = rx.receive(Duration::from_secs(8)).await.unwrap() {
        assert_eq!(more.delivery_count, 1);
        rx.complete(&more).await.unwrap();
        ids.push(more.message_id.clone().unwrap());
    }
    ids.sort();
    let s = stats_when(&emu, SUB, |s| s.completed == 4).await;
    assert_eq!(ids, vec!["jti-3".to_string(), "jti-4".to_string()]);
    assert_eq!(
        (
            s.enqueued,
            s.completed,
            s.lock_expired,
            s.redelivered,
            s.active
        ),
        (4, 4, 1, 1, 0)
    );
    rx.close().await;
}

#[tokio::test]
async fn undeclared_subscription_in_strict_mode_is_not_found_within_the_deadline() {
    let declared = config_file::parse(
        r#"{"UserConfig": {"Namespaces": [{"Name": "ns", "Topics": [{"Name": "orders",
            "Subscriptions": [{"Name": "hub"}]}]}]}}"#,
    )
    .unwrap();
    let emu = emulator(EmulatorConfig {
        strict: true,
        declared: Some(declared),
        ..EmulatorConfig::default()
    })
    .await;
    let t0 = Instant::now();
    let err = SbReceiver::connect(rx_config(&emu, "orders", "nobody"))
        .await
        .unwrap_err();
    assert!(matches!(err, SbError::NotFound { .. }), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert_eq!(emu.counts().not_found, 1);
    // The declared one attaches.
    let rx = SbReceiver::connect(rx_config(&emu, "orders", "hub"))
        .await
        .unwrap();
    rx.close().await;
}

#[tokio::test]
async fn a_silent_peer_cannot_hold_connect_past_its_timeout() {
    // Accepts TCP and never answers the AMQP header.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let _hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            held.push(s);
        }
    });
    let cs = format!(
        "Endpoint=sb://127.0.0.1:{}/;SharedAccessKeyName=k;SharedAccessKey=c2VjcmV0;UseDevelopmentEmulator=true",
        addr.port()
    )
    .parse()
    .unwrap();
    let mut cfg = ReceiverConfig::new(cs, "orders", "hub");
    cfg.connect_timeout = Duration::from_millis(300);
    let t0 = Instant::now();
    let err = SbReceiver::connect(cfg).await.unwrap_err();
    assert!(matches!(err, SbError::Connect { .. }), "{err}");
    assert!(!err.to_string().contains("c2VjcmV0"));
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
}
