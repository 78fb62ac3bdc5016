//! Tests of the pool against raw-TCP servers on 127.0.0.1:0 whose bytes are scripted here.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

use super::*;

/// A scripted server: counts accepted and concurrently open connections.
struct Server {
    addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
    max_open: Arc<AtomicUsize>,
}

impl Server {
    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
    fn max_open(&self) -> usize {
        self.max_open.load(Ordering::SeqCst)
    }
}

/// Start a server running `handler` on every accepted connection.
async fn serve<F, Fut>(handler: F) -> Server
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let open = Arc::new(AtomicUsize::new(0));
    let max_open = Arc::new(AtomicUsize::new(0));
    let (acc, mx) = (accepted.clone(), max_open.clone());
    tokio::spawn(async move {
        let handler = Arc::new(handler);
        while let Ok((sock, _)) = listener.accept().await {
            sock.set_nodelay(true).unwrap();
            acc.fetch_add(1, Ordering::SeqCst);
            let now = open.fetch_add(1, Ordering::SeqCst) + 1;
            mx.fetch_max(now, Ordering::SeqCst);
            let (h, open) = (handler.clone(), open.clone());
            tokio::spawn(async move {
                h(sock).await;
                open.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    Server {
        addr,
        accepted,
        max_open,
    }
}

/// Read one request (head and Content-Length body). `false` on EOF.
async fn read_request(sock: &mut TcpStream) -> bool {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut req = httparse::Request::new(&mut headers);
        if let httparse::Status::Complete(head) = req.parse(&buf).unwrap() {
            let len: usize = req
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .map(|h| std::str::from_utf8(h.value).unwrap().parse().unwrap())
                .unwrap_or(0);
            if buf.len() >= head + len {
                return true;
            }
        }
        match sock.read(&mut chunk).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Answer every request on the connection with `reply`.
async fn answer_all(mut sock: TcpStream, reply: &'static [u8]) {
    while read_request(&mut sock).await {
        if sock.write_all(reply).await.is_err() {
            return;
        }
    }
}

const ACCEPTED: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 17\r\n\r\nhub.mode=accepted";
const REQUEST: &[u8] = b"POST /hub?hub.mode=publish&hub.topic=t HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";

fn cfg(max_conns: usize) -> PoolConfig {
    PoolConfig {
        max_conns,
        connect_timeout: Duration::from_secs(5),
        pool_timeout: Duration::from_secs(5),
    }
}

fn in_secs(s: u64) -> Instant {
    Instant::now() + Duration::from_secs(s)
}

#[tokio::test]
async fn content_length_and_keep_alive_reuse() {
    let server = serve(|s| answer_all(s, ACCEPTED)).await;
    let pool = HttpPool::new(server.addr, cfg(4));
    for _ in 0..20 {
        let resp = pool.send(REQUEST, in_secs(5)).await.unwrap();
        assert_eq!(resp.status, 200);
        assert_eq!(resp.body, b"hub.mode=accepted");
        assert_eq!(
            resp.content_type.as_deref(),
            Some(&b"application/x-www-form-urlencoded"[..])
        );
        assert_eq!(resp.bytes_received, ACCEPTED.len() as u64);
        assert_eq!(resp.outcome(), Outcome::Accepted);
    }
    assert_eq!(
        server.accepted(),
        1,
        "20 sequential requests, one connection"
    );
    assert_eq!(pool.idle_count(), 1);
}
