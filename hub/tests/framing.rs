//! Deliveries to a raw HTTP/1.1 callback that answers in every framing a server may use
//! (no body, chunked with a trailer, 100 Continue first, a Content-Length body, and
//! `Connection: close`): each is read to its end, the connection is reused exactly when it
//! may be, and the counts are exact.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

use hubload_hub::HubConfig;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use crate::util::{challenge_answer, eventually, request, subscribe, TestHub};

/// The answers to the deliveries, in turn; the last one closes the connection.
const ANSWERS: [&str; 4] = [
    "HTTP/1.1 204 No Content\r\n\r\n",
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nX-T: 1\r\n\r\n",
    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\nok",
    "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
];

#[derive(Default)]
struct Seen {
    posts: AtomicUsize,
    post_connections: AtomicUsize,
}

async fn callback(mut s: TcpStream, seen: Arc<Seen>) {
    let mut buf = Vec::new();
    let mut first = true;
    while let Some((method, path, _)) = request(&mut s, &mut buf).await {
        if method == "GET" {
            s.write_all(challenge_answer(&path).as_bytes())
                .await
                .unwrap();
            continue;
        }
        if first {
            seen.post_connections.fetch_add(1, SeqCst);
            first = false;
        }
        let k = seen.posts.fetch_add(1, SeqCst);
        let answer = ANSWERS[k % ANSWERS.len()];
        s.write_all(answer.as_bytes()).await.unwrap();
        if answer.contains("close") {
            return;
        }
    }
}

#[tokio::test]
async fn every_framing_is_read_to_its_end_and_the_connection_reused_when_allowed() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let s2 = seen.clone();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            tokio::spawn(callback(s, s2.clone()));
        }
    });
    // One worker: deliveries go one after another over its one connection.
    let hub = TestHub::start(HubConfig {
        delivery_concurrency: 1,
        ..HubConfig::default()
    })
    .await;
    hub.register("t").await;
    subscribe(&hub, "t", &format!("http://{addr}/cb?x=1"), &[]).await;
    const N: u64 = 40;
    for i in 0..N {
        assert_eq!(
            hub.publish("t", "application/json", format!("{i}").as_bytes())
                .await
                .0,
            200
        );
    }
    eventually("every delivery", || {
        hub.state.stats().distribution.delivered == N
    })
    .await;
    let d = hub.stats().await.distribution;
    assert_eq!(
        (d.attempts, d.delivered, d.retried, d.failed, d.pending),
        (N, N, 0, 0, 0)
    );
    assert!(d.failed_attempts.is_empty(), "{:?}", d.failed_attempts);
    assert_eq!(seen.posts.load(SeqCst) as u64, N);
    // Every 4th answer closes; a new connection follows each but the last.
    assert_eq!(seen.post_connections.load(SeqCst) as u64, 1 + N / 4 - 1);
    hub.stop().await;
}
