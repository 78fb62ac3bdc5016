//! An HTTP/2 client for the hub (`--http-version 2`): `--pool-per-host` connections, each
//! carrying up to `--h2-streams` streams at once, over h2c (prior knowledge) or TLS with
//! ALPN `h2`. Framing, HPACK and flow control are the `h2` crate's.
//!
//! The model, beside HTTP/1.1's, is docs/http2.md: a semaphore of `conns × streams`, the
//! connection with the fewest streams in flight, a sent stream never resent here, one deadline
//! over the whole attempt. Requests come rendered as HTTP/1.1 (`message.rs`), and bytes are
//! counted as HTTP/1.1 would send them, not as compressed frames.

mod alpn;
mod connect;
mod failure;
mod message;
mod sniff;
mod unvectored;

use std::future::Future;
use std::net::SocketAddr;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use h2::client::{ResponseFuture, SendRequest};
use h2::SendStream;
use http::uri::Scheme;
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};

pub use alpn::{negotiate, Alpn};
use failure::stream_outcome;
pub use message::H2Head;

use crate::result::{OtherReason, Outcome, TimeoutKind};
use crate::targets::http::{poll_deadline, HostCounters, HubTunnel, Response, Tls, BODY_CAP};

/// The field a hub reports its own time in (W3C Server Timing).
const SERVER_TIMING: http::HeaderName = http::HeaderName::from_static("server-timing");

/// Limits of one host's HTTP/2 pool.
#[derive(Debug, Clone)]
pub struct H2Config {
    /// Connections (`--pool-per-host`); zero is treated as one.
    pub conns: usize,
    /// Streams in flight per connection at most (`--h2-streams`); zero is treated as one.
    pub streams: usize,
    /// Longest TCP connect.
    pub connect_timeout: Duration,
    /// Longest TLS handshake after the TCP connect.
    pub tls_timeout: Duration,
    /// Longest wait for a free stream.
    pub pool_timeout: Duration,
}

/// The HTTP/2 connections to one host. `Send + Sync`: share it by `&` or `Arc`.
#[derive(Debug)]
pub struct H2Pool {
    addrs: Vec<SocketAddr>,
    next_addr: AtomicUsize,
    counters: Arc<HostCounters>,
    cfg: H2Config,
    streams: usize,
    /// `Some` for an https host, offering ALPN `h2` only.
    tls: Option<Tls>,
    scheme: Scheme,
    /// One permit per stream in flight: `conns × streams`.
    permits: Semaphore,
    slots: Box<[Slot]>,
    next_slot: AtomicUsize,
    /// `Some` when the host is reached through an HTTP proxy (`addrs` are then the proxy's).
    tunnel: Option<HubTunnel>,
}

/// Numbers the connections of every pool in the process: a failed one is forgotten only if
/// still in its slot, and a worker's [`Handles`] know a handle from a replaced connection.
static OPENED: AtomicU64 = AtomicU64::new(0);

/// [`Slot::current`] when the slot has no connection.
const NO_CONNECTION: u64 = u64::MAX;

/// One connection's place in the pool.
#[derive(Debug)]
struct Slot {
    /// Streams of the pool's exchanges on this slot now.
    inflight: AtomicUsize,
    /// The connection, once open. The lock is held for a clone or a swap, never across an await.
    live: Mutex<Option<Live>>,
    /// `live`'s id, or [`NO_CONNECTION`]: read without the lock to check a worker's handle.
    current: AtomicU64,
    /// Held while a connection is being opened, so a slot opens one at a time.
    opening: tokio::sync::Mutex<()>,
}

/// An open connection: the handle to start streams on it, and which it is.
#[derive(Debug, Clone)]
struct Live {
    send: SendRequest<Bytes>,
    /// Index of its address in the pool's.
    addr: usize,
    id: u64,
}

/// A request for [`H2Pool::send_prepared`]: `head` with its fields set by `fill` (which may
/// run more than once), and `body`; `size` is the request's size as HTTP/1.1 renders it,
/// the size counted as sent.
pub struct Outgoing<'a, F> {
    head: &'a H2Head,
    fill: F,
    body: Bytes,
    size: u64,
}

impl<'a, F: Fn(&mut http::HeaderMap)> Outgoing<'a, F> {
    pub fn new(head: &'a H2Head, fill: F, body: Bytes, size: u64) -> Self {
        Self {
            head,
            fill,
            body,
            size,
        }
    }
}

/// The `fill` of a request sent as its head is.
pub fn unchanged(_: &mut http::HeaderMap) {}

impl<F> std::fmt::Debug for Outgoing<'_, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the head: its fields may hold credentials.
        f.debug_struct("Outgoing")
            .field("body", &self.body.len())
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

