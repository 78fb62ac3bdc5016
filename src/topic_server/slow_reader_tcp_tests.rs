//! The topic server's exchange deadline against clients that never read their answer, over real TCP on 127.0.0.1, at 1 and 16 connections, while a good client still gets every fetch.
//!
//! The kernel lets a sender queue megabytes on a connection (the send buffer autotunes up to
//! `tcp_wmem`'s 4 MB; loopback segments are 64 KB), so an answer that a reader never takes is
//! usually already "written" when the server lets go of it. The slow client here keeps the
//! connection small from its side, before it connects: the smallest receive buffer the kernel
//! allows (2,304 B: a small window) and a 536-byte maximum segment (IPv4's default), which it
//! announces. The server's send buffer then stays near its initial size (it grows only when
//! the congestion window, not the receiver's window, limits the sender): about 38 KB of
//! answer fits in both buffers, measured on this machine (85 KB with a 4 KB buffer and
//! 1,000-byte segments; 4.3 MB with neither), so a 128 KB event cannot be written and the
//! write waits until the deadline. (Not larger: the events are made while the server's
//! thread waits, and 16 large ones at once take a debug build past the 50 ms margin.)

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use super::{TopicServer, TopicServerConfig};
use crate::serve::misbehave_tests::{assert_on_time, settled};
use crate::serve::{ServerCounts, ServerDeadlines};
use crate::workload::{Distribution, TopicLayout, Workload, WorkloadConfig};

const LIMITS: ServerDeadlines = ServerDeadlines {
    idle: Duration::from_millis(250),
    exchange: Duration::from_millis(400),
};

/// Events of 128 KB: over three times what a slow reader's connection holds.
const EVENT_BYTES: usize = 128 * 1024;

/// Connect with a small window and segment, send `request` whole and never read: how long
/// after the request the connection was reset (the socket's pending error, polled every
/// 2 ms, which reading it would have hidden behind the queued answer), and that error.
async fn never_reads(addr: std::net::SocketAddr, request: &[u8]) -> (Duration, std::io::Error) {
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(1).unwrap();
    socket2::SockRef::from(&socket).set_tcp_mss(536).unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    let start = Instant::now();
    stream.write_all(request).await.unwrap();
    // Bounded: a server that never closed would fail the test at 5 s, not hang it.
    while start.elapsed() < Duration::from_secs(5) {
        if let Some(e) = stream.take_error().unwrap() {
            return (start.elapsed(), e);
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    panic!("the server did not close a client that never reads within 5 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_never_reads_is_reset_at_the_exchange_deadline_over_tcp() {
    let w = Arc::new(Workload::new(WorkloadConfig {
        tenants: 2,
        sps: 1,
        users: 1,
        channels: vec!["login".into()],
        layout: TopicLayout::PerTenantChannel,
        payload_bytes: Some(EVENT_BYTES),
        seed: 5,
        distribution: Distribution::Uniform,
    }));
    for n in [1usize, 16] {
        let ts = TopicServer::start(
            TopicServerConfig {
                listen: "127.0.0.1:0".parse().unwrap(),
                hub_url: "http://hub.example/hub".into(),
                topic_url_prefix: None,
                queue_cap: 1024,
                deadlines: LIMITS,
            },
            w.clone(),
        )
        .await
        .unwrap();
        let addr = ts.local_addr();
        let path = |t: usize| {
            let url = ts.topic_url(t).unwrap();
            url::Url::parse(&url).unwrap().path().to_owned()
        };
        // A hub that behaves: fetches of topic 0, 20 ms apart, while the slow readers wait,
        // each read whole on its own connection; the slow readers ask for topic 1.
        const GOOD: u64 = 20;
        for seq in 0..GOOD {
            ts.note_published(0, seq, 1_000_000 + seq);
        }
        ts.note_published(1, GOOD, 1_000_000);
        let fetch = format!("GET {} HTTP/1.1\r\nConnection: close\r\n\r\n", path(0));
        let good = tokio::spawn(async move {
            let mut whole = 0;
            for _ in 0..GOOD {
                let mut s = TcpStream::connect(addr).await.unwrap();
                s.write_all(fetch.as_bytes()).await.unwrap();
                let mut answer = Vec::new();
                s.read_to_end(&mut answer).await.unwrap();
                whole +=
                    u64::from(answer.starts_with(b"HTTP/1.1 200") && answer.len() > EVENT_BYTES);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            whole
        });
        let fetch_slow = format!("GET {} HTTP/1.1\r\nHost: hubload-topics\r\n\r\n", path(1));
        let tasks: Vec<_> = (0..n)
            .map(|_| {
                let request = fetch_slow.clone().into_bytes();
                tokio::spawn(async move { never_reads(addr, &request).await })
            })
            .collect();
        let mut took = Vec::with_capacity(n);
        for t in tasks {
            let (t, e) = t.await.unwrap();
            // Reset (EPIPE instead when the kernel had already taken the client's half-close).
            use std::io::ErrorKind::{BrokenPipe, ConnectionReset};
            assert!(matches!(e.kind(), ConnectionReset | BrokenPipe), "{n}: {e}");
            took.push((t, 0));
        }
        assert_on_time(&took, LIMITS.exchange, &format!("never reads, {n}, TCP"));
        assert_eq!(
            good.await.unwrap(),
            GOOD,
            "{n}: every good fetch got its event whole"
        );
        let counts = settled(|| ts.server_counts()).await;
        let n = n as u64;
        assert_eq!(
            counts,
            ServerCounts {
                accepted: n + GOOD,
                ended: n + GOOD,
                // A slow reader's request is answered too; the writing of it is late.
                answered: GOOD + n,
                idle_closed: 0,
                read_late: 0,
                write_late: n,
            },
            "{n}"
        );
        let st = ts.take_stats();
        assert_eq!((st.by_topic[0], st.by_topic[1]), (GOOD, n), "{n}");
        ts.shutdown();
    }
}
