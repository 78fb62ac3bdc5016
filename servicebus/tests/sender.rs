//! End-to-end: SbSender against the emulator on 127.0.0.1:0, reconciled with its counts.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use hubload_servicebus::emulator::{Emulator, EmulatorConfig, EmulatorHandle};
use hubload_servicebus::{
    ConnectionString, OutgoingMessage, SbError, SbSender, SendOutcome, SenderConfig,
};

#[path = "../../tests/support/lateness.rs"]
mod lateness;

async fn emulator(cfg: EmulatorConfig) -> EmulatorHandle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    Emulator::start(listener, cfg).await.unwrap()
}

fn config(cs: ConnectionString, connections: usize) -> SenderConfig {
    SenderConfig {
        connection: cs,
        connections,
        connect_timeout: Duration::from_secs(5),
        send_timeout: Duration::from_secs(5),
        token_ttl: Duration::from_secs(3600),
    }
}

/// An emulator with `cfg`, and a validated sender on it with `connections` and `tweak` applied.
async fn start(
    cfg: EmulatorConfig,
    connections: usize,
    tweak: impl FnOnce(&mut SenderConfig),
) -> (EmulatorHandle, SbSender) {
    let emu = emulator(cfg).await;
    let mut sc = config(emu.connection_string().parse().unwrap(), connections);
    tweak(&mut sc);
    let sender = SbSender::connect(sc).await.unwrap();
    (emu, sender)
}

fn msg<'a>(body: &'a [u8], id: &'a str) -> OutgoingMessage<'a> {
    OutgoingMessage {
        body,
        message_id: id,
        content_type: "application/json",
        properties: &[
            ("tenant", "t1"),
            ("application", "app"),
            ("channel", "email"),
        ],
    }
}

