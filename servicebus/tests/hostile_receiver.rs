//! The receive client (`SbReceiver`) against a broker that misbehaves, through the proxy of
//! `hostile_proxy` in front of the emulator: a session the broker ends under the receiver is
//! recovered within the receive that saw it, and no message whose completion the broker
//! confirmed comes again (reconciled with the emulator's counts); a completion the broker
//! never answers ends at the settle timeout, one it answers lock-lost says so; transfers past
//! the credit the receiver granted end the session with `amqp:link:transfer-limit-exceeded`
//! (memory stays bounded), and the receiver carries on on a new connection.

use std::collections::BTreeSet;
use std::time::Duration;

use hubload_servicebus::emulator::store::StoreStats;
use hubload_servicebus::emulator::{config_file, Emulator, EmulatorConfig, EmulatorHandle};
use hubload_servicebus::{
    ConnectionString, OutgoingMessage, ReceiveError, Received, ReceiverConfig, SbReceiver,
    SbSender, SendOutcome, SenderConfig,
};
use tokio::time::Instant;

mod hostile_proxy;
#[path = "../../tests/support/lateness.rs"]
mod lateness;
use hostile_proxy::{rss_bytes, Fault, Proxy};

const SUB: &str = "orders/Subscriptions/hub";

/// A connection string for 127.0.0.1:`port` with the emulator's development key.
pub(crate) fn local(port: u16) -> ConnectionString {
    use hubload_servicebus::emulator::{DEV_KEY, DEV_KEY_NAME};
    ConnectionString::new("127.0.0.1", Some(port), DEV_KEY_NAME, DEV_KEY, true)
}

/// Poll `f` every 10 ms until it holds or `limit` has passed; whether it held.
async fn eventually(limit: Duration, f: impl Fn() -> bool) -> bool {
    let until = Instant::now() + limit;
    while !f() {
        if Instant::now() >= until {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

/// The emulator with `orders/hub` declared, its locks five seconds (Azure's least), so a
/// message locked on a lost link comes back within a test.
async fn emulator() -> EmulatorHandle {
    let declared = config_file::parse(
        r#"{"UserConfig": {"Namespaces": [{"Name": "ns", "Topics": [{"Name": "orders",
            "Subscriptions": [{"Name": "hub", "Properties": {"LockDuration": "PT5S"}}]}]}]}}"#,
    )
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let cfg = EmulatorConfig {
        declared: Some(declared),
        ..EmulatorConfig::default()
    };
    Emulator::start(listener, cfg).await.unwrap()
}

/// A receiver on `orders/hub` through `proxy`, with link credit `credit`.
async fn receiver(proxy: &Proxy, credit: u32) -> SbReceiver {
    let mut cfg = ReceiverConfig::new(proxy.connection_string(), "orders", "hub");
    cfg.connect_timeout = Duration::from_secs(5);
    cfg.credit = credit;
    SbReceiver::connect(cfg).await.unwrap()
}

/// Send `ids` to `orders`, straight to the emulator (not through the proxy).
async fn send_all(emu: &EmulatorHandle, ids: std::ops::Range<usize>) {
    let tx = SbSender::connect(SenderConfig {
        connection: emu.connection_string_parsed(),
        connections: 1,
        connect_timeout: Duration::from_secs(5),
        send_timeout: Duration::from_secs(5),
        token_ttl: Duration::from_secs(3600),
    })
    .await
    .unwrap();
    for i in ids {
        let body = format!("{{\"i\":{i}}}");
        let id = format!("jti-{i}");
        let msg = OutgoingMessage {
            body: body.as_bytes(),
            message_id: &id,
            content_type: "application/json",
            properties: &[],
        };
        assert_eq!(tx.send("orders", msg).await.outcome, SendOutcome::Accepted);
    }
    tx.close().await;
}

/// The subscription's counts once `done` holds for them (5 s at most): the emulator applies a
/// disposition after the client has written it.
async fn stats_when(emu: &EmulatorHandle, done: impl Fn(&StoreStats) -> bool) -> StoreStats {
    let stats = || {
        let c = emu.counts();
        c.entities.get(SUB).cloned().unwrap_or_default()
    };
    eventually(Duration::from_secs(5), || done(&stats())).await;
    stats()
}

/// What a receiver took: the ids whose completion the broker confirmed, those whose
/// completion found the link gone or whose session ended before the broker's answer (the
/// broker delivers them again once their lock expires, unless it applied the completion),
/// those received again, and those received after their completion was confirmed.
#[derive(Debug, Default)]
struct Taken {
    completed: BTreeSet<String>,
    lost: BTreeSet<String>,
    unconfirmed: BTreeSet<String>,
    again: Vec<String>,
    after_confirmed: Vec<String>,
}

