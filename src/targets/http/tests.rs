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
use crate::result::{OtherReason, Outcome};

/// A scripted server: counts accepted and concurrently open connections.
struct Server {
    addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
    open: Arc<AtomicUsize>,
    max_open: Arc<AtomicUsize>,
}

impl Server {
    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
    fn max_open(&self) -> usize {
        self.max_open.load(Ordering::SeqCst)
    }
    fn open(&self) -> usize {
        self.open.load(Ordering::SeqCst)
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
    let (acc, op, mx) = (accepted.clone(), open.clone(), max_open.clone());
    tokio::spawn(async move {
        let handler = Arc::new(handler);
        while let Ok((sock, _)) = listener.accept().await {
            sock.set_nodelay(true).unwrap();
            acc.fetch_add(1, Ordering::SeqCst);
            let now = op.fetch_add(1, Ordering::SeqCst) + 1;
            mx.fetch_max(now, Ordering::SeqCst);
            let (h, open) = (handler.clone(), op.clone());
            tokio::spawn(async move {
                h(sock).await;
                open.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    Server {
        addr,
        accepted,
        open,
        max_open,
    }
}

/// Read one request (head and Content-Length body). `false` on EOF.
async fn read_request(sock: &mut TcpStream) -> bool {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        // The codec's request parser, as hubload's servers read requests.
        if let Some(head) = hubload_http1::request::parse_head(&buf).unwrap() {
            let hubload_http1::request::Framing::Length(len) = head.framing else {
                panic!("a chunked request");
            };
            if buf.len() as u64 >= head.len as u64 + len {
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
        tls_timeout: Duration::from_secs(5),
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

/// A POST with 16 MiB of body: far more than a loopback socket takes at once.
fn big_request() -> Vec<u8> {
    const BODY: usize = 16 << 20;
    let mut request =
        format!("POST /hub HTTP/1.1\r\nHost: h\r\nContent-Length: {BODY}\r\n\r\n").into_bytes();
    request.resize(request.len() + BODY, b'x');
    request
}

/// A request far larger than a socket takes at once ([`big_request`]), sent twice: the
/// second goes out on the reused connection, where the exchange writes what the socket took
/// and waits to write the rest. The server counts every byte it read: exactly both requests.
#[tokio::test]
async fn a_request_larger_than_the_socket_takes_is_written_whole_on_a_reused_connection() {
    let request = big_request();
    let len = request.len();
    let read = Arc::new(AtomicUsize::new(0));
    let counted = read.clone();
    let server = serve(move |mut sock| {
        let counted = counted.clone();
        async move {
            for _ in 0..2 {
                // Read one request: its head and body, counting each byte.
                let mut left = len;
                let mut chunk = vec![0u8; 64 * 1024];
                while left > 0 {
                    let want = left.min(chunk.len());
                    let n = sock.read(&mut chunk[..want]).await.unwrap();
                    assert!(n > 0, "the client closed mid-request");
                    counted.fetch_add(n, Ordering::SeqCst);
                    left -= n;
                }
                sock.write_all(ACCEPTED).await.unwrap();
            }
        }
    })
    .await;
    let pool = HttpPool::new(server.addr, cfg(1));
    for _ in 0..2 {
        let resp = pool.send(&request, in_secs(30)).await.unwrap();
        assert_eq!(resp.outcome(), Outcome::Accepted);
    }
    assert_eq!(
        server.accepted(),
        1,
        "the second request reused the connection"
    );
    assert_eq!(read.load(Ordering::SeqCst), 2 * request.len());
}

/// Write `bytes` one byte per write, pausing so that the client sees one byte per read.
async fn trickle(sock: &mut TcpStream, bytes: &[u8]) {
    for b in bytes {
        sock.write_all(std::slice::from_ref(b)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// A server answering every request with `reply`, one byte per read.
async fn trickle_server(reply: &'static [u8]) -> Server {
    serve(move |mut s| async move {
        while read_request(&mut s).await {
            trickle(&mut s, reply).await;
        }
    })
    .await
}

const CHUNKED: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\n4;ext=1\r\nhub.\r\nd\r\nmode=accepted\r\n0\r\nX-Trailer: yes\r\n\r\n";

#[tokio::test]
async fn chunked_one_byte_per_read_then_reuse() {
    let server = trickle_server(CHUNKED).await;
    let pool = HttpPool::new(server.addr, cfg(1));
    for _ in 0..2 {
        let resp = pool.send(REQUEST, in_secs(10)).await.unwrap();
        assert_eq!(resp.status, 200);
        assert_eq!(resp.body, b"hub.mode=accepted");
        assert_eq!(resp.bytes_received, CHUNKED.len() as u64);
        assert_eq!(resp.outcome(), Outcome::Accepted);
    }
    assert_eq!(
        server.accepted(),
        1,
        "the chunked body was consumed exactly"
    );
}

#[tokio::test]
async fn content_length_split_across_reads() {
    let server = trickle_server(ACCEPTED).await;
    let pool = HttpPool::new(server.addr, cfg(1));
    for _ in 0..2 {
        let resp = pool.send(REQUEST, in_secs(10)).await.unwrap();
        assert_eq!(resp.body, b"hub.mode=accepted");
        assert_eq!(resp.bytes_received, ACCEPTED.len() as u64);
    }
    assert_eq!(server.accepted(), 1);
}

#[tokio::test]
async fn connection_close_is_not_reused() {
    const CLOSE: &[u8] =
        b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 4\r\n\r\nbusy";
    let server = serve(|mut s| async move {
        if read_request(&mut s).await {
            s.write_all(CLOSE).await.unwrap();
        }
    })
    .await;
    let pool = HttpPool::new(server.addr, cfg(1));
    for _ in 0..3 {
        let resp = pool.send(REQUEST, in_secs(5)).await.unwrap();
        assert_eq!((resp.status, &resp.body[..]), (503, &b"busy"[..]));
        assert_eq!(resp.outcome(), Outcome::Http503);
        assert_eq!(pool.idle_count(), 0);
    }
    assert_eq!(server.accepted(), 3);
}

#[tokio::test]
async fn http10_body_until_close() {
    const OLD: &[u8] = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nold server";
    let server = serve(|mut s| async move {
        if read_request(&mut s).await {
            s.write_all(OLD).await.unwrap();
        }
    })
    .await;
    let pool = HttpPool::new(server.addr, cfg(1));
    for _ in 0..2 {
        let resp = pool.send(REQUEST, in_secs(5)).await.unwrap();
        assert_eq!((resp.status, &resp.body[..]), (200, &b"old server"[..]));
        assert_eq!(resp.bytes_received, OLD.len() as u64);
    }
    assert_eq!(server.accepted(), 2);
    assert_eq!(pool.idle_count(), 0);
}

#[tokio::test]
async fn http10_keep_alive_with_length_is_reused() {
    const OLD: &[u8] = b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok";
    let server = serve(|s| answer_all(s, OLD)).await;
    let pool = HttpPool::new(server.addr, cfg(1));
    for _ in 0..3 {
        assert_eq!(pool.send(REQUEST, in_secs(5)).await.unwrap().body, b"ok");
    }
    assert_eq!(server.accepted(), 1);
}

#[tokio::test]
async fn continue_skipped_and_204_has_no_body() {
    const REPLY: &[u8] =
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n";
    let server = serve(|s| answer_all(s, REPLY)).await;
    let pool = HttpPool::new(server.addr, cfg(1));
    for _ in 0..3 {
        let resp = pool.send(REQUEST, in_secs(5)).await.unwrap();
        assert_eq!(resp.status, 204);
        assert!(resp.body.is_empty());
        assert_eq!(resp.bytes_received, REPLY.len() as u64);
    }
    assert_eq!(server.accepted(), 1);
}

#[tokio::test]
async fn denied_in_a_200_is_denied() {
    const DENIED: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 29\r\n\r\nhub.mode=denied&hub.reason=x.";
    let server = serve(|s| answer_all(s, DENIED)).await;
    let pool = HttpPool::new(server.addr, cfg(1));
    let resp = pool.send(REQUEST, in_secs(5)).await.unwrap();
    assert_eq!(resp.outcome(), Outcome::Denied);
}

/// A server that holds each request for `delay` before answering.
async fn slow_server(delay: Duration) -> Server {
    serve(move |mut s| async move {
        while read_request(&mut s).await {
            tokio::time::sleep(delay).await;
            if s.write_all(ACCEPTED).await.is_err() {
                return;
            }
        }
    })
    .await
}

#[tokio::test]
async fn pool_cap_bounds_connections() {
    let server = slow_server(Duration::from_millis(50)).await;
    let pool = Arc::new(HttpPool::new(server.addr, cfg(2)));
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move { pool.send(REQUEST, in_secs(10)).await })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap().unwrap().status, 200);
    }
    assert_eq!(server.accepted(), 2);
    assert_eq!(server.max_open(), 2);
    assert_eq!(pool.idle_count(), 2);
}

#[tokio::test]
async fn pool_wait_times_out_exactly_for_the_excess() {
    let server = slow_server(Duration::from_millis(800)).await;
    let pool = Arc::new(HttpPool::new(
        server.addr,
        PoolConfig {
            pool_timeout: Duration::from_millis(100),
            ..cfg(2)
        },
    ));
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move { pool.send(REQUEST, in_secs(10)).await })
        })
        .collect();
    let (mut ok, mut pool_wait) = (0, 0);
    for t in tasks {
        match t.await.unwrap() {
            Ok(resp) if resp.status == 200 => ok += 1,
            Err(TransportError::Timeout(TimeoutKind::PoolWait)) => pool_wait += 1,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!((ok, pool_wait), (2, 8));
    assert_eq!(server.accepted(), 2);
}

#[tokio::test]
async fn pool_wait_is_bounded_by_the_deadline() {
    let server = slow_server(Duration::from_millis(800)).await;
    let pool = Arc::new(HttpPool::new(server.addr, cfg(1)));
    let first = {
        let pool = pool.clone();
        tokio::spawn(async move { pool.send(REQUEST, in_secs(10)).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let start = Instant::now();
    let second = pool
        .send(REQUEST, Instant::now() + Duration::from_millis(150))
        .await;
    assert_eq!(
        second.unwrap_err(),
        TransportError::Timeout(TimeoutKind::PoolWait)
    );
    assert!(start.elapsed() < Duration::from_millis(600));
    assert_eq!(first.await.unwrap().unwrap().status, 200);
}

#[tokio::test]
async fn response_timeout_drops_the_connection() {
    let server = serve(|mut s| async move {
        read_request(&mut s).await;
        tokio::time::sleep(Duration::from_secs(30)).await;
    })
    .await;
    let pool = HttpPool::new(server.addr, cfg(1));
    let start = Instant::now();
    let err = pool
        .send(REQUEST, Instant::now() + Duration::from_millis(200))
        .await
        .unwrap_err();
    assert_eq!(err, TransportError::Timeout(TimeoutKind::Response));
    assert!(start.elapsed() >= Duration::from_millis(200));
    assert!(start.elapsed() < Duration::from_secs(3));
    assert_eq!(pool.idle_count(), 0);
}

/// A connection's timer is kept from one exchange to the next and moved only when needed:
/// an exchange still ends at its own deadline, whether the timer held an earlier one (it
/// fires mid-exchange and must not end it) or a later one (it must be moved forward).
#[tokio::test]
async fn each_exchange_ends_at_its_own_deadline_on_a_reused_connection() {
    let server = serve(|mut s| async move {
        for delay_ms in [0, 600, 1_500] {
            if !read_request(&mut s).await {
                return;
            }
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            if s.write_all(ACCEPTED).await.is_err() {
                return;
            }
        }
        tokio::time::sleep(Duration::from_secs(30)).await;
    })
    .await;
    let pool = HttpPool::new(server.addr, cfg(1));
    let after = |ms| Instant::now() + Duration::from_millis(ms);
    pool.send(REQUEST, after(200)).await.unwrap();
    // The timer still holds the first deadline, which passes 200 ms into this exchange.
    let resp = pool.send(REQUEST, after(3_000)).await.unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(server.accepted(), 1, "the same connection");
    // Now it holds a deadline 3 s out; this exchange's comes first, before the answer.
    let err = pool.send(REQUEST, after(300)).await.unwrap_err();
    assert_eq!(err, TransportError::Timeout(TimeoutKind::Response));
    assert_eq!(server.accepted(), 1);
}

/// A reused connection whose server stops reading: the request the socket cannot take ends
/// at its deadline while it is still being written, as a response timeout, and the connection
/// is not kept (the next exchange connects anew).
#[tokio::test]
async fn a_write_the_server_does_not_read_ends_at_the_deadline() {
    let big = big_request();
    let server = serve(|mut s| async move {
        if read_request(&mut s).await && s.write_all(ACCEPTED).await.is_ok() {
            // Read nothing more, and hold the connection open.
            tokio::time::sleep(Duration::from_secs(30)).await;
        }
    })
    .await;
    let pool = HttpPool::new(server.addr, cfg(1));
    pool.send(REQUEST, in_secs(5)).await.unwrap();
    let started = std::time::Instant::now();
    let deadline = Instant::now() + Duration::from_millis(300);
    let err = pool.send(&big, deadline).await.unwrap_err();
    assert_eq!(err, TransportError::Timeout(TimeoutKind::Response));
    let took = started.elapsed();
    assert!(
        (Duration::from_millis(290)..Duration::from_secs(5)).contains(&took),
        "ended after {took:?}"
    );
    assert_eq!(
        server.accepted(),
        1,
        "the write went out on the reused connection"
    );
    assert_eq!(
        pool.idle_count(),
        0,
        "an abandoned exchange's connection is dropped"
    );
}

#[tokio::test]
async fn connect_timeout_on_a_full_backlog() {
    // A listener that never accepts, with a backlog of 0: once its accept queue is full the
    // kernel drops further SYNs, so a loopback connect stalls.
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = sock.listen(0).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut fillers = Vec::new();
    for _ in 0..8 {
        match tokio::time::timeout(Duration::from_millis(300), TcpStream::connect(addr)).await {
            Ok(Ok(s)) => fillers.push(s),
            _ => break,
        }
    }
    assert!(fillers.len() < 8, "the backlog never filled up");
    let pool = HttpPool::new(
        addr,
        PoolConfig {
            connect_timeout: Duration::from_millis(200),
            ..cfg(1)
        },
    );
    let start = Instant::now();
    let err = pool.send(REQUEST, in_secs(10)).await.unwrap_err();
    assert_eq!(err, TransportError::Timeout(TimeoutKind::Connect));
    assert!(start.elapsed() >= Duration::from_millis(200));
    assert!(start.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn reset_by_peer() {
    let server = serve(|mut s| async move {
        read_request(&mut s).await;
        s.set_zero_linger().unwrap();
    })
    .await;
    let pool = HttpPool::new(server.addr, cfg(1));
    let err = pool.send(REQUEST, in_secs(5)).await.unwrap_err();
    assert_eq!(err, TransportError::Conn(ConnErrorKind::Reset));
    assert_eq!(server.accepted(), 1, "a fresh connection is never retried");
}

#[tokio::test]
async fn eof_mid_body_is_closed() {
    let server = serve(|mut s| async move {
        read_request(&mut s).await;
        s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten..")
            .await
            .unwrap();
    })
    .await;
    let pool = HttpPool::new(server.addr, cfg(1));
    let err = pool.send(REQUEST, in_secs(5)).await.unwrap_err();
    assert_eq!(err, TransportError::Conn(ConnErrorKind::Closed));
    assert_eq!(err.outcome(), Outcome::ConnError(ConnErrorKind::Closed));
}

#[tokio::test]
async fn eof_before_any_byte_is_closed() {
    let server = serve(|mut s| async move {
        read_request(&mut s).await;
    })
    .await;
    let pool = HttpPool::new(server.addr, cfg(1));
    let err = pool.send(REQUEST, in_secs(5)).await.unwrap_err();
    assert_eq!(err, TransportError::Conn(ConnErrorKind::Closed));
    assert_eq!(server.accepted(), 1);
}

#[tokio::test]
async fn refused() {
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let pool = HttpPool::new(addr, cfg(1));
    let err = pool.send(REQUEST, in_secs(5)).await.unwrap_err();
    assert_eq!(err, TransportError::Conn(ConnErrorKind::Refused));
    assert_eq!(err.outcome(), Outcome::ConnError(ConnErrorKind::Refused));
}

/// A response buffer reused after a successful exchange keeps nothing of it when the next
/// exchange fails before any byte is read (here, a refused connect): a failed attempt must not
/// be counted with the bytes of the response before it.
#[tokio::test]
async fn a_failed_connect_leaves_nothing_of_the_last_response() {
    let server = serve(|s| answer_all(s, ACCEPTED)).await;
    let mut resp = Response::default();
    HttpPool::new(server.addr, cfg(1))
        .send_into(REQUEST, Instant::now(), in_secs(5), &mut resp)
        .await
        .unwrap();
    assert_eq!(resp.bytes_received, ACCEPTED.len() as u64);
    let refused = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let err = HttpPool::new(refused, cfg(1))
        .send_into(REQUEST, Instant::now(), in_secs(5), &mut resp)
        .await
        .unwrap_err();
    assert_eq!(err, TransportError::Conn(ConnErrorKind::Refused));
    assert_eq!((resp.status, resp.bytes_received), (0, 0));
    assert!(resp.body.is_empty());
}

#[tokio::test]
async fn a_connection_the_server_closed_while_idle_is_not_reused() {
    // Answers one request per connection without saying `Connection: close`, then closes:
    // the client keeps the connection and finds it dead on the next send.
    let server = serve(|mut s| async move {
        if read_request(&mut s).await {
            s.write_all(ACCEPTED).await.unwrap();
        }
    })
    .await;
    let pool = HttpPool::new(server.addr, cfg(1));
    for i in 1..=3 {
        let resp = pool.send(REQUEST, in_secs(5)).await.unwrap();
        assert_eq!(resp.outcome(), Outcome::Accepted);
        assert_eq!(server.accepted(), i);
        // Let the server's close reach the client before the next send.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn no_retry_once_a_response_byte_arrived() {
    let served = Arc::new(AtomicUsize::new(0));
    let count = served.clone();
    let server = serve(move |mut s| {
        let count = count.clone();
        async move {
            while read_request(&mut s).await {
                if count.fetch_add(1, Ordering::SeqCst) == 0 {
                    s.write_all(ACCEPTED).await.unwrap();
                } else {
                    s.write_all(b"HTTP/1.1 200 OK\r\n").await.unwrap();
                    return;
                }
            }
        }
    })
    .await;
    let pool = HttpPool::new(server.addr, cfg(1));
    assert_eq!(pool.send(REQUEST, in_secs(5)).await.unwrap().status, 200);
    let err = pool.send(REQUEST, in_secs(5)).await.unwrap_err();
    assert_eq!(err, TransportError::Conn(ConnErrorKind::Closed));
    assert_eq!(server.accepted(), 1);
    assert_eq!(served.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn garbage_is_a_protocol_error() {
    let server = serve(|s| answer_all(s, b"SSH-2.0-OpenSSH\r\n\r\n")).await;
    let pool = HttpPool::new(server.addr, cfg(1));
    let err = pool.send(REQUEST, in_secs(5)).await.unwrap_err();
    assert_eq!(err, TransportError::Protocol(OtherReason::NotHttp));
    assert_eq!(err.outcome(), Outcome::Other(OtherReason::NotHttp));
}

#[tokio::test]
async fn send_into_reuses_the_response() {
    let server = serve(|s| answer_all(s, ACCEPTED)).await;
    let pool = HttpPool::new(server.addr, cfg(1));
    let mut resp = Response::default();
    pool.send_into(REQUEST, Instant::now(), in_secs(5), &mut resp)
        .await
        .unwrap();
    let (body_ptr, ct_ptr) = (
        resp.body.as_ptr(),
        resp.content_type.as_ref().unwrap().as_ptr(),
    );
    pool.send_into(REQUEST, Instant::now(), in_secs(5), &mut resp)
        .await
        .unwrap();
    assert_eq!(resp.body, b"hub.mode=accepted");
    assert_eq!(resp.body.as_ptr(), body_ptr);
    assert_eq!(resp.content_type.as_ref().unwrap().as_ptr(), ct_ptr);
}

#[tokio::test]
async fn churn_loses_and_duplicates_nothing() {
    // Each connection serves 3 requests, then closes: with `Connection: close` on the third
    // answer on even connections, silently on odd ones (so the client meets connections the
    // server is closing). nginx-style churn, many tasks, a small pool. A request written into
    // a connection the server was closing fails as a connection error and is never resent,
    // so every success is exactly one request the server served.
    let served = Arc::new(AtomicUsize::new(0));
    let conns = Arc::new(AtomicUsize::new(0));
    let (count, ids) = (served.clone(), conns.clone());
    const CLOSE: &[u8] = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 17\r\n\r\nhub.mode=accepted";
    let server = serve(move |mut s| {
        let (count, id) = (count.clone(), ids.fetch_add(1, Ordering::SeqCst));
        async move {
            for i in 0..3 {
                if !read_request(&mut s).await {
                    return;
                }
                count.fetch_add(1, Ordering::SeqCst);
                let reply = if i == 2 && id % 2 == 0 {
                    CLOSE
                } else {
                    ACCEPTED
                };
                if s.write_all(reply).await.is_err() {
                    return;
                }
            }
        }
    })
    .await;
    let pool = Arc::new(HttpPool::new(server.addr, cfg(3)));
    let tasks: Vec<_> = (0..30)
        .map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move {
                let mut resp = Response::default();
                let mut ok = 0usize;
                for _ in 0..20 {
                    match pool
                        .send_into(REQUEST, Instant::now(), in_secs(10), &mut resp)
                        .await
                    {
                        Ok(()) => {
                            assert_eq!(resp.outcome(), Outcome::Accepted);
                            ok += 1;
                        }
                        Err(TransportError::Conn(ConnErrorKind::Closed | ConnErrorKind::Reset)) => {
                        }
                        Err(e) => panic!("unexpected {e:?}"),
                    }
                }
                ok
            })
        })
        .collect();
    let mut ok = 0;
    for t in tasks {
        ok += t.await.unwrap();
    }
    assert_eq!(
        served.load(Ordering::SeqCst),
        ok,
        "a request was served twice or lost"
    );
    assert!(ok >= 500, "{ok} of 600 succeeded");
    assert!(
        server.accepted() >= 200,
        "{} connections",
        server.accepted()
    );
}

#[tokio::test]
async fn idle_connections_expire() {
    let server = serve(|s| answer_all(s, ACCEPTED)).await;
    let pool = HttpPool::new(server.addr, cfg(2)).with_idle_timeout(Duration::from_millis(150));
    pool.send(REQUEST, in_secs(5)).await.unwrap();
    pool.send(REQUEST, in_secs(5)).await.unwrap();
    assert_eq!(server.accepted(), 1, "reused while fresh");
    tokio::time::sleep(Duration::from_millis(400)).await;
    pool.send(REQUEST, in_secs(5)).await.unwrap();
    assert_eq!(server.accepted(), 2, "replaced once idle too long");
    assert_eq!(pool.idle_count(), 1);
}

#[tokio::test]
async fn a_connection_left_under_a_reused_one_is_closed_once_idle_too_long() {
    // A burst of two leaves two idle connections; then one request at a time keeps
    // reusing the top one while the bottom one only ages.
    let server = serve(|s| answer_all(s, ACCEPTED)).await;
    let pool = HttpPool::new(server.addr, cfg(2)).with_idle_timeout(Duration::from_millis(200));
    let (a, b) = tokio::join!(
        pool.send(REQUEST, in_secs(5)),
        pool.send(REQUEST, in_secs(5))
    );
    a.unwrap();
    b.unwrap();
    assert_eq!((server.accepted(), pool.idle_count()), (2, 2));
    let until = Instant::now() + Duration::from_millis(600);
    while Instant::now() < until {
        pool.send(REQUEST, in_secs(5)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    assert_eq!(
        server.accepted(),
        2,
        "the top connection was reused throughout"
    );
    assert_eq!(
        pool.idle_count(),
        1,
        "the bottom one was closed once idle too long"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.open() != 1 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(server.open(), 1, "the server saw the old connection closed");
}
