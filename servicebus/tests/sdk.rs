//! Microsoft's own Service Bus SDKs (Python `azure-servicebus`, JS `@azure/service-bus`,
//! unmodified) against the emulator: every count an SDK reports is reconciled exactly with
//! the emulator's own, and the SDKs' error types are the ones they raise against Azure.
//!
//! The SDKs live in tests/sdk/ (`.ci/run` installs them: a venv in tests/sdk/.venv and
//! `npm ci` there). Without them a test is skipped, except when `CI` is set, where it fails.

mod sdk_common;

use std::time::Duration;

use hubload_servicebus::emulator::tier::Tier;
use sdk_common::*;
use serde_json::Value;

/// The acceptance check: Python, 100 single sends, 5 batches of 20 and 5 lists of 20
/// to a declared topic; the emulator counts 300; all 300 are received from the subscription in
/// peek-lock, distinct, completed; nothing is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sends_batches_and_lists_then_receives_all_in_peek_lock() {
    let Some(py) = python() else { return };
    let emu = emulator(true, Tier::Unlimited).await;
    let cs = emu.connection_string();
    let sent = run(
        &py,
        "sb.py",
        &["send", &cs, "orders", "100", "5", "5", "20"],
    )
    .await;
    assert_eq!(sent["error"], Value::Null, "{sent}");
    assert_eq!(sent["sent"], 300);
    let c = emu.counts();
    assert_eq!(
        (c.accepted, c.accepted_per_topic["orders"], c.batches),
        (300, 300, 10)
    );
    assert_eq!(stats(&emu, "orders/Subscriptions/all").enqueued, 300);

    let got = run(
        &py,
        "sb.py",
        &[
            "receive",
            &cs,
            "orders",
            "all",
            "peek_lock",
            "complete",
            "300",
            "60",
        ],
    )
    .await;
    assert_eq!(got["error"], Value::Null, "{got}");
    assert_eq!(
        (
            got["received"].as_u64(),
            got["distinct"].as_u64(),
            got["settled"].as_u64()
        ),
        (Some(300), Some(300), Some(300))
    );
    assert_eq!(ids(&got), sent_ids(100, 5, 5, 20));
    let s = stats(&emu, "orders/Subscriptions/all");
    assert_eq!(
        (
            s.delivered,
            s.redelivered,
            s.completed,
            s.active,
            s.dead_letter_now
        ),
        (300, 0, 300, 0, 0)
    );

    // Nothing is left: a further receive finds nothing.
    let again = run(
        &py,
        "sb.py",
        &[
            "receive",
            &cs,
            "orders",
            "all",
            "peek_lock",
            "complete",
            "1",
            "3",
        ],
    )
    .await;
    assert_eq!(again["received"], 0, "{again}");
    emu.shutdown().await;
}

/// The JS SDK (rhea underneath) does the same, smaller: sends, batches, lists, peek, and a
/// peek-lock receive with complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn js_sends_batches_and_lists_peeks_and_receives() {
    let Some(node) = node() else { return };
    let emu = emulator(true, Tier::Unlimited).await;
    let cs = emu.connection_string();
    let sent = run(
        &node,
        "sb.js",
        &["send", &cs, "orders", "20", "2", "2", "10"],
    )
    .await;
    assert_eq!(
        (sent["sent"].as_u64(), &sent["error"]),
        (Some(60), &Value::Null),
        "{sent}"
    );
    let c = emu.counts();
    assert_eq!((c.accepted, c.batches), (60, 4));

    let peeked = run(&node, "sb.js", &["peek", &cs, "orders", "all", "5"]).await;
    assert_eq!(peeked["peeked"], 5, "{peeked}");
    assert_eq!(
        stats(&emu, "orders/Subscriptions/all").delivered,
        0,
        "a peek locks nothing"
    );

    let got = run(
        &node,
        "sb.js",
        &[
            "receive", &cs, "orders", "all", "peekLock", "complete", "60", "60",
        ],
    )
    .await;
    assert_eq!(got["error"], Value::Null, "{got}");
    assert_eq!(
        (
            got["received"].as_u64(),
            got["distinct"].as_u64(),
            got["settled"].as_u64()
        ),
        (Some(60), Some(60), Some(60))
    );
    assert_eq!(ids(&got), sent_ids(20, 2, 2, 10));
    let s = stats_once(&emu, "orders/Subscriptions/all", |s| {
        s.delivered - s.abandoned == s.completed
    })
    .await;
    assert_eq!(
        (s.delivered - s.abandoned, s.completed, s.active),
        (60, 60, 0)
    );
    emu.shutdown().await;
}

