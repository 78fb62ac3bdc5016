//! Tests that one delivery attempt over a worker's connection ends by its timeout whatever the
//! callback sends: an endless run of interim answers, a head or a body trickled forever.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use url::Url;

use crate::callback_conn::{Answer, Conn, Target};
use crate::test_lateness::Lateness;

/// A callback on 127.0.0.1:0 that reads a request head, writes `first`, then `each` every
/// `gap` (back to back when `gap` is zero) until the hub goes away.
async fn callback(first: &'static [u8], each: &'static [u8], gap: Duration) -> Target {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/cb", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let Ok((mut s, _)) = listener.accept().await else {
            return;
        };
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
        let many = each.repeat(if gap.is_zero() { 256 } else { 1 });
        if s.write_all(first).await.is_err() {
            return;
        }
        while s.write_all(&many).await.is_ok() {
            tokio::time::sleep(gap).await;
        }
    });
    Target::new(&Url::parse(&url).unwrap()).unwrap()
}

/// One delivery of a 2-byte body with a `timeout_ms` timeout: its answer and how long it took.
async fn deliver(target: &Target, timeout_ms: u64) -> (Answer, Duration) {
    let mut conn = Conn::default();
    conn.start();
    conn.push(target, |out| {
        out.extend_from_slice(b"Content-Length: 2\r\n\r\n");
    });
    let mut answers = Vec::new();
    let started = Instant::now();
    conn.send(
        target,
        &[b"{}"],
        Duration::from_millis(timeout_ms),
        &mut answers,
    )
    .await;
    (answers[0], started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interim_flood_fails_the_delivery_at_once() {
    let t = callback(b"", b"HTTP/1.1 100 Continue\r\n\r\n", Duration::ZERO).await;
    let (answer, took) = deliver(&t, 300).await;
    assert!(matches!(answer, Answer::Failed(_)), "{answer:?}");
    assert!(took < Duration::from_millis(300), "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickled_head_or_body_ends_at_the_timeout() {
    let drip = Duration::from_millis(20);
    for (first, each) in [
        (&b"HTTP/1.1 204 No Content\r\nX-Slow: "[..], &b"a"[..]),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n", b"a"),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"1\r\na\r\n",
        ),
    ] {
        let t = callback(first, each, drip).await;
        let lateness = Lateness::watch();
        let (answer, took) = deliver(&t, 300).await;
        assert!(matches!(answer, Answer::Failed(_)), "{answer:?}");
        let why = String::from_utf8_lossy(first);
        let limit = Duration::from_millis(300);
        let bound = lateness.bound(limit);
        assert!(
            took >= limit && took <= bound,
            "{took:?} for {why}, bound {bound:?}"
        );
    }
}