/// Receive and complete until `done` holds, calling `midway` once when `at` messages are
/// completed; `Err` with what was taken if 30 s pass first. No receive may fail: a loss is
/// recovered inside it.
async fn take(
    rx: &mut SbReceiver,
    done: impl Fn(&Taken) -> bool,
    at: usize,
    midway: impl FnOnce(),
) -> Result<Taken, Taken> {
    let mut t = Taken::default();
    let mut midway = Some(midway);
    let until = Instant::now() + Duration::from_secs(30);
    while !done(&t) {
        if Instant::now() >= until {
            return Err(t);
        }
        if t.completed.len() == at {
            if let Some(f) = midway.take() {
                f();
            }
        }
        let m = match rx.receive(Duration::from_millis(500)).await {
            Ok(Some(m)) => m,
            Ok(None) => continue,
            Err(e) => panic!("a receive failed: {e} (so far {t:?})"),
        };
        let id = m
            .message_id
            .clone()
            .expect("the emulator's messages have ids");
        if m.delivery_count > 0 {
            t.again.push(id.clone());
        }
        if t.completed.contains(&id) {
            t.after_confirmed.push(id.clone());
        }
        match rx.complete(&m).await {
            Ok(()) => {
                t.completed.insert(id);
            }
            Err(ReceiveError::LinkLost) => assert!(t.lost.insert(id.clone()), "{id} lost twice"),
            Err(ReceiveError::SessionEnded(_)) => {
                assert!(t.unconfirmed.insert(id.clone()), "{id} unconfirmed twice")
            }
            Err(e) => panic!("completing {id}: {e}"),
        }
    }
    Ok(t)
}

/// The subscription's completed count.
fn completed(emu: &EmulatorHandle) -> u64 {
    let c = emu.counts();
    c.entities.get(SUB).map_or(0, |s| s.completed)
}

/// A receiver on `orders/hub` through `proxy` whose settlements wait at most `settle`.
async fn receiver_settling_within(proxy: &Proxy, settle: Duration) -> SbReceiver {
    let mut cfg = ReceiverConfig::new(proxy.connection_string(), "orders", "hub");
    cfg.connect_timeout = Duration::from_secs(5);
    cfg.settle_timeout = settle;
    SbReceiver::connect(cfg).await.unwrap()
}