/// A queue through every settlement: receive-and-delete, defer, abandon until
/// MaxDeliveryCount (2) sends the message to the dead-letter sub-queue, and completion there.
/// Each receive asks for exactly what is there, so the SDK never has a message in hand that
/// it releases on close.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_queue_settlements_and_max_delivery_count() {
    let Some(py) = python() else { return };
    let emu = emulator(true, Tier::Unlimited).await;
    let cs = emu.connection_string();
    let send = |n: &'static str| {
        let (py, cs) = (py.clone(), cs.clone());
        async move { run(&py, "sb.py", &["send", &cs, "jobs", n, "0", "0", "0"]).await }
    };
    send("2").await;
    let rd = run(
        &py,
        "sb.py",
        &[
            "receive",
            &cs,
            "jobs",
            "-",
            "receive_and_delete",
            "none",
            "2",
            "10",
        ],
    )
    .await;
    assert_eq!(ids(&rd), ["s-0", "s-1"].map(String::from).into(), "{rd}");
    send("1").await;
    let deferred = run(
        &py,
        "sb.py",
        &["receive", &cs, "jobs", "-", "peek_lock", "defer", "1", "10"],
    )
    .await;
    assert_eq!(
        (deferred["settled"].as_u64(), &deferred["error"]),
        (Some(1), &Value::Null),
        "{deferred}"
    );
    send("1").await;
    let abandoned = run(
        &py,
        "sb.py",
        &[
            "receive",
            &cs,
            "jobs",
            "-",
            "peek_lock",
            "abandon",
            "2",
            "20",
        ],
    )
    .await;
    assert_eq!(abandoned["error"], Value::Null, "{abandoned}");
    assert_eq!(
        (
            abandoned["received"].as_u64(),
            abandoned["distinct"].as_u64()
        ),
        (Some(2), Some(1)),
        "{abandoned}"
    );
    let dlq = run(
        &py,
        "sb.py",
        &[
            "receive",
            &cs,
            "jobs",
            "-/$deadletterqueue",
            "peek_lock",
            "complete",
            "1",
            "10",
        ],
    )
    .await;
    assert_eq!(
        (dlq["received"].as_u64(), dlq["settled"].as_u64()),
        (Some(1), Some(1)),
        "{dlq}"
    );

    let s = stats(&emu, "jobs");
    assert_eq!(
        (
            s.enqueued,
            s.delivered,
            s.abandoned,
            s.deferred,
            s.dead_lettered,
            s.completed
        ),
        (4, 2 + 1 + 2 + 1, 2, 1, 1, 1)
    );
    assert_eq!(
        (s.active, s.dead_letter_now),
        (1, 0),
        "the deferred one is left"
    );
    emu.shutdown().await;
}

/// `$management` end to end with the Python SDK: a message deferred over the link is
/// fetched back by sequence number, its lock renewed and the message completed, all
/// through the management node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_deferred_message_renewed_and_completed_through_management() {
    let Some(py) = python() else { return };
    let emu = emulator(true, Tier::Unlimited).await;
    let cs = emu.connection_string();
    run(&py, "sb.py", &["send", &cs, "jobs", "1", "0", "0", "0"]).await;
    let r = run(&py, "sb.py", &["defer_cycle", &cs, "jobs", "-"]).await;
    assert_eq!(
        r,
        serde_json::json!({"renewed": true, "completed": true, "error": null})
    );
    let s = stats(&emu, "jobs");
    assert_eq!(
        (
            s.delivered,
            s.redelivered,
            s.deferred,
            s.completed,
            s.active
        ),
        (2, 1, 1, 1, 0)
    );
    // receive-by-sequence-number, renew-lock, update-disposition.
    assert_eq!(emu.counts().management, 3);
    emu.shutdown().await;
}

