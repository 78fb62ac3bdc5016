//! Hostile clients of the hub: slowloris heads and silent connections (closed at the head
//! timeout), clients that never read their answers (reset once a write makes no progress),
//! and more connections than the cap (closed at accept), each counted exactly in the hub's
//! own `/stats`, with a well-behaved client served alongside.

use std::net::SocketAddr;
use std::time::Duration;

use hubload_hub::{serve_limited, HubConfig, HubState, ServeLimits, ServeStats, StatsSnapshot};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::lateness::Lateness;

/// A hub on 127.0.0.1:0 with `limits`; dropping the sender stops it.
async fn hub(limits: &ServeLimits) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let state = HubState::new(HubConfig::default());
    tokio::spawn(serve_limited(listener, state, limits.clone(), async move {
        let _ = stopped.await;
    }));
    (addr, stop)
}

/// One `GET /stats` on its own connection: the answer, if it came within 5 s.
async fn get_stats(addr: SocketAddr) -> Option<Vec<u8>> {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /stats HTTP/1.1\r\nHost: hub\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut answer)).await;
    read.is_ok().then_some(answer)
}

/// One `GET /stats` on its own connection: whether it was answered 200.
async fn good_request(addr: SocketAddr) -> bool {
    get_stats(addr)
        .await
        .is_some_and(|a| a.starts_with(b"HTTP/1.1 200"))
}

/// The hub's `/stats`, read over HTTP on a connection of its own.
async fn stats(addr: SocketAddr) -> StatsSnapshot {
    let answer = get_stats(addr).await.expect("/stats answered within 5 s");
    let at = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head");
    serde_json::from_slice(&answer[at + 4..]).expect("/stats is JSON")
}