/// What one worker keeps between its HTTP/2 attempts, one after another (a publisher's
/// worker owns one): the timer that watches each attempt's deadline in turn (`Expiry`),
/// and its handles to the pool's connections.
#[derive(Debug, Default)]
pub struct H2Local {
    timer: Option<Pin<Box<Sleep>>>,
    handles: Handles,
}

/// A worker's connection handles, one per slot of the pool it sends through, taken from the
/// slot the first time and kept while the slot's connection is the same. Cloning h2's
/// handle for every attempt and dropping it again locked the slot's and the connection's
/// mutexes and counted two `Arc`s up and down: about ten atomic operations per request.
#[derive(Debug, Default)]
struct Handles(Vec<Option<Live>>);

/// Takes one stream off its slot's count when the exchange ends, however it ends.
struct Busy<'a>(&'a AtomicUsize);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl H2Pool {
    /// A pool for the host at `addrs` (at least one), counting into `counters` (made for as
    /// many addresses); `tls` for an https host (its ALPN is replaced by `h2`).
    pub fn new(
        addrs: Vec<SocketAddr>,
        counters: Arc<HostCounters>,
        cfg: H2Config,
        tls: Option<&Tls>,
    ) -> Self {
        assert!(!addrs.is_empty(), "a pool needs an address");
        let conns = cfg.conns.max(1);
        let streams = cfg.streams.max(1);
        Self {
            addrs,
            next_addr: AtomicUsize::new(0),
            counters,
            streams,
            scheme: match tls {
                Some(_) => Scheme::HTTPS,
                None => Scheme::HTTP,
            },
            tls: tls.map(|t| t.with_alpn(&[b"h2"])),
            permits: Semaphore::new(conns.saturating_mul(streams).min(Semaphore::MAX_PERMITS)),
            slots: (0..conns)
                .map(|_| Slot {
                    inflight: AtomicUsize::new(0),
                    live: Mutex::new(None),
                    current: AtomicU64::new(NO_CONNECTION),
                    opening: tokio::sync::Mutex::new(()),
                })
                .collect(),
            next_slot: AtomicUsize::new(0),
            cfg,
            tunnel: None,
        }
    }

    /// Reach the host through a proxy's tunnel (the pool's addresses are the proxy's).
    pub fn with_tunnel(mut self, tunnel: Option<HubTunnel>) -> Self {
        self.tunnel = tunnel;
        self
    }

    /// The complete HTTP/1.1 request `raw` converted once for this pool's scheme, to send
    /// with [`send_prepared`](Self::send_prepared); `None` when `raw` is not complete.
    pub fn prepare(&self, raw: &[u8]) -> Option<(H2Head, Bytes)> {
        H2Head::from_http1(raw, &self.scheme)
    }

    /// One exchange of the HTTP/1.1-rendered `request` (head and body) as an HTTP/2 stream,
    /// bounded by `deadline`, into `resp` (its allocations reused). A failure is the
    /// attempt's outcome. Converts the request first: for requests sent once (registration);
    /// the load sends heads prepared per topic ([`send_prepared`](Self::send_prepared)).
    pub async fn send_into(
        &self,
        request: &[u8],
        deadline: Instant,
        resp: &mut Response,
    ) -> Result<(), Outcome> {
        let Some((head, body)) = H2Head::from_http1(request, &self.scheme) else {
            resp.reset();
            return Err(Outcome::Other(OtherReason::Unknown));
        };
        let size = request.len() as u64;
        let mut local = H2Local::default();
        let out = Outgoing::new(&head, unchanged, body, size);
        self.send_prepared(out, deadline, &mut local, resp).await
    }

    /// One exchange of `out` as an HTTP/2 stream, bounded by `deadline`, into `resp` (its
    /// allocations reused). A failure is the attempt's outcome.
    pub async fn send_prepared<F: Fn(&mut http::HeaderMap)>(
        &self,
        out: Outgoing<'_, F>,
        deadline: Instant,
        local: &mut H2Local,
        resp: &mut Response,
    ) -> Result<(), Outcome> {
        let Outgoing {
            head,
            fill,
            body,
            size,
        } = out;
        let mut expiry = Expiry::new(deadline, &mut local.timer);
        let handles = &mut local.handles;
        resp.reset();
        resp.request_bytes = size;
        let _permit = match self.permits.try_acquire() {
            Ok(p) => p,
            Err(_) => {
                let limit = deadline.min(Instant::now() + self.cfg.pool_timeout);
                match tokio::time::timeout_at(limit, self.permits.acquire()).await {
                    Ok(Ok(p)) => p,
                    Ok(Err(_)) | Err(_) => return Err(Outcome::Timeout(TimeoutKind::PoolWait)),
                }
            }
        };
        let i = self.pick();
        let slot = &self.slots[i];
        slot.inflight.fetch_add(1, Ordering::Relaxed);
        let _busy = Busy(&slot.inflight);
        let end = body.is_empty();
        let make = || head.request(&fill);
        let (response, stream) = self.start(i, handles, make, end, &mut expiry).await?;
        exchange(response, stream, body, &mut expiry, resp).await
    }

