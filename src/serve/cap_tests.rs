//! The connection cap of hubload's own servers: past `max_connections` open, a new
//! connection is closed at accept and counted, and the server serves again once they close.

use std::sync::Arc;
use std::time::Duration;

use hubload_http1::answer::Persist;
use hubload_http1::request::Head;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

use super::{spawn, Handler, ServerDeadlines, ServerStats};

/// Answers every request 200 with no body.
struct Empty;

impl Handler for Empty {
    type Asked = ();
    const MAX_BODY: usize = 0;
    fn asked(&self, _head: &Head, _buf: &[u8]) {}
    fn answer(&self, _asked: (), _body: &[u8], out: &mut Vec<u8>, _persist: Persist) -> Duration {
        out.extend_from_slice(b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
        Duration::ZERO
    }
}

/// Read `s` until the server closes it (or 2 s): whether it did.
async fn closed(mut s: TcpStream) -> bool {
    let mut sink = [0u8; 256];
    let read = async { while matches!(s.read(&mut sink).await, Ok(n) if n > 0) {} };
    tokio::time::timeout(Duration::from_secs(2), read)
        .await
        .is_ok()
}

/// One request on its own connection: whether it was answered 200.
async fn answered(addr: std::net::SocketAddr) -> bool {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(2), s.read_to_end(&mut answer)).await;
    read.is_ok() && answer.starts_with(b"HTTP/1.1 200")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_cap_are_closed_at_accept_and_counted() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stats = Arc::new(ServerStats::default());
    let limits = ServerDeadlines {
        max_connections: 20,
        ..ServerDeadlines::default()
    };
    let stop = spawn(listener, Arc::new(Empty), limits, stats.clone(), "test");
    let mut held = Vec::new();
    for _ in 0..20 {
        held.push(TcpStream::connect(addr).await.unwrap());
    }
    for _ in 0..5 {
        let s = TcpStream::connect(addr).await.unwrap();
        assert!(closed(s).await, "a connection over the cap stayed open");
    }
    let c = stats.counts();
    assert_eq!((c.accepted, c.over_limit), (20, 5), "{c:?}");
    drop(held);
    // Once the server has seen the held connections close, it serves again (bounded poll).
    let ended = |n| {
        let stats = stats.clone();
        async move {
            let until = Instant::now() + Duration::from_secs(2);
            while stats.counts().ended < n && Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    };
    ended(20).await;
    assert!(answered(addr).await);
    ended(21).await;
    let c = stats.counts();
    assert_eq!((c.accepted, c.ended, c.over_limit), (21, 21, 5), "{c:?}");
    stop.cancel();
}