/// Peek through `$management` leaves the messages where they are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_peek_through_management() {
    let Some(py) = python() else { return };
    let emu = emulator(true, Tier::Unlimited).await;
    let cs = emu.connection_string();
    run(&py, "sb.py", &["send", &cs, "orders", "10", "0", "0", "0"]).await;
    let p = run(&py, "sb.py", &["peek", &cs, "orders", "all", "4"]).await;
    assert_eq!(p["error"], Value::Null, "{p}");
    assert_eq!(p["ids"], serde_json::json!(["s-0", "s-1", "s-2", "s-3"]));
    // The peek itself hands nothing out. The SDK's receive link may still be sent one message
    // as it closes: the SDK then releases it (abandoned) or, when its process exits first,
    // leaves it under its lock until LockDuration runs out, as Azure would. Either way every
    // message stays in the subscription and none is settled.
    let s = stats_once(&emu, "orders/Subscriptions/all", |s| {
        s.delivered == s.abandoned
    })
    .await;
    assert_eq!((s.active, s.completed, s.dead_lettered), (10, 0, 0));
    assert!(
        s.delivered - s.abandoned <= 1,
        "at most the one message a closing link is sent stays locked: {s:?}"
    );
    assert_eq!(emu.counts().management, 1);
    emu.shutdown().await;
}

/// Strict mode: a put-token for an undeclared topic or subscription is answered 404 with
/// Azure's "The messaging entity '…' could not be found" (its attach would be `amqp:not-found`),
/// and the SDKs raise what they raise for that answer from Azure, at once: Python's CBS client
/// turns any failed put-token into `ServiceBusAuthenticationError`, JS reads the description
/// as `MessagingEntityNotFound` (sender and receiver).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_undeclared_entities_are_not_found() {
    let Some(py) = python() else { return };
    let emu = emulator(true, Tier::Unlimited).await;
    let cs = emu.connection_string();
    let t0 = std::time::Instant::now();
    let send = run(&py, "sb.py", &["send", &cs, "nosuch", "1", "0", "0", "0"]).await;
    assert_eq!(send["error"], "ServiceBusAuthenticationError", "{send}");
    let recv = run(
        &py,
        "sb.py",
        &[
            "receive",
            &cs,
            "orders",
            "nosub",
            "peek_lock",
            "complete",
            "1",
            "30",
        ],
    )
    .await;
    assert_eq!(recv["error"], "ServiceBusAuthenticationError", "{recv}");
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "not-found took {:?}",
        t0.elapsed()
    );
    let mut want = 2;
    if let Some(node) = node() {
        let js = run(
            &node,
            "sb.js",
            &[
                "receive", &cs, "orders", "nosub", "peekLock", "complete", "1", "30",
            ],
        )
        .await;
        assert_eq!(js["code"], "MessagingEntityNotFound", "{js}");
        want += 1;
    }
    let c = emu.counts();
    assert_eq!((c.not_found, c.accepted), (want, 0));
    emu.shutdown().await;
}

/// Standard tier: 1,000 credits a second; a batch of 100 to a topic with one subscription
/// costs 200 (each message 1, each filter evaluation 1). The SDK raises the error type it
/// raises against Azure, and the emulator's accepted count is exactly what the SDK sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standard_tier_throttles_with_server_busy() {
    let Some(py) = python() else { return };
    let emu = emulator(true, Tier::Standard).await;
    let cs = emu.connection_string();
    let r = run(
        &py,
        "sb.py",
        &["send", &cs, "orders", "0", "20", "0", "100"],
    )
    .await;
    assert_eq!(r["error"], "ServiceBusServerBusyError", "{r}");
    let sent = r["sent"].as_u64().unwrap();
    let c = emu.counts();
    assert_eq!((c.accepted, c.throttled), (sent, 1));
    // The bucket holds one second (1,000 credits = 5 batches) plus what refilled while the
    // batches were sent: at least 5 went through, and not all 20.
    assert!((500..2_000).contains(&sent), "{sent}");
    if let Some(node) = node() {
        // Drained by Python: the JS SDK is throttled at once too, with its own error code.
        let js = run(
            &node,
            "sb.js",
            &["send", &cs, "orders", "0", "20", "0", "100"],
        )
        .await;
        assert_eq!(js["code"], "ServiceBusy", "{js}");
        let c = emu.counts();
        assert_eq!(
            (c.accepted, c.throttled),
            (sent + js["sent"].as_u64().unwrap(), 2)
        );
    }
    emu.shutdown().await;
}