    /// The slot with the fewest streams in flight, looking from the next one in turn.
    fn pick(&self) -> usize {
        let n = self.slots.len();
        if n == 1 {
            return 0;
        }
        let first = self.next_slot.fetch_add(1, Ordering::Relaxed) % n;
        let (mut best, mut least) = (first, usize::MAX);
        for i in (0..n).map(|k| (first + k) % n) {
            let busy = self.slots[i].inflight.load(Ordering::Relaxed);
            if busy < least {
                (best, least) = (i, busy);
                if busy == 0 {
                    break;
                }
            }
        }
        best
    }

    /// The stream of the request `make` makes (`end`: it has no body) started on slot `i`'s
    /// connection (opened first if need be): its response future and its send half.
    async fn start(
        &self,
        i: usize,
        handles: &mut Handles,
        make: impl Fn() -> http::Request<()>,
        end: bool,
        expiry: &mut Expiry<'_>,
    ) -> Result<(ResponseFuture, SendStream<Bytes>), Outcome> {
        let slot = &self.slots[i];
        let mut fresh = false;
        loop {
            let live = self.handle(i, handles, expiry.at).await?;
            let send = &mut live.send;
            // h2 holds a new stream back while the server's stream limit is reached.
            let ready = std::future::poll_fn(|cx| send.poll_ready(cx));
            let Some(ready) = by(expiry, ready).await else {
                return Err(Outcome::Timeout(TimeoutKind::PoolWait));
            };
            match ready.and_then(|()| send.send_request(make(), end)) {
                Ok((response, stream)) => {
                    if self.addrs.len() > 1 {
                        self.counters.count_attempt(live.addr);
                    }
                    return Ok((response, stream));
                }
                // The connection takes no new stream (a GOAWAY came, or it failed): nothing
                // of this request was sent. Once more on a fresh connection.
                Err(e) => {
                    self.forget(slot, live.id);
                    if fresh {
                        return Err(stream_outcome(&e));
                    }
                    fresh = true;
                }
            }
        }
    }

    /// The handle in `handles` to slot `i`'s connection: the one kept from an earlier
    /// attempt if the slot still has that connection, else a new one from the slot.
    async fn handle<'h>(
        &self,
        i: usize,
        handles: &'h mut Handles,
        deadline: Instant,
    ) -> Result<&'h mut Live, Outcome> {
        let slot = &self.slots[i];
        if handles.0.len() != self.slots.len() {
            handles.0.clear();
            handles.0.resize_with(self.slots.len(), || None);
        }
        let current = slot.current.load(Ordering::Acquire);
        let kept = &mut handles.0[i];
        if kept.as_ref().is_none_or(|l| l.id != current) {
            *kept = None;
            *kept = Some(self.live(slot, deadline).await?);
        }
        Ok(kept.as_mut().expect("set above"))
    }

    /// `slot`'s open connection, or a new one.
    async fn live(&self, slot: &Slot, deadline: Instant) -> Result<Live, Outcome> {
        if let Some(live) = lock(&slot.live).clone() {
            return Ok(live);
        }
        let Ok(_opening) = tokio::time::timeout_at(deadline, slot.opening.lock()).await else {
            return Err(Outcome::Timeout(TimeoutKind::Connect));
        };
        // Another exchange may have opened it while this one waited.
        if let Some(live) = lock(&slot.live).clone() {
            return Ok(live);
        }
        let (send, addr) = Box::pin(self.connect(deadline)).await?;
        let live = Live {
            send,
            addr,
            id: OPENED.fetch_add(1, Ordering::Relaxed),
        };
        *lock(&slot.live) = Some(live.clone());
        slot.current.store(live.id, Ordering::Release);
        Ok(live)
    }

    /// Drop `slot`'s connection if it is still connection `id` (not already replaced).
    fn forget(&self, slot: &Slot, id: u64) {
        let mut live = lock(&slot.live);
        if live.as_ref().is_some_and(|l| l.id == id) {
            *live = None;
            slot.current.store(NO_CONNECTION, Ordering::Release);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave an `Option` inconsistent.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// An attempt's deadline and the timer that watches it, lent by the worker so one timer
/// serves its attempts one after another (a publisher's worker keeps one): registering a
/// timer per stream and removing it again cost about 1 % of an HTTP/2 publish. A timer left
/// at an earlier attempt's deadline fires early and is moved on (`http::poll_deadline`, as
/// an HTTP/1.1 connection's timer is); one set later is moved back at once.
#[derive(Debug)]
struct Expiry<'a> {
    at: Instant,
    timer: &'a mut Option<Pin<Box<Sleep>>>,
}

impl<'a> Expiry<'a> {
    /// `at`, watched by `timer` (made on first use if `None`).
    fn new(at: Instant, timer: &'a mut Option<Pin<Box<Sleep>>>) -> Self {
        Self { at, timer }
    }
}

/// `work`'s output, or `None` once `expiry` has passed; `work` is polled first, so work that
/// is ready wins over an expiry seen in the same poll. By hand rather than `tokio::select!`,
/// whose branch bookkeeping ran on every poll of every stream.
async fn by<F: Future>(expiry: &mut Expiry<'_>, work: F) -> Option<F::Output> {
    let mut work = pin!(work);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = work.as_mut().poll(cx) {
            return Poll::Ready(Some(out));
        }
        poll_deadline(expiry.timer, cx, expiry.at).map(|()| None)
    })
    .await
}