/// The `serve` counts of `/stats` once they equal `want` (polled for up to 2 s: a
/// connection's count lands as its task ends), else the last seen.
async fn serve_counts(addr: SocketAddr, want: ServeStats) -> ServeStats {
    let until = Instant::now() + Duration::from_secs(2);
    loop {
        let got = stats(addr).await.serve;
        if got == want || Instant::now() >= until {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Read `s` until the hub closes it (or `limit`): how long after `since` that was.
async fn closed_after(mut s: TcpStream, since: Instant, limit: Duration) -> Option<Duration> {
    let mut sink = [0u8; 512];
    tokio::time::timeout(limit, async {
        while matches!(s.read(&mut sink).await, Ok(n) if n > 0) {}
    })
    .await
    .ok()
    .map(|()| since.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_silent_heads_are_closed_at_the_head_timeout() {
    for n in [1u64, 16] {
        // Fresh counts for each round.
        let limits = ServeLimits {
            head_timeout: Duration::from_millis(300),
            ..ServeLimits::default()
        };
        let (addr, _stop) = hub(&limits).await;
        let lateness = Lateness::watch();
        let mut waits = JoinSet::new();
        for i in 0..n {
            let since = Instant::now();
            let mut s = TcpStream::connect(addr).await.unwrap();
            // Half of them send half an HTTP/1.1 head (hyper's head timeout ends them), the
            // others the start of the h2c preface or nothing (hyper-util waits for the rest
            // of the preface to choose a protocol: the hub's own watchdog ends them).
            match i % 4 {
                0 | 2 => s.write_all(b"POST /hub HTTP/1.1\r\nHost: h").await.unwrap(),
                1 => s.write_all(b"PRI * HTTP").await.unwrap(),
                _ => {}
            }
            waits.spawn(closed_after(s, since, Duration::from_secs(5)));
        }
        let served = good_request(addr).await;
        while let Some(took) = waits.join_next().await {
            let took = took.unwrap().expect("closed within 5 s");
            // A silent connection is closed at the hub's watchdog tick after its head timeout
            // (a quarter of the timeout, hub/src/serve.rs).
            let bound = lateness.bound(limits.head_timeout + limits.head_timeout / 4);
            assert!(
                took >= limits.head_timeout && took <= bound,
                "{n} slow heads: closed after {took:?}, bound {bound:?}"
            );
        }
        assert!(served, "the well-behaved request was not answered");
        // Every one is a head timeout; those that never sent enough to choose a protocol are
        // the silent ones.
        let want = ServeStats {
            head_timeouts: n,
            silent: n / 2,
            ..ServeStats::default()
        };
        assert_eq!(serve_counts(addr, want).await, want, "{n} slow heads");
    }
}

/// Connect with the smallest window and a 536-byte segment, so the hub's answers fill the
/// connection after a few tens of KB, send `requests` pipelined and never read: how long
/// the hub took to reset the connection after the last request was written.
async fn never_reads(addr: SocketAddr, requests: usize) -> Duration {
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(1).unwrap();
    socket2::SockRef::from(&socket).set_tcp_mss(536).unwrap();
    let stream = socket.connect(addr).await.unwrap();
    let (read, mut write) = stream.into_split();
    let request = b"GET /stats HTTP/1.1\r\nHost: hub\r\n\r\n".repeat(requests);
    // The hub stops reading once its answers cannot be written: write what it takes.
    let _ = tokio::time::timeout(Duration::from_secs(2), write.write_all(&request)).await;
    let written = Instant::now();
    let stream = read.reunite(write).unwrap();
    // Bounded: a hub that never reset the connection fails the test at 5 s.
    while written.elapsed() < Duration::from_secs(5) {
        if let Some(_e) = stream.take_error().unwrap() {
            return written.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    panic!("the hub did not reset a client that never reads within 5 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_is_reset_and_counted() {
    for n in [1u64, 16] {
        // Fresh counts for each round.
        let limits = ServeLimits {
            write_stall: Duration::from_millis(300),
            ..ServeLimits::default()
        };
        let (addr, _stop) = hub(&limits).await;
        let lateness = Lateness::watch();
        let mut readers = JoinSet::new();
        for _ in 0..n {
            readers.spawn(never_reads(addr, 4_000));
        }
        let served = good_request(addr).await;
        while let Some(took) = readers.join_next().await {
            // The stall starts when the socket is full, some time before the last request
            // is written; the reset follows it by the stall limit and a watchdog tick.
            let took = took.unwrap();
            let bound = lateness.bound(limits.write_stall + limits.write_stall / 4);
            assert!(
                took <= bound,
                "{n} never-readers: reset {took:?} after the last request, bound {bound:?}"
            );
        }
        assert!(served, "the well-behaved request was not answered");
        let want = ServeStats {
            write_stalled: n,
            ..ServeStats::default()
        };
        assert_eq!(serve_counts(addr, want).await, want, "{n} never-readers");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_cap_are_closed_at_accept() {
    let limits = ServeLimits {
        max_connections: 20,
        ..ServeLimits::default()
    };
    let (addr, _stop) = hub(&limits).await;
    let mut held = Vec::new();
    for _ in 0..20 {
        held.push(TcpStream::connect(addr).await.unwrap());
    }
    let mut over = JoinSet::new();
    for _ in 0..5 {
        let s = TcpStream::connect(addr).await.unwrap();
        over.spawn(closed_after(s, Instant::now(), Duration::from_secs(2)));
    }
    while let Some(took) = over.join_next().await {
        assert!(
            took.unwrap().is_some(),
            "a connection over the cap stayed open"
        );
    }
    // `/stats` cannot be asked while the cap is full: the counts it will show, read here.
    let want = ServeStats {
        over_limit: 5,
        ..ServeStats::default()
    };
    assert_eq!(limits.counts.snapshot(), want);
    drop(held);
    // The held connections' tasks end (the hub sees them close); then it serves again. A
    // request that comes before is over the cap too.
    let until = Instant::now() + Duration::from_secs(2);
    let mut refused = 0;
    while !good_request(addr).await {
        assert!(
            Instant::now() < until,
            "the hub did not serve again once the held connections closed"
        );
        refused += 1;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let want = ServeStats {
        over_limit: 5 + refused,
        ..ServeStats::default()
    };
    assert_eq!(serve_counts(addr, want).await, want);
}
