//! Azure's quota of concurrent receive requests per entity, over real AMQP against the emulator on
//! 127.0.0.1:0. A receiver link holds one request while it has credit outstanding (a pending
//! receive); exactly the limit is served, and the receive request one over it is rejected: the link
//! is detached with `amqp:resource-limit-exceeded`, which the receiver returns as its error. A
//! topic's subscriptions and their dead-letter sub-queues are summed; another entity has its own
//! count; a detach frees a place. The limit is configured small here (6) so that a debug test opens
//! few connections; the default, Azure's 5,000, is checked at 5,000 and 5,001 by the namespace's
//! own test (`namespace::tests::azure_limits`).

mod sdk_common;

use std::time::{Duration, Instant};

use hubload_servicebus::emulator::{Emulator, EmulatorConfig, EmulatorHandle};
use hubload_servicebus::{ReceiveError, ReceiverConfig, SbReceiver};

const LIMIT: usize = 6;

async fn emulator() -> EmulatorHandle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let cfg = EmulatorConfig {
        receive_limit: LIMIT,
        ..EmulatorConfig::default()
    };
    Emulator::start(listener, cfg).await.unwrap()
}

fn config(emu: &EmulatorHandle, topic: &str, sub: &str, dead_letter: bool) -> ReceiverConfig {
    let mut c = ReceiverConfig::new(emu.connection_string_parsed(), topic, sub);
    c.connect_timeout = Duration::from_secs(5);
    c.dead_letter = dead_letter;
    c
}

async fn attach(emu: &EmulatorHandle, topic: &str, sub: &str) -> SbReceiver {
    SbReceiver::connect(config(emu, topic, sub, false))
        .await
        .expect("an attach is not a receive request")
}

/// Wait (5 s at most) until the emulator counts `n` receive requests on `entity`.
async fn requests_reach(emu: &EmulatorHandle, entity: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while emu.receive_requests(entity) != Some(n) {
        assert!(
            Instant::now() < deadline,
            "{entity}: {:?} receive requests, not {n}",
            emu.receive_requests(entity)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn over_quota(r: Result<Option<hubload_servicebus::Received>, ReceiveError>) {
    match r {
        Err(ReceiveError::Refused(c)) => assert_eq!(c, "amqp:resource-limit-exceeded"),
        other => panic!("not refused over the quota: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_the_limit_is_served_and_the_request_one_over_is_rejected() {
    let emu = emulator().await;
    // The limit is the topic's, over its subscriptions: 3 on each of two. Each receiver
    // grants credit at attach, so each holds a pending receive.
    let mut held = Vec::new();
    for i in 0..LIMIT {
        held.push(attach(&emu, "orders", if i % 2 == 0 { "a" } else { "b" }).await);
    }
    requests_reach(&emu, "orders", LIMIT).await;
    assert_eq!(emu.counts().limit_exceeded, 0);

    let mut seventh = attach(&emu, "orders", "a").await;
    over_quota(seventh.receive(Duration::from_secs(5)).await);
    assert_eq!(emu.counts().limit_exceeded, 1);
    // The dead-letter sub-queue of a subscription is counted with its topic.
    let mut dlq = SbReceiver::connect(config(&emu, "orders", "b", true))
        .await
        .unwrap();
    over_quota(dlq.receive(Duration::from_secs(5)).await);
    assert_eq!(emu.counts().limit_exceeded, 2);
    requests_reach(&emu, "orders", LIMIT).await;

    // Another entity has its own count.
    let mut other = attach(&emu, "invoices", "a").await;
    assert!(matches!(
        other.receive(Duration::from_millis(200)).await,
        Ok(None)
    ));
    requests_reach(&emu, "invoices", 1).await;

    // A detach frees a place: the seventh's next receive re-attaches and is served.
    held.pop().unwrap().close().await;
    requests_reach(&emu, "orders", LIMIT - 1).await;
    assert!(matches!(
        seventh.receive(Duration::from_millis(500)).await,
        Ok(None)
    ));
    requests_reach(&emu, "orders", LIMIT).await;
    assert_eq!(emu.counts().limit_exceeded, 2);

    for r in held.into_iter().chain([seventh, dlq, other]) {
        r.close().await;
    }
    requests_reach(&emu, "orders", 0).await;
    emu.shutdown().await;
}

/// Microsoft's Python SDK, unmodified, over the quota: its receive raises
/// `ServiceBusQuotaExceededError`, the error it raises for Azure's `QuotaExceeded`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_receive_over_the_quota_raises_quota_exceeded() {
    let Some(py) = sdk_common::python() else {
        return;
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let emu = Emulator::start(
        listener,
        EmulatorConfig {
            receive_limit: 2,
            ..EmulatorConfig::default()
        },
    )
    .await
    .unwrap();
    let held = [
        attach(&emu, "orders", "all").await,
        attach(&emu, "orders", "other").await,
    ];
    requests_reach(&emu, "orders", 2).await;
    let cs = emu.connection_string();
    // Receive one from orders/all in peek-lock mode, completing it, within 5 s.
    let tail = "orders all peek_lock complete 1 5".split(' ');
    let args: Vec<&str> = ["receive", cs.as_str()].into_iter().chain(tail).collect();
    let r = sdk_common::run(&py, "sb.py", &args).await;
    assert_eq!(r["error"], "ServiceBusQuotaExceededError", "{r}");
    assert_eq!(r["received"], 0, "{r}");
    assert_eq!(emu.counts().limit_exceeded, 1);
    // With a place free, the same receive is served (nothing to receive: no error).
    let [a, b] = held;
    a.close().await;
    requests_reach(&emu, "orders", 1).await;
    let r = sdk_common::run(&py, "sb.py", &args).await;
    assert_eq!(r["error"], serde_json::Value::Null, "{r}");
    assert_eq!(emu.counts().limit_exceeded, 1);
    b.close().await;
    emu.shutdown().await;
}
