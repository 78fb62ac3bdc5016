//! Test helpers: the crate's TestHub, a raw HTTP/1.1 client, and a test subscriber.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use axum::Router;
use hubload_hub::HubConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// The hub for tests: the crate's own [`hubload_hub::testing::TestHub`].
pub use hubload_hub::testing::TestHub;

/// One request on a fresh connection (`Connection: close`), read to the end.
/// `Err` is the transport error (a reset shows as `ConnectionReset`).
pub async fn raw(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr).await?;
    let mut req = format!(
        "{method} {target} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).await?;
    s.write_all(body).await?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).await?;
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .get(9..12)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status line in {text:?}")))?;
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Ok((status, body))
}

/// Read one request (head and Content-Length body) from `s`, `buf` holding what was read
/// beyond the request before (and after: what was read beyond this one, a pipelined
/// request's start); (method, path, body), `None` at the end of the connection.
pub async fn request(s: &mut TcpStream, buf: &mut Vec<u8>) -> Option<(String, String, Vec<u8>)> {
    loop {
        // The codec's request parser, as hubload's servers read requests.
        if let Some(head) = hubload_http1::request::parse_head(buf).unwrap() {
            let hubload_http1::request::Framing::Length(len) = head.framing else {
                panic!("a chunked request");
            };
            let (n, len) = (head.len, len as usize);
            let name = buf.iter().position(|b| *b == b' ').unwrap();
            let method = String::from_utf8(buf[..name].to_vec()).unwrap();
            let path = String::from_utf8(buf[head.target].to_vec()).unwrap();
            while buf.len() < n + len {
                if s.read_buf(buf).await.ok()? == 0 {
                    return None;
                }
            }
            let body = buf[n..n + len].to_vec();
            buf.drain(..n + len);
            return Some((method, path, body));
        }
        if s.read_buf(buf).await.ok()? == 0 {
            return None;
        }
    }
}

/// The answer to a verification GET of `path`: 200 echoing its `hub.challenge`.
pub fn challenge_answer(path: &str) -> String {
    let url = url::Url::parse(&format!("http://x{path}")).unwrap();
    let (_, c) = url
        .query_pairs()
        .find(|(k, _)| k == "hub.challenge")
        .unwrap();
    format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{c}", c.len())
}

/// Poll `cond` every 10 ms for up to 5 s.
pub async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..500 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for: {what}");
}

/// Poll the async `cond` every 10 ms for up to 10 s.
pub async fn eventually_async<F, Fut>(what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..1000 {
        if cond().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for: {what}");
}

/// One delivery a subscriber received.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: HeaderMap,
    pub body: Bytes,
}

#[derive(Default)]
struct SubInner {
    deliveries: Mutex<Vec<Received>>,
    verifications: Mutex<Vec<Vec<(String, String)>>>,
    /// Answer verifications with a wrong challenge.
    wrong_echo: AtomicBool,
    /// Statuses for the next deliveries (then 200).
    answers: Mutex<VecDeque<u16>>,
    /// Delivery POSTs that have arrived (held ones included).
    arrived: AtomicUsize,
    /// Delivery POSTs being handled now, and the most at once.
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

/// Counts one delivery POST as being handled while it lives.
struct Handling(Arc<SubInner>);

impl Handling {
    fn new(inner: &Arc<SubInner>) -> Handling {
        let now = inner.in_flight.fetch_add(1, SeqCst) + 1;
        inner.max_in_flight.fetch_max(now, SeqCst);
        Handling(inner.clone())
    }
}

impl Drop for Handling {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, SeqCst);
    }
}

/// A WebSub subscriber on a fresh loopback port: echoes verification challenges and
/// records deliveries. Deliveries can be held (`hold`) until released.
pub struct Subscriber {
    pub addr: SocketAddr,
    inner: Arc<SubInner>,
    gate: watch::Sender<bool>,
}

impl Subscriber {
    pub async fn start() -> Subscriber {
        let inner = Arc::new(SubInner::default());
        let (gate, gate_rx) = watch::channel(true);
        let app = Router::new()
            .route("/{*path}", get(verify).post(deliver))
            .with_state((inner.clone(), gate_rx));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Subscriber { addr, inner, gate }
    }

    /// A callback URL on this subscriber.
    pub fn callback(&self, path: &str) -> String {
        format!("http://{}/{path}", self.addr)
    }

    pub fn deliveries(&self) -> Vec<Received> {
        self.inner.deliveries.lock().unwrap().clone()
    }

    pub fn delivered(&self) -> usize {
        self.inner.deliveries.lock().unwrap().len()
    }

    pub fn arrived(&self) -> usize {
        self.inner.arrived.load(SeqCst)
    }

    /// The most delivery POSTs this subscriber was handling at once.
    pub fn max_in_flight(&self) -> usize {
        self.inner.max_in_flight.load(SeqCst)
    }

    pub fn verifications(&self) -> Vec<Vec<(String, String)>> {
        self.inner.verifications.lock().unwrap().clone()
    }

    pub fn wrong_echo(&self, on: bool) {
        self.inner.wrong_echo.store(on, SeqCst);
    }

    /// The next deliveries get these statuses, in order (then 200).
    pub fn answer(&self, statuses: &[u16]) {
        self.inner.answers.lock().unwrap().extend(statuses);
    }

    /// Hold (true) or release (false) deliveries.
    pub fn hold(&self, on: bool) {
        self.gate.send_replace(!on);
    }
}

type SubState = (Arc<SubInner>, watch::Receiver<bool>);

async fn verify(
    State((inner, _)): State<SubState>,
    Query(q): Query<Vec<(String, String)>>,
) -> (StatusCode, String) {
    let challenge = q
        .iter()
        .find(|(k, _)| k == "hub.challenge")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    inner.verifications.lock().unwrap().push(q);
    if inner.wrong_echo.load(SeqCst) {
        (StatusCode::OK, format!("{challenge}x"))
    } else {
        (StatusCode::OK, challenge)
    }
}

async fn deliver(
    State((inner, mut gate)): State<SubState>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let _handling = Handling::new(&inner);
    inner.arrived.fetch_add(1, SeqCst);
    let _ = gate.wait_for(|open| *open).await;
    let status = inner.answers.lock().unwrap().pop_front().unwrap_or(200);
    if status == 200 {
        inner
            .deliveries
            .lock()
            .unwrap()
            .push(Received { headers, body });
    }
    StatusCode::from_u16(status).unwrap()
}

/// Subscribe `callback` to `topic` (extra form fields appended) and wait until the topic has
/// an active subscriber.
pub async fn subscribe(hub: &TestHub, topic: &str, callback: &str, extra: &[(&str, &str)]) {
    let mut pairs = vec![
        ("hub.mode", "subscribe"),
        ("hub.topic", topic),
        ("hub.callback", callback),
    ];
    pairs.extend_from_slice(extra);
    let (status, _) = hub.form(&pairs).await;
    assert_eq!(status, 202, "subscribe {callback}");
    eventually("the subscription to become active", || {
        subscribers(hub, topic) >= 1
    })
    .await;
}

/// A hub with these settings, a subscriber, and the topic "t" registered.
pub async fn hub_with_subscriber(cfg: HubConfig) -> (TestHub, Subscriber) {
    let hub = TestHub::start(cfg).await;
    let sub = Subscriber::start().await;
    hub.register("t").await;
    (hub, sub)
}

/// Active subscribers of `topic` now.
pub fn subscribers(hub: &TestHub, topic: &str) -> u64 {
    hub.state
        .stats()
        .topics
        .get(topic)
        .map_or(0, |t| t.subscribers)
}
