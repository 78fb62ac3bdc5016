//! Azure's quota of concurrent receive requests per entity, over real AMQP against the
//! emulator on 127.0.0.1:0: exactly the limit attaches, one more is refused with
//! `amqp:resource-limit-exceeded` (a topic's subscriptions summed, a queue apart), and a
//! detach frees a place. The limit is configured small here (6) so that a debug test opens
//! few connections; the default, Azure's 5,000, is checked at 5,000 and 5,001 by the
//! namespace's own test (`namespace::tests::azure_limits`).

use std::time::{Duration, Instant};

use hubload_servicebus::emulator::{Emulator, EmulatorConfig, EmulatorHandle};
use hubload_servicebus::{ReceiverConfig, SbError, SbReceiver};

const LIMIT: usize = 6;

async fn emulator() -> EmulatorHandle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let cfg = EmulatorConfig {
        receive_limit: LIMIT,
        ..EmulatorConfig::default()
    };
    Emulator::start(listener, cfg).await.unwrap()
}

async fn attach(emu: &EmulatorHandle, topic: &str, sub: &str) -> Result<SbReceiver, SbError> {
    let mut c = ReceiverConfig::new(emu.connection_string_parsed(), topic, sub);
    c.connect_timeout = Duration::from_secs(5);
    SbReceiver::connect(c).await
}

fn refused(r: Result<SbReceiver, SbError>) -> String {
    match r {
        Ok(_) => panic!("attached over the limit"),
        Err(e) => e.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_the_limit_attaches_and_one_more_is_refused_until_a_place_frees() {
    let emu = emulator().await;
    // The limit is the topic's, over its subscriptions: 3 on each of two.
    let mut held = Vec::new();
    for i in 0..LIMIT {
        let sub = if i % 2 == 0 { "a" } else { "b" };
        held.push(attach(&emu, "orders", sub).await.expect("within the limit"));
    }
    assert_eq!(emu.counts().limit_exceeded, 0);
    let e = refused(attach(&emu, "orders", "a").await);
    assert!(e.contains("amqp:resource-limit-exceeded"), "{e}");
    // Its dead-letter sub-queue is the same entity's.
    let mut dlq = ReceiverConfig::new(emu.connection_string_parsed(), "orders", "b");
    dlq.dead_letter = true;
    let e = refused(SbReceiver::connect(dlq).await);
    assert!(e.contains("amqp:resource-limit-exceeded"), "{e}");
    assert_eq!(emu.counts().limit_exceeded, 2);
    // Another entity has its own count.
    let other = attach(&emu, "invoices", "a").await.expect("another topic");
    // A detach frees one place (the emulator drops the link's slot when it sees the detach).
    held.pop().unwrap().close().await;
    let deadline = Instant::now() + Duration::from_secs(5);
    let back = loop {
        match attach(&emu, "orders", "a").await {
            Ok(r) => break r,
            Err(e) if Instant::now() < deadline => {
                assert!(e.to_string().contains("resource-limit-exceeded"), "{e}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("no place freed in 5 s: {e}"),
        }
    };
    let refusals = emu.counts().limit_exceeded;
    // Full again: one more is refused.
    let e = refused(attach(&emu, "orders", "b").await);
    assert!(e.contains("amqp:resource-limit-exceeded"), "{e}");
    assert_eq!(emu.counts().limit_exceeded, refusals + 1);
    for r in held.into_iter().chain([other, back]) {
        r.close().await;
    }
    emu.shutdown().await;
}
