//! Tests that an exchange ends at its deadline whatever the server sends (bytes that never
//! stop coming, each read ready at once; interim responses that never end) and whichever task
//! polls its connection's timer.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

use tokio::time::Instant;

use super::*;
use crate::result::OtherReason;
use crate::test_lateness::Lateness;

const REQUEST: &[u8] =
    b"POST /hub?hub.mode=publish&hub.topic=t HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}";

fn cfg() -> PoolConfig {
    PoolConfig {
        max_conns: 1,
        connect_timeout: Duration::from_secs(5),
        tls_timeout: Duration::from_secs(5),
        pool_timeout: Duration::from_secs(5),
    }
}

/// A server on its own OS thread (so it keeps writing while the client's runtime is busy)
/// that reads a request head, writes `head`, then `flood` over and over as fast as the socket
/// takes it, until the client goes away.
fn flooding_server(head: &'static [u8], flood: &'static [u8]) -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                let mut buf = [0u8; 4096];
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let many = flood.repeat(64 * 1024 / flood.len());
                if conn.write_all(head).is_err() {
                    return;
                }
                while conn.write_all(&many).is_ok() {}
            });
        }
    });
    addr
}

/// Send one request with a `limit_ms` deadline; the error and how long it took.
async fn timed(addr: SocketAddr, limit_ms: u64) -> (Result<Response, TransportError>, Duration) {
    let pool = HttpPool::new(addr, cfg());
    let started = Instant::now();
    let r = pool
        .send(REQUEST, started + Duration::from_millis(limit_ms))
        .await;
    (r, started.elapsed())
}

/// Bytes that keep every read ready spend the task's cooperative budget; the deadline must
/// still be seen (a timer polled without budget never fires).
#[tokio::test]
async fn an_endless_fast_body_ends_at_the_deadline() {
    let bodies: [(&[u8], &[u8]); 2] = [
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"1\r\na\r\n",
        ),
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", b"aaaaaaaa"),
    ];
    for (head, flood) in bodies {
        let lateness = Lateness::watch();
        let (r, took) = timed(flooding_server(head, flood), 300).await;
        assert_eq!(
            r.unwrap_err(),
            TransportError::Timeout(TimeoutKind::Response)
        );
        let limit = Duration::from_millis(300);
        assert!(
            took >= limit && took <= lateness.bound(limit),
            "{took:?} for {}, bound {:?}",
            String::from_utf8_lossy(head),
            lateness.bound(limit)
        );
    }
}

/// An endless run of `100 Continue` heads is a protocol error after the fifth, long before
/// the deadline.
#[tokio::test]
async fn an_interim_flood_is_refused_after_five() {
    let (r, took) = timed(flooding_server(b"", b"HTTP/1.1 100 Continue\r\n\r\n"), 300).await;
    assert_eq!(
        r.unwrap_err(),
        TransportError::Protocol(OtherReason::Unexpected1xx)
    );
    assert!(took < Duration::from_millis(300), "{took:?}");
}

/// One answer: `interim` interim heads, then a 204; read whole in one read and one byte per
/// read.
async fn after_interim(interim: usize, trickled: bool) -> Result<Response, TransportError> {
    let mut reply = b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n".repeat(interim);
    reply.extend_from_slice(b"HTTP/1.1 204 No Content\r\n\r\n");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut s, _) = listener.accept().await.unwrap();
        s.set_nodelay(true).unwrap();
        let mut buf = [0u8; 4096];
        let _ = s.read(&mut buf).await;
        if trickled {
            for b in &reply {
                s.write_all(std::slice::from_ref(b)).await.unwrap();
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
        } else {
            s.write_all(&reply).await.unwrap();
        }
        let _ = s.read(&mut buf).await;
    });
    HttpPool::new(addr, cfg())
        .send(REQUEST, Instant::now() + Duration::from_secs(5))
        .await
}

#[tokio::test]
async fn five_interim_responses_are_skipped_and_a_sixth_is_refused() {
    for trickled in [false, true] {
        let ok = after_interim(5, trickled).await.unwrap();
        assert_eq!(ok.status, 204, "trickled: {trickled}");
        assert_eq!(
            after_interim(6, trickled).await.unwrap_err(),
            TransportError::Protocol(OtherReason::Unexpected1xx),
            "trickled: {trickled}"
        );
    }
}

/// A connection's deadline timer (`conn::DeadlineTimer`) skips a poll that would change
/// nothing. Taken over by another task, it must be polled for that task: the second task is
/// woken at its own deadline, though the first task's poll left the timer pending for it.
#[tokio::test(start_paused = true)]
async fn a_deadline_timer_taken_over_by_another_task_wakes_that_task() {
    use std::sync::{Arc, Mutex};
    use std::task::Poll;

    let timer = Arc::new(Mutex::new(super::conn::DeadlineTimer::default()));
    let start = Instant::now();
    let (first, second) = (
        start + Duration::from_secs(1),
        start + Duration::from_secs(2),
    );
    let t = timer.clone();
    // The first task registers the timer for its deadline, then ends.
    tokio::spawn(std::future::poll_fn(move |cx| {
        assert!(t.lock().unwrap().poll(cx, first).is_pending());
        Poll::Ready(())
    }))
    .await
    .unwrap();
    // The second task, with a later deadline: woken when the first deadline passes, then at
    // its own (a missed wake-up would leave it pending until the guard below).
    let t = timer.clone();
    let waited = tokio::spawn(tokio::time::timeout(
        Duration::from_secs(10),
        std::future::poll_fn(move |cx| t.lock().unwrap().poll(cx, second)),
    ))
    .await
    .unwrap();
    assert!(waited.is_ok(), "the second task was never woken");
    assert_eq!(Instant::now(), second);
}

/// The same task polling again with a later deadline (the skipped poll), then with one
/// earlier than the timer's: the timer moves back at once, and the wait ends at that deadline.
#[tokio::test(start_paused = true)]
async fn a_skipped_deadline_poll_still_ends_at_an_earlier_deadline() {
    use std::task::Poll;

    let mut timer = super::conn::DeadlineTimer::default();
    let start = Instant::now();
    let deadlines = [3, 5, 2].map(|s| start + Duration::from_secs(s));
    let mut polls = 0;
    std::future::poll_fn(|cx| {
        // 3 s, then 5 s (woken at once in between, as by a socket), then 2 s until it is over.
        let at = deadlines[polls.min(2)];
        polls += 1;
        match timer.poll(cx, at) {
            Poll::Ready(()) => Poll::Ready(()),
            Poll::Pending if polls < 3 => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            Poll::Pending => Poll::Pending,
        }
    })
    .await;
    assert_eq!(Instant::now(), start + Duration::from_secs(2));
}
