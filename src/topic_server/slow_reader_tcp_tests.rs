//! The topic server's exchange deadline against clients that never read their answer, over
//! real TCP on 127.0.0.1, at 1 and 16 connections, while a good client still gets every fetch.
//!
//! The slow client shrinks the connection from its side before connecting (the smallest
//! receive buffer, a 536-byte segment), so a 128 KB event cannot all be written and the
//! server's write waits until the deadline (docs/deadlines.md explains the sizes).

use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::net::TcpSocket;

use super::misbehaving_fetcher_tests::{serve_with_a_good_client, workload, LIMITS};
use crate::serve::misbehave_tests::{assert_on_time, settled};
use crate::serve::ServerCounts;
use crate::test_lateness::Lateness;

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
    let w = workload(EVENT_BYTES);
    for n in [1usize, 16] {
        let lateness = Lateness::watch();
        // A hub that behaves fetches topic 0 while the slow readers wait; they ask for topic 1.
        const GOOD: u64 = 20;
        let (ts, path1, good) = serve_with_a_good_client(&w, EVENT_BYTES, GOOD).await;
        let addr = ts.local_addr();
        let fetch_slow = format!("GET {path1} HTTP/1.1\r\nHost: hubload-topics\r\n\r\n");
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
        assert_on_time(
            &took,
            LIMITS.exchange,
            &lateness,
            &format!("never reads, {n}, TCP"),
        );
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
                over_limit: 0,
            },
            "{n}"
        );
        let st = ts.take_stats();
        assert_eq!((st.by_topic[0], st.by_topic[1]), (GOOD, n), "{n}");
        ts.shutdown();
    }
}
