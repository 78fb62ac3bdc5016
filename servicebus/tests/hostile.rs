//! Hostile AMQP peers: a proxy in front of the emulator that misbehaves in one way on cue
//! (`hostile_proxy`), a fake broker whose first frame is oversized, and clients of the
//! emulator that never finish their handshake or go silent once open (`hostile_idle`). Each
//! send ends in the class that names the fault, within 50 ms of its timeout (plus the
//! machine's wake-up lateness, `lateness`), at 1 and at 16 in flight; the emulator counts what
//! it cut off and keeps serving a good sender alongside.

use std::sync::Arc;
use std::time::Duration;

use hubload_servicebus::emulator::{Emulator, EmulatorConfig, EmulatorHandle};
use hubload_servicebus::{
    ConnectionString, OutgoingMessage, SbError, SbSender, SendOutcome, SenderConfig,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio::time::Instant;

mod hostile_idle;
mod hostile_proxy;
#[path = "../../tests/support/lateness.rs"]
mod lateness;
use hostile_proxy::{rss_bytes, Fault, Proxy};
use lateness::{Lateness, MARGIN};

/// A connection string for 127.0.0.1:`port` with the emulator's development key.
pub(crate) fn local(port: u16) -> ConnectionString {
    use hubload_servicebus::emulator::{DEV_KEY, DEV_KEY_NAME};
    ConnectionString::new("127.0.0.1", Some(port), DEV_KEY_NAME, DEV_KEY, true)
}

/// Poll `f` every 10 ms until it holds or 2 s have passed; whether it held.
async fn eventually(f: impl Fn() -> bool) -> bool {
    eventually_within(Duration::from_secs(2), f).await
}

/// [`eventually`] with a bound of its own.
async fn eventually_within(limit: Duration, f: impl Fn() -> bool) -> bool {
    let until = Instant::now() + limit;
    while !f() {
        if Instant::now() >= until {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

async fn emulator(cfg: EmulatorConfig) -> EmulatorHandle {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    Emulator::start(listener, cfg).await.unwrap()
}

fn config(cs: ConnectionString, send_timeout: Duration) -> SenderConfig {
    SenderConfig {
        connection: cs,
        connections: 1,
        connect_timeout: Duration::from_secs(5),
        send_timeout,
        token_ttl: Duration::from_secs(3600),
    }
}

fn msg<'a>(body: &'a [u8], id: &'a str) -> OutgoingMessage<'a> {
    OutgoingMessage {
        body,
        message_id: id,
        content_type: "application/json",
        properties: &[],
    }
}

/// `n` sends to `topic` at once, each with its outcome and how long it took.
async fn sends(sender: &Arc<SbSender>, topic: &str, n: usize) -> Vec<(SendOutcome, Duration)> {
    let mut set = JoinSet::new();
    for i in 0..n {
        let (sender, topic) = (sender.clone(), topic.to_string());
        set.spawn(async move {
            let body = format!("{{\"i\":{i}}}");
            let id = format!("m-{i}");
            let started = Instant::now();
            let r = sender.send(&topic, msg(body.as_bytes(), &id)).await;
            (r.outcome, started.elapsed())
        });
    }
    let mut out = Vec::new();
    while let Some(r) = set.join_next().await {
        out.push(r.unwrap());
    }
    out
}

/// An emulator, a proxy in front of it, and a sender through the proxy with `topic`'s link
/// attached.
async fn through_proxy(
    cfg: EmulatorConfig,
    send_timeout: Duration,
    topic: &str,
) -> (EmulatorHandle, Proxy, Arc<SbSender>) {
    let emu = emulator(cfg).await;
    let proxy = Proxy::start(emu.addr()).await;
    let cs = proxy.connection_string();
    let sender = SbSender::connect(config(cs, send_timeout)).await.unwrap();
    assert_eq!(sender.prepare(topic).await, SendOutcome::Accepted);
    (emu, proxy, Arc::new(sender))
}

// One thread, as hubload's own sender thread runs the connections' engines: the engine
// reading the flood and the sends' timers share it.
#[tokio::test]
async fn an_empty_frame_flood_does_not_delay_a_deadline() {
    let timeout = Duration::from_millis(400);
    for n in [1, 16] {
        let (emu, proxy, sender) = through_proxy(EmulatorConfig::default(), timeout, "t").await;
        let lateness = Lateness::watch();
        proxy.fault(Fault::EmptyFlood);
        for (outcome, took) in sends(&sender, "t", n).await {
            assert_eq!(outcome, SendOutcome::Timeout, "{n} in flight");
            assert!(
                took >= timeout && took <= lateness.bound(timeout),
                "{n} in flight: {took:?} for a {timeout:?} timeout"
            );
        }
        // The broker got and settled every transfer the client sent; the proxy kept the
        // settlements back. The proxy's one thread pumps the sends to the broker between
        // flood writes, so they may reach it only when the flood ends (5 s at most): wait
        // past that, with room for a machine so busy that the pumping after it takes seconds
        // (seen beside busy loops). A send that timed out before its transfer was written
        // (beside busy loops) never reaches the broker: counted by the proxy, not assumed.
        let flood_ends = Duration::from_secs(5) + Duration::from_secs(15);
        let reached = || {
            let sent = proxy.client_transfers();
            sent > 0 && sent <= n as u64 && emu.counts().accepted == sent
        };
        assert!(
            eventually_within(flood_ends, reached).await,
            "{n} in flight: the client sent {} transfers, the broker accepted {:?}",
            proxy.client_transfers(),
            emu.counts().accepted
        );
        emu.shutdown().await;
    }
}

/// `fault` done by the broker 200 ms into `n` sends (1 and 16) whose settlements take 1 s:
/// every send ends in `want`, the last no later than `bound` (plus the machine's wake-up
/// lateness) after the fault, not at its `timeout`.
async fn broker_ends_under_sends(
    fault: Fault,
    timeout: Duration,
    bound: Duration,
    want: SendOutcome,
) {
    // Settlements take 1 s: every send is still waiting when the broker acts.
    let cfg = EmulatorConfig {
        latency: Duration::from_secs(1),
        ..EmulatorConfig::default()
    };
    for n in [1, 16] {
        let (emu, proxy, sender) = through_proxy(cfg.clone(), timeout, "t").await;
        let lateness = Lateness::watch();
        // Timed from the broker's act to the last send's end: a send task started late on a
        // busy machine cannot look early.
        let waiting = tokio::spawn({
            let sender = sender.clone();
            async move {
                let got = sends(&sender, "t", n).await;
                (got, Instant::now())
            }
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        let acted = Instant::now();
        proxy.fault(fault);
        let (got, all_ended) = waiting.await.unwrap();
        assert_eq!(got.len(), n);
        for (outcome, _) in &got {
            assert_eq!(*outcome, want, "{fault:?}, {n} in flight");
        }
        // Every send was waiting when the broker acted (settlements take 1 s), and the last
        // of them ended within `bound` of it.
        let after = all_ended.duration_since(acted);
        let late = lateness.worst();
        assert!(
            after <= bound + late,
            "{fault:?}, {n} in flight: the last send ended {after:?} after the broker acted (machine's wake-up lateness {late:?})"
        );
        emu.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ended_session_ends_every_send_waiting_on_it_at_once() {
    let want = SendOutcome::SessionEnded {
        condition: "amqp:internal-error".into(),
    };
    broker_ends_under_sends(Fault::EndSession, Duration::from_secs(2), MARGIN, want).await;
}

// Bounded as tests/deadlines.rs bounds a prompt end: far below the send timeout (10 s), so
// a send left to its timeout fails it however busy the machine is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_link_ends_every_send_waiting_on_it_at_once() {
    let want = SendOutcome::LinkDetached {
        condition: "amqp:link:detach-forced".into(),
    };
    let (timeout, bound) = (Duration::from_secs(10), Duration::from_secs(2));
    broker_ends_under_sends(Fault::DetachLink, timeout, bound, want).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnect_that_cannot_open_ends_at_the_send_deadline_as_a_connect_timeout() {
    let timeout = Duration::from_millis(400);
    for n in [1, 16] {
        let (emu, proxy, sender) = through_proxy(EmulatorConfig::default(), timeout, "t").await;
        let lateness = Lateness::watch();
        // The broker closes the connection, then answers nothing on the next one. A send
        // racing the close may still be settled; the first that is not is a closed
        // connection.
        proxy.fault(Fault::Silent);
        let until = Instant::now() + Duration::from_secs(2);
        let first = loop {
            let got = sends(&sender, "t", 1).await.remove(0);
            if got.0 != SendOutcome::Accepted || Instant::now() >= until {
                break got;
            }
        };
        assert_eq!(first.0, SendOutcome::ConnectionError, "{first:?}");
        // The connection is known broken: each of these reopens it inside its own deadline
        // (the connect timeout is 5 s).
        for (outcome, took) in sends(&sender, "t", n).await {
            assert_eq!(outcome, SendOutcome::ConnectTimeout, "{n} in flight");
            assert!(
                took >= timeout && took <= lateness.bound(timeout),
                "{n} in flight: {took:?} for a {timeout:?} timeout"
            );
        }
        emu.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfers_beyond_the_cbs_reply_credit_end_the_session() {
    let (emu, proxy, sender) =
        through_proxy(EmulatorConfig::default(), Duration::from_secs(1), "t").await;
    let lateness = Lateness::watch();
    // The CBS reply link has credit 200 (fe2o3's default). 100,000 transfers of 1 KiB are
    // ~100 MiB: without the check, all of it sat in the link's channel.
    let before = rss_bytes();
    proxy.fault(Fault::CreditFlood(100_000));
    // The client ends the session at the 201st transfer; a send then fails at once.
    let deadline = Instant::now() + Duration::from_secs(5);
    let outcome = loop {
        let got = sends(&sender, "t", 1).await;
        if got[0].0 != SendOutcome::Accepted || Instant::now() >= deadline {
            break got[0].clone();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // Other tests share the process, so this is a bound, not an exact figure: the flood
    // alone would add ~100 MiB.
    let grown = rss_bytes().saturating_sub(before);
    assert!(grown < 48 << 20, "RSS grew {grown} bytes during the flood");
    let limit = "amqp:link:transfer-limit-exceeded".to_string();
    assert_eq!(
        outcome.0,
        SendOutcome::SessionEnded { condition: limit },
        "{outcome:?}"
    );
    let bound = lateness.bound(Duration::from_secs(1));
    assert!(outcome.1 <= bound, "{outcome:?}, bound {bound:?}");
    emu.shutdown().await;
}

#[tokio::test]
async fn an_oversized_first_frame_is_a_one_line_sentence() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut header = [0u8; 8];
        s.read_exact(&mut header).await.unwrap();
        // Echo the header, then announce a 4 GiB frame.
        s.write_all(&header).await.unwrap();
        s.write_all(&[0xff, 0xff, 0xff, 0xf0, 2, 1, 0, 0])
            .await
            .unwrap();
        let mut sink = [0u8; 1024];
        while matches!(s.read(&mut sink).await, Ok(n) if n > 0) {}
    });
    let err = SbSender::connect(config(local(port), Duration::from_secs(1)))
        .await
        .unwrap_err();
    assert!(matches!(err, SbError::Connect { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "cannot connect to Service Bus at 127.0.0.1:{port}: "
        )),
        "{text}"
    );
    assert!(
        text.contains("frame larger than the maximum frame size"),
        "{text}"
    );
    assert!(
        !text.contains("Custom {") && !text.contains("kind:"),
        "{text}"
    );
    assert!(!text.contains('\n'), "{text}");
    server.abort();
}

/// Open `n` TCP connections to `addr` that each send `bytes` and then nothing.
async fn half_open(addr: std::net::SocketAddr, n: usize, bytes: &'static [u8]) -> Vec<TcpStream> {
    let mut conns = Vec::with_capacity(n);
    for _ in 0..n {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(bytes).await.unwrap();
        conns.push(s);
    }
    conns
}

/// Read `s` (discarding what comes) until the peer closes it or `limit` passes; how long
/// that took from `since`, or `None` if it was still open.
async fn closed_after(mut s: TcpStream, since: Instant, limit: Duration) -> Option<Duration> {
    let mut sink = [0u8; 256];
    tokio::time::timeout(limit, async {
        while matches!(s.read(&mut sink).await, Ok(n) if n > 0) {}
    })
    .await
    .ok()
    .map(|()| since.elapsed())
}

/// `n` connections to `addr` that send 5 bytes of the protocol header and nothing more, each
/// watched from its connect until the peer closes it (or `limit`).
async fn stalled_headers(
    addr: std::net::SocketAddr,
    n: usize,
    limit: Duration,
) -> JoinSet<Option<Duration>> {
    let mut set = JoinSet::new();
    for _ in 0..n {
        let since = Instant::now();
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(b"AMQP\x03").await.unwrap();
        set.spawn(closed_after(s, since, limit));
    }
    set
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_emulator_closes_handshakes_that_never_finish_and_serves_a_good_sender() {
    let handshake = Duration::from_millis(300);
    for n in [1usize, 16] {
        let lateness = Lateness::watch();
        let emu = emulator(EmulatorConfig {
            handshake_timeout: handshake,
            ..EmulatorConfig::default()
        })
        .await;
        let mut stalled = stalled_headers(emu.addr(), n, Duration::from_secs(2)).await;
        // A good sender alongside, whose handshake finishes.
        let sender = Arc::new(
            SbSender::connect(config(local(emu.addr().port()), Duration::from_secs(5)))
                .await
                .unwrap(),
        );
        let good = sends(&sender, "t", 20).await;
        assert!(
            good.iter().all(|(o, _)| *o == SendOutcome::Accepted),
            "{good:?}"
        );
        while let Some(took) = stalled.join_next().await {
            let took = took.unwrap().expect("closed");
            assert!(
                took >= handshake && took <= lateness.bound(handshake),
                "{n} stalled: closed after {took:?} for a {handshake:?} handshake timeout"
            );
        }
        // The emulator counts a connection just after closing it: wait for the count.
        assert!(eventually(|| emu.counts().handshake_timeouts == n as u64).await);
        let c = emu.counts();
        assert_eq!(c.handshake_timeouts, n as u64, "{c:?}");
        assert_eq!((c.connections, c.accepted), (1, 20), "{c:?}");
        emu.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_emulator_sheds_two_thousand_stalled_headers() {
    let handshake = Duration::from_millis(500);
    let emu = emulator(EmulatorConfig {
        handshake_timeout: handshake,
        ..EmulatorConfig::default()
    })
    .await;
    let mut stalled = stalled_headers(emu.addr(), 2_000, Duration::from_secs(10)).await;
    let sender = SbSender::connect(config(local(emu.addr().port()), Duration::from_secs(5)))
        .await
        .unwrap();
    let good = sends(&Arc::new(sender), "t", 20).await;
    assert!(
        good.iter().all(|(o, _)| *o == SendOutcome::Accepted),
        "{good:?}"
    );
    let mut closed = 0;
    while let Some(took) = stalled.join_next().await {
        // Opening 2,000 sockets and watching them all is slow in a debug build on a busy
        // machine: this checks that each is closed, not how promptly (the test above does).
        assert!(took.unwrap().is_some(), "a stalled header outlived 10 s");
        closed += 1;
    }
    assert_eq!(closed, 2_000);
    // The emulator counts a connection just after closing it: wait for the count.
    assert!(eventually(|| emu.counts().handshake_timeouts == 2_000).await);
    let c = emu.counts();
    assert_eq!(
        (c.handshake_timeouts, c.connections, c.accepted),
        (2_000, 1, 20),
        "{c:?}"
    );
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_emulator_closes_connections_over_its_limit_at_once() {
    let emu = emulator(EmulatorConfig {
        max_connections: 20,
        ..EmulatorConfig::default()
    })
    .await;
    let held = half_open(emu.addr(), 20, b"AMQP").await;
    let mut over = JoinSet::new();
    for s in half_open(emu.addr(), 5, b"AMQP").await {
        over.spawn(closed_after(s, Instant::now(), Duration::from_secs(2)));
    }
    while let Some(took) = over.join_next().await {
        assert!(
            took.unwrap().is_some(),
            "a connection over the limit stayed open"
        );
    }
    assert_eq!(emu.counts().over_limit, 5);
    drop(held);
    emu.shutdown().await;
}

#[tokio::test]
async fn the_emulator_ends_a_handshake_with_an_oversized_frame_at_once() {
    let emu = emulator(EmulatorConfig::default()).await;
    // A SASL header, then a frame that announces 4 GiB.
    let mut s = TcpStream::connect(emu.addr()).await.unwrap();
    s.write_all(b"AMQP\x03\x01\x00\x00").await.unwrap();
    s.write_all(&[0xff, 0xff, 0xff, 0xf0, 2, 1, 0, 0])
        .await
        .unwrap();
    let took = closed_after(s, Instant::now(), Duration::from_secs(1)).await;
    assert!(took.is_some(), "still open after 1 s");
    assert!(eventually(|| emu.counts().handshake_failures == 1).await);
    assert_eq!(emu.counts().handshake_timeouts, 0);
    emu.shutdown().await;
}
