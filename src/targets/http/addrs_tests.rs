//! Tests: a pool over several addresses spreads its connections over them, skips one that
//! refuses, and counts attempts per address exactly as the servers count requests.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::time::Instant;

use super::{HttpPool, PoolConfig};
use crate::result::Outcome;

const REPLY: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
const REQUEST: &[u8] = b"POST /hub HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}";

/// A keep-alive server on `ip` answering every request (one read each: they are tiny);
/// returns its address and its count of requests served.
async fn counting_server(ip: &str) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind((ip, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let served = Arc::new(AtomicUsize::new(0));
    let count = served.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let count = count.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                while matches!(s.read(&mut buf).await, Ok(n) if n > 0) {
                    count.fetch_add(1, Ordering::SeqCst);
                    if s.write_all(REPLY).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, served)
}

fn cfg(max_conns: usize) -> PoolConfig {
    PoolConfig {
        max_conns,
        connect_timeout: Duration::from_secs(5),
        tls_timeout: Duration::from_secs(5),
        pool_timeout: Duration::from_secs(10),
    }
}

/// An address on 127.0.0.1 where nothing listens.
/// A port that refuses connections: bound and never listened on, and held while the socket
/// lives, so no server of another test can take the port meanwhile (a port freed by closing
/// a listener was handed to the next test's listener once, beside busy loops).
fn refusing() -> (SocketAddr, tokio::net::TcpSocket) {
    let s = tokio::net::TcpSocket::new_v4().unwrap();
    s.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    (s.local_addr().unwrap(), s)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_listeners_behind_one_host_share_the_load() {
    let (a, served_a) = counting_server("127.0.0.1").await;
    let (b, served_b) = counting_server("127.0.0.2").await;
    let pool = Arc::new(HttpPool::with_addrs(vec![a, b], cfg(4)));
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move {
                for _ in 0..50 {
                    let deadline = Instant::now() + Duration::from_secs(10);
                    let resp = pool.send(REQUEST, deadline).await.unwrap();
                    assert_eq!(resp.outcome(), Outcome::Accepted);
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let (na, nb) = (
        served_a.load(Ordering::SeqCst),
        served_b.load(Ordering::SeqCst),
    );
    assert_eq!(na + nb, 400);
    assert_eq!(pool.addr_attempts(), vec![na as u64, nb as u64]);
    // Four connections taken in turn: two to each address.
    assert!(na > 0 && nb > 0, "{na} / {nb}");
}

#[tokio::test]
async fn an_address_that_refuses_is_skipped() {
    let (dead, _held) = refusing();
    let (live, served) = counting_server("127.0.0.1").await;
    let pool = HttpPool::with_addrs(vec![dead, live], cfg(1));
    for _ in 0..10 {
        let deadline = Instant::now() + Duration::from_secs(5);
        let resp = pool.send(REQUEST, deadline).await.unwrap();
        assert_eq!(resp.outcome(), Outcome::Accepted);
    }
    assert_eq!(served.load(Ordering::SeqCst), 10);
    assert_eq!(pool.addr_attempts(), vec![0, 10]);
}

#[tokio::test]
async fn resolving_keeps_only_the_addresses_that_accept() {
    use crate::targets::websub::HubEndpoint;
    let (live, _) = counting_server("127.0.0.1").await;
    let url = url::Url::parse(&format!("http://localhost:{}/hub", live.port())).unwrap();
    let hub = HubEndpoint::resolve(&url, None, None, None).await.unwrap();
    // `localhost` may also be ::1, where nothing listens on this port.
    assert_eq!(hub.addrs, vec![live]);
}

#[tokio::test]
async fn the_start_probe_drops_refusing_addresses_unless_all_refuse() {
    use crate::targets::websub::accepting;
    let (dead, _held) = refusing();
    let (live, _) = counting_server("127.0.0.1").await;
    let limit = Duration::from_secs(2);
    assert_eq!(accepting(vec![dead, live], limit).await, vec![live]);
    assert_eq!(accepting(vec![live, dead], limit).await, vec![live]);
    // None accepts: all are kept, so the run counts the refusals instead of not starting.
    let (dead2, _held2) = refusing();
    assert_eq!(accepting(vec![dead, dead2], limit).await, vec![dead, dead2]);
}