/// Send `per_topic` messages to each topic from `tasks` tasks; outcomes counted per class.
async fn blast(
    sender: &Arc<SbSender>,
    topics: &[&str],
    per_topic: usize,
    tasks: usize,
) -> BTreeMap<String, u64> {
    let jobs: Vec<(String, usize)> = topics
        .iter()
        .flat_map(|t| (0..per_topic).map(move |i| (t.to_string(), i)))
        .collect();
    let jobs = Arc::new(std::sync::Mutex::new(jobs));
    let mut handles = Vec::new();
    for _ in 0..tasks {
        let (sender, jobs) = (sender.clone(), jobs.clone());
        handles.push(tokio::spawn(async move {
            let mut counts = BTreeMap::<String, u64>::new();
            loop {
                let job = jobs.lock().unwrap().pop();
                let Some((topic, i)) = job else { break };
                let body = format!("{{\"topic\":\"{topic}\",\"i\":{i}}}");
                let id = format!("jti-{topic}-{i}");
                let r = sender.send(&topic, msg(body.as_bytes(), &id)).await;
                let key = match &r.outcome {
                    SendOutcome::Accepted => {
                        assert_eq!(r.bytes_sent, body.len() as u64);
                        format!("accepted:{topic}")
                    }
                    other => format!("{other:?}"),
                };
                *counts.entry(key).or_default() += 1;
            }
            counts
        }));
    }
    let mut total = BTreeMap::new();
    for h in handles {
        for (k, v) in h.await.unwrap() {
            *total.entry(k).or_default() += v;
        }
    }
    total
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sent_counts_reconcile_with_emulator_per_topic() {
    let (emu, sender) = start(EmulatorConfig::default(), 4, |_| {}).await;
    let sender = Arc::new(sender);
    let topics = ["orders", "users", "billing"];
    let got = blast(&sender, &topics, 200, 32).await;
    let counts = emu.counts();
    for t in topics {
        assert_eq!(got.get(&format!("accepted:{t}")), Some(&200), "{got:?}");
        assert_eq!(counts.accepted_per_topic.get(t), Some(&200), "{counts:?}");
    }
    assert_eq!(got.len(), 3, "only accepted outcomes expected: {got:?}");
    assert_eq!(counts.accepted, 600);
    assert_eq!(
        counts.throttled + counts.unauthorized + counts.cbs_denied,
        0
    );
    assert_eq!(counts.connections, 4);
    // One validation put-token, then one per (connection, topic) link: at most 1 + 4 × 3.
    assert!(counts.cbs_ok >= 4 && counts.cbs_ok <= 13, "{counts:?}");
    assert_eq!(sender.reconnects(), 0);
    let dbg = format!("{sender:?}");
    assert!(!dbg.contains(hubload_servicebus::emulator::DEV_KEY) && dbg.contains("<redacted>"));
    Arc::try_unwrap(sender).unwrap().close().await;
    emu.shutdown().await;
}

fn with_key(cs: &ConnectionString, key: &str) -> ConnectionString {
    let s = cs.expose().replace(cs.key(), key);
    s.parse().unwrap()
}

#[tokio::test]
async fn wrong_key_is_unauthorized_at_connect_and_on_every_send() {
    let emu = emulator(EmulatorConfig::default()).await;
    let good: ConnectionString = emu.connection_string().parse().unwrap();
    let bad = with_key(&good, "d3Jvbmcta2V5");
    let err = SbSender::connect(config(bad.clone(), 2)).await.unwrap_err();
    assert!(
        matches!(err, SbError::Unauthorized { status: 401, .. }),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        !text.contains('\n') && !text.contains("d3Jvbmcta2V5"),
        "{text}"
    );
    assert!(text.contains("SharedAccessKey"), "{text}");
    assert_eq!(emu.counts().cbs_denied, 1);

    // A wrong key name is refused too, even with the right key.
    let mut wrong_name = good.clone();
    wrong_name.key_name = "SendOnly".into();
    let err = SbSender::connect(config(wrong_name, 1)).await.unwrap_err();
    assert!(matches!(err, SbError::Unauthorized { .. }), "{err:?}");

    // Opened without validation, every send is classified unauthorized.
    let sender = SbSender::open(config(bad, 2)).await.unwrap();
    for i in 0..20 {
        let r = sender.send("orders", msg(b"{}", &format!("j{i}"))).await;
        assert_eq!(r.outcome, SendOutcome::Unauthorized);
        assert_eq!(r.bytes_sent, 0);
    }
    let c = emu.counts();
    assert_eq!(c.accepted, 0);
    assert_eq!(c.cbs_denied, 2 + 20, "{c:?}");
    sender.close().await;
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttling_every_tenth_is_counted_exactly() {
    let every = EmulatorConfig {
        throttle_every: Some(10),
        ..EmulatorConfig::default()
    };
    let (emu, sender) = start(every, 3, |_| {}).await;
    let sender = Arc::new(sender);
    let got = blast(&sender, &["a", "b"], 250, 16).await;
    let throttled = got.get("Throttled").copied().unwrap_or(0);
    let accepted = got.get("accepted:a").unwrap_or(&0) + got.get("accepted:b").unwrap_or(&0);
    assert_eq!(throttled, 50, "{got:?}");
    assert_eq!(accepted, 450, "{got:?}");
    let c = emu.counts();
    assert_eq!((c.throttled, c.accepted), (50, 450));
    assert_eq!(
        c.accepted_per_topic.values().sum::<u64>(),
        accepted,
        "{c:?}"
    );
    emu.shutdown().await;
}

#[tokio::test]
async fn too_large_and_timeout_are_classified() {
    let latency = Duration::from_millis(400);
    let (emu, sender) = start(
        EmulatorConfig {
            latency,
            ..EmulatorConfig::default()
        },
        1,
        |c| c.send_timeout = Duration::from_millis(100),
    )
    .await;
    let big = vec![b'x'; 300 * 1024];
    let r = sender.send("t", msg(&big, "big")).await;
    assert_eq!(r.outcome, SendOutcome::TooLarge);
    let lateness = lateness::Lateness::watch();
    let started = std::time::Instant::now();
    let r = sender.send("t", msg(b"{}", "slow")).await;
    let took = started.elapsed();
    assert_eq!(r.outcome, SendOutcome::Timeout);
    // The attempt ends at its timeout, not at the 400 ms settlement.
    let timeout = Duration::from_millis(100);
    assert!(
        took >= timeout && took <= lateness.bound(timeout),
        "{took:?}, bound {:?}",
        lateness.bound(timeout)
    );
    // The late settlement arrives and is counted by the emulator; the link stays usable.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while emu.counts().accepted == 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(emu.counts().accepted, 1);
    assert_eq!(sender.reconnects(), 0);
    sender.close().await;
    emu.shutdown().await;
}

/// Send 10, inject `fault`, send 40 more: each of the 2 pooled connections fails exactly one
/// send (as `failed`), recovers once (a reconnect), and the emulator's count matches the
/// client's.
async fn fault_then_recover(
    fault: impl FnOnce(&EmulatorHandle),
    connections_after: u64,
    failed: SendOutcome,
) {
    fault_then_recover_to(fault, connections_after, |_| "t".to_owned(), failed).await;
}

/// `fault_then_recover` with the sends after the fault going to `topic(i)`.
async fn fault_then_recover_to(
    fault: impl FnOnce(&EmulatorHandle),
    connections_after: u64,
    topic: impl Fn(usize) -> String,
    failed: SendOutcome,
) {
    let (emu, sender) = start(EmulatorConfig::default(), 2, |_| {}).await;
    let mut accepted = 0u64;
    for i in 0..10 {
        let r = sender.send("t", msg(b"{}", &format!("a{i}"))).await;
        assert_eq!(r.outcome, SendOutcome::Accepted);
        accepted += 1;
    }
    // Straight on. Nothing but a send notices a dead connection or link, and sends take the
    // two connections in turn: the first send on each after the fault fails (as `failed`)
    // and marks it for replacement, and every later one is accepted.
    fault(&emu);
    let mut errors = 0u64;
    for i in 0..40 {
        let r = sender.send(&topic(i), msg(b"{}", &format!("b{i}"))).await;
        match r.outcome {
            SendOutcome::Accepted => accepted += 1,
            other if other == failed => errors += 1,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(errors, 2, "errors {errors}");
    assert_eq!(accepted + errors, 50);
    assert_eq!(sender.reconnects(), 2);
    let c = emu.counts();
    assert_eq!(c.accepted, accepted);
    assert_eq!(c.connections, connections_after);
    sender.close().await;
    emu.shutdown().await;
}

#[tokio::test]
async fn dropped_connections_are_reopened_and_counted() {
    fault_then_recover(
        EmulatorHandle::drop_connections,
        4,
        SendOutcome::ConnectionError,
    )
    .await;
}

/// Each send after the drop attaches a link of its own (a topic not sent to before): on a
/// connection the broker closed, the token put and the attach are never answered, and the
/// send waited out its whole timeout (then said `Connect`) instead of failing at once.
#[tokio::test]
async fn a_link_attached_on_a_dropped_connection_fails_at_once() {
    fault_then_recover_to(
        EmulatorHandle::drop_connections,
        4,
        |i| format!("u{i}"),
        SendOutcome::ConnectionError,
    )
    .await;
}

#[tokio::test]
async fn detached_links_are_reattached_on_the_same_connections() {
    let detached = SendOutcome::LinkDetached {
        condition: "amqp:link:detach-forced".into(),
    };
    fault_then_recover(EmulatorHandle::drop_links, 2, detached).await;
}

#[tokio::test]
async fn short_lived_tokens_are_refreshed() {
    let (emu, sender) = start(EmulatorConfig::default(), 1, |c| {
        c.token_ttl = Duration::from_secs(2)
    })
    .await;
    let start = std::time::Instant::now();
    let mut n = 0u64;
    // The emulator rejects transfers whose token has expired, so without refresh the sends
    // after ~2-3 s would be Unauthorized.
    while start.elapsed() < Duration::from_secs(5) {
        let r = sender.send("t", msg(b"{}", &format!("r{n}"))).await;
        assert_eq!(
            r.outcome,
            SendOutcome::Accepted,
            "send {n} at {:?}",
            start.elapsed()
        );
        n += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let c = emu.counts();
    assert_eq!(c.accepted, n);
    assert_eq!(c.unauthorized, 0);
    // Validation + first link token, then refreshes every 1 s of both audiences.
    assert!(c.cbs_ok >= 2 + 2 * 3, "{c:?}");
    // A refresh may be in flight: the emulator has counted its put-token, the sender has not
    // yet read the reply. The two agree once it settles.
    let mut settled = false;
    for _ in 0..100 {
        if emu.counts().cbs_ok == sender.token_puts() {
            settled = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        settled,
        "emulator {} put-tokens, sender {}",
        emu.counts().cbs_ok,
        sender.token_puts()
    );
    assert_eq!(sender.reconnects(), 0);
    sender.close().await;
    emu.shutdown().await;
}

#[tokio::test]
async fn connect_failures_are_clear_and_classified() {
    // Nothing listening: refused. The port is bound and never listened on, and held, so no
    // other test's server can take it meanwhile.
    let held = tokio::net::TcpSocket::new_v4().unwrap();
    held.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = held.local_addr().unwrap().port();
    let cs = ConnectionString::new("127.0.0.1", Some(port), "n", "c2VjcmV0", true);
    let err = SbSender::connect(config(cs, 1)).await.unwrap_err();
    assert!(matches!(err, SbError::Connect { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains(&format!("127.0.0.1:{port}")) && !text.contains("c2VjcmV0"),
        "{text}"
    );

    // Production mode (TLS first) against the plain emulator: the handshake fails.
    let emu = emulator(EmulatorConfig::default()).await;
    let mut tls = emu.connection_string_parsed();
    tls.use_development_emulator = false;
    let err = SbSender::connect(config(tls, 1)).await.unwrap_err();
    assert!(
        matches!(err, SbError::Connect { ref reason, .. } if reason.starts_with("TLS")),
        "{err:?}"
    );

    // A sender whose broker goes away: the in-flight connection errors, then sends cannot
    // reconnect and are classified Connect.
    let sender = SbSender::connect(config(emu.connection_string().parse().unwrap(), 1))
        .await
        .unwrap();
    assert_eq!(
        sender.send("t", msg(b"{}", "x")).await.outcome,
        SendOutcome::Accepted
    );
    emu.shutdown().await;
    // Straight on: either the sender meets the closing connection or finds it gone.
    let first = sender.send("t", msg(b"{}", "y")).await.outcome;
    assert!(
        matches!(first, SendOutcome::ConnectionError | SendOutcome::Connect),
        "{first:?}"
    );
    for i in 0..3 {
        let r = sender.send("t", msg(b"{}", &format!("z{i}"))).await;
        assert_eq!(r.outcome, SendOutcome::Connect);
    }
    sender.close().await;
}

#[tokio::test]
async fn prepare_opens_every_link_up_front() {
    let (emu, sender) = start(EmulatorConfig::default(), 2, |_| {}).await;
    let validation = emu.counts().cbs_ok;
    assert_eq!(validation, 1);
    for t in ["a", "b", "c"] {
        assert_eq!(sender.prepare(t).await, SendOutcome::Accepted);
    }
    // One put-token per (connection, topic); preparing again changes nothing.
    assert_eq!(emu.counts().cbs_ok, 1 + 2 * 3);
    assert_eq!(sender.prepare("a").await, SendOutcome::Accepted);
    for i in 0..12 {
        let t = ["a", "b", "c"][i % 3];
        let r = sender.send(t, msg(b"{}", &format!("p{i}"))).await;
        assert_eq!(r.outcome, SendOutcome::Accepted);
    }
    let c = emu.counts();
    assert_eq!(c.cbs_ok, 1 + 2 * 3);
    assert_eq!(c.accepted, 12);
    sender.close().await;
    emu.shutdown().await;
}

#[tokio::test]
async fn a_message_is_measured_as_the_broker_measures_it() {
    let (emu, sender) = start(EmulatorConfig::default(), 1, |_| {}).await;
    assert_eq!(sender.prepare("t").await, SendOutcome::Accepted);
    let limit = sender.max_message_size("t").await.unwrap();
    // The body that makes the encoded message exactly the link's limit: what the properties
    // and the encoding add does not depend on the body's length at these sizes.
    let probe = vec![b'x'; limit as usize - 1024];
    let around = msg(&probe, "at-limit").encoded_len() - probe.len() as u64;
    let body = vec![b'x'; (limit - around) as usize];
    assert_eq!(msg(&body, "at-limit").encoded_len(), limit);
    let r = sender.send("t", msg(&body, "at-limit")).await;
    assert_eq!(r.outcome, SendOutcome::Accepted);
    // One byte more is over the limit, though the body alone is far under it.
    let over = vec![b'x'; body.len() + 1];
    let r = sender.send("t", msg(&over, "at-limit")).await;
    assert_eq!(r.outcome, SendOutcome::TooLarge);
    assert_eq!(emu.counts().accepted, 1);
    sender.close().await;
    emu.shutdown().await;
}