/// What held a stream whose response had not come by the deadline: the server's stream
/// limit (h2 never opened it: a pool wait, whatever is buffered), the flow-control window (a
/// body still buffered beyond the window it may use), else the server.
fn held(stream: &SendStream<Bytes>) -> Outcome {
    if stream.is_pending_open() {
        return Outcome::Timeout(TimeoutKind::PoolWait);
    }
    if stream.buffered_data() > stream.send_window() {
        return Outcome::FlowControlTimeout;
    }
    Outcome::Timeout(TimeoutKind::Response)
}

/// The rest of a started stream: the body, then the response.
///
/// The body is handed to h2 at once, before the connection task has opened the stream and
/// granted it window: h2 keeps it until the window allows and writes it behind the stream's
/// HEADERS, so a batch of requests goes out as one write instead of one for the HEADERS and
/// another for the DATA once each stream's window came. A body still held back for window at
/// the deadline makes the timeout [`Outcome::FlowControlTimeout`].
async fn exchange(
    response: ResponseFuture,
    mut stream: SendStream<Bytes>,
    body: Bytes,
    expiry: &mut Expiry<'_>,
    resp: &mut Response,
) -> Result<(), Outcome> {
    if !body.is_empty() {
        if let Err(e) = stream.send_data(body, true) {
            // The stream ended before its body was queued: the response future holds why (a
            // GOAWAY, a reset). One whose head came before its connection failed returns the
            // head, and then the body's error names the connection's (vendor/h2/PATCHED.md).
            return Err(match by(expiry, response).await {
                Some(Err(why)) => stream_outcome(&why),
                _ => stream_outcome(&e),
            });
        }
    }
    let head = match by(expiry, response).await {
        None => return Err(held(&stream)),
        Some(Err(e)) => return Err(stream_outcome(&e)),
        Some(Ok(head)) => head,
    };
    let (parts, mut data) = head.into_parts();
    resp.status = parts.status.as_u16();
    match parts.headers.get(http::header::CONTENT_TYPE) {
        Some(v) => {
            let ct = resp.content_type.get_or_insert_with(Vec::new);
            ct.clear();
            ct.extend_from_slice(v.as_bytes());
        }
        None => resp.content_type = None,
    }
    // One pass over the fields: their size, and any `Server-Timing` (read by the parser the
    // HTTP/1.1 client uses); a 429's or 503's `Retry-After`.
    let mut fields = 0;
    let retry_after = Response::reads_retry_after(resp.status);
    for (n, v) in parts.headers.iter() {
        fields += n.as_str().len() + v.len() + 4;
        if *n == SERVER_TIMING {
            resp.server_timing.add_header(v.as_bytes());
        } else if retry_after && *n == http::header::RETRY_AFTER {
            resp.retry_after.add_header(v.as_bytes());
        }
    }
    resp.bytes_received = fields as u64;
    while !data.is_end_stream() {
        match by(expiry, data.data()).await {
            None => return Err(Outcome::Timeout(TimeoutKind::Response)),
            Some(None) => break,
            Some(Some(Err(e))) => return Err(stream_outcome(&e)),
            Some(Some(Ok(chunk))) => {
                // Give the window back at once: the next response needs it.
                let _ = data.flow_control().release_capacity(chunk.len());
                resp.bytes_received += chunk.len() as u64;
                let room = BODY_CAP.saturating_sub(resp.body.len());
                resp.body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
        }
    }
    Ok(())
}