/// The next message on `rx` (5 s at most).
async fn next(rx: &mut SbReceiver) -> Received {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        assert!(Instant::now() < until, "no message within 5 s");
        if let Some(m) = rx.receive(Duration::from_millis(500)).await.unwrap() {
            return m;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_the_broker_ends_is_recovered_and_every_message_completed_once() {
    const N: usize = 40;
    let emu = emulator().await;
    let proxy = Proxy::start(emu.addr()).await;
    let mut rx = receiver(&proxy, 16).await;
    send_all(&emu, 0..N).await;
    // The broker ends the receiver's session with 15 messages completed (and more of them
    // prefetched on the link). A completion returns only once the broker confirms it.
    // Until the broker has every message completed and the receiver has tried each: a
    // completion whose session ended before the broker's answer may have been applied (and
    // its message does not come again) or not (and it comes again after its lock).
    let all: BTreeSet<String> = (0..N).map(|i| format!("jti-{i}")).collect();
    let all_done =
        |t: &Taken| completed(&emu) == N as u64 && t.completed.union(&t.unconfirmed).count() == N;
    let t = take(&mut rx, all_done, 15, || proxy.fault(Fault::EndSession))
        .await
        .unwrap_or_else(|t| panic!("30 s and only {t:?}; broker {:?}", emu.counts()));
    let tried: BTreeSet<String> = t.completed.union(&t.unconfirmed).cloned().collect();
    assert_eq!(tried, all, "{t:?}");
    // No message whose completion was confirmed came again.
    assert!(t.after_confirmed.is_empty(), "{t:?}");
    // Received on the ended link and its completion not sent (the link was gone): each came
    // again, once, after its lock. One whose session ended before the broker's answer came
    // again only if the broker had not applied it.
    let again: BTreeSet<String> = t.again.iter().cloned().collect();
    assert_eq!(again.len(), t.again.len(), "{t:?}");
    assert!(t.lost.is_subset(&again), "{t:?}");
    assert_eq!(rx.restarts(), 1);
    // Every message is completed at the broker once, and none is left: a confirmed
    // completion the broker had not applied would have left its message active, or brought
    // it back.
    let s = stats_when(&emu, |s| s.completed == N as u64).await;
    // Locked on the ended link, whether or not they reached the receiver: the broker's
    // count of expired locks is the count of messages delivered again, and the receiver saw
    // each of those again.
    assert_eq!(
        (s.enqueued, s.completed, s.active, s.redelivered),
        (N as u64, N as u64, 0, s.lock_expired),
        "{s:?} {t:?} {:?}",
        emu.counts()
    );
    assert_eq!(s.redelivered, t.again.len() as u64, "{s:?} {t:?}");
    assert_eq!(s.delivered, N as u64 + s.redelivered, "{s:?}");
    // The receiver's first connection, the one it reopened, and the sender's.
    assert_eq!(emu.counts().connections, 3);
    rx.close().await;
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfers_beyond_the_receivers_credit_end_the_session_and_buffer_no_more() {
    const CREDIT: u32 = 16;
    let emu = emulator().await;
    let proxy = Proxy::start(emu.addr()).await;
    let mut rx = receiver(&proxy, CREDIT).await;
    // The link is attached with its credit granted (the emulator counts a pending receive).
    assert!(
        eventually(Duration::from_secs(5), || emu.receive_requests("orders")
            == Some(1))
        .await
    );
    // 100,000 transfers of 1 KiB (~100 MiB) on the receiver link, which granted 16.
    let before = rss_bytes();
    proxy.fault(Fault::LinkFlood(100_000));
    let limit = "amqp:link:transfer-limit-exceeded".to_string();
    assert!(
        eventually(Duration::from_secs(10), || !proxy.client_ends().is_empty()).await,
        "the client never ended the session"
    );
    assert_eq!(proxy.client_ends(), vec![limit]);
    // Other tests share the process, so this is a bound, not an exact figure.
    let grown = rss_bytes().saturating_sub(before);
    assert!(grown < 48 << 20, "RSS grew {grown} bytes during the flood");
    // The transfers within the credit sat in the link's buffer when the session ended: none
    // is handed out (it could not be settled), and the receive re-attaches on a new
    // connection, where nothing waits.
    match rx.receive(Duration::from_secs(2)).await {
        Ok(None) => {}
        other => panic!("after the flood: {other:?}"),
    }
    assert_eq!(rx.restarts(), 1);
    // The new link serves: each message received and completed once.
    send_all(&emu, 0..10).await;
    let t = take(&mut rx, |t| t.completed.len() == 10, usize::MAX, || {})
        .await
        .unwrap_or_else(|t| panic!("30 s and only {t:?}; broker {:?}", emu.counts()));
    let counts = (
        t.completed.len(),
        t.lost.len() + t.unconfirmed.len(),
        t.again.len(),
    );
    assert_eq!(counts, (10, 0, 0), "{t:?}");
    let s = stats_when(&emu, |s| s.completed == 10).await;
    assert_eq!(
        (s.enqueued, s.delivered, s.completed),
        (10, 10, 10),
        "{s:?}"
    );
    rx.close().await;
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completion_the_broker_never_confirms_or_refuses_ends_in_its_class() {
    const SETTLE: Duration = Duration::from_secs(1);
    let emu = emulator().await;
    let proxy = Proxy::start(emu.addr()).await;
    let mut rx = receiver_settling_within(&proxy, SETTLE).await;
    send_all(&emu, 0..2).await;
    let lateness = lateness::Lateness::watch();
    // The broker's answers are held back: the completion ends at the settle timeout.
    proxy.fault(Fault::NoEcho);
    let m = next(&mut rx).await;
    let started = Instant::now();
    assert_eq!(rx.complete(&m).await, Err(ReceiveError::Timeout));
    let took = started.elapsed();
    assert!(
        took >= SETTLE && took <= lateness.bound(SETTLE),
        "{took:?}, bound {:?}",
        lateness.bound(SETTLE)
    );
    // The broker answers that the lock was lost: said so, at once.
    proxy.fault(Fault::LockLostEcho);
    let m = next(&mut rx).await;
    let started = Instant::now();
    assert_eq!(rx.complete(&m).await, Err(ReceiveError::LockLost));
    assert!(started.elapsed() < SETTLE, "{:?}", started.elapsed());
    // Only the answers were tampered with: the broker applied both completions, and the
    // link stayed up throughout.
    let s = stats_when(&emu, |s| s.completed == 2).await;
    assert_eq!(
        (s.enqueued, s.delivered, s.completed, s.active),
        (2, 2, 2, 0),
        "{s:?}"
    );
    assert_eq!(rx.restarts(), 0);
    rx.close().await;
    emu.shutdown().await;
}
