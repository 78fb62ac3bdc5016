//! A lean HTTP/1.1 client for the publish hot path: one connection pool per host, capped at
//! `max_conns` with a pool-wait timeout, sending pre-rendered requests over owned keep-alive
//! connections (heads read by the codec crate, `hubload-http1`; TLS by rustls).
//!
//! The model (docs/http-client.md): every phase (pool wait, connect, TLS, response) ends at
//! its deadline as its own [`TimeoutKind`]; an idle connection is peeked before reuse and
//! closed past the idle timeout; a POST is never resent once written, so every counted
//! attempt is one request the hub saw; new connections go to a host's addresses in turn.

#[cfg(test)]
mod addrs_tests;
mod conn;
#[cfg(test)]
mod determinism_tests;
mod exchange;
#[cfg(test)]
mod exchange_deadline_tests;
mod head_retry_after;
mod head_server_timing;
#[cfg(test)]
mod memo_tests;
mod response;
mod slots;
mod stream;
#[cfg(test)]
mod tests;
mod tls;
mod transport_error;
mod tunnel;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::time::{timeout_at, Instant};

use crate::result::{ConnErrorKind, TimeoutKind};
use conn::{Conn, Render, Resume};
pub use response::{Response, BODY_CAP};
use slots::{Slot, Slots};
use stream::Stream;
pub use tls::{Tls, TlsError};
pub use transport_error::TransportError;
pub use tunnel::HubTunnel;
// The HTTP/2 transport (`targets/h2`) maps socket and handshake failures as this client does.
pub(crate) use transport_error::io_error;
// The HTTP/2 transport watches its deadlines with a reused timer as connections here do.
pub(crate) use conn::poll_deadline;
pub(crate) use conn::{MAX_HEAD, MAX_INTERIM};
pub(crate) use tls::handshake_error;

/// How long an idle connection is kept by default: below nginx's 75 s keep-alive timeout
/// and the 4 min after which Azure's load balancer drops idle flows without a reset (a
/// silently dropped connection would turn into a response timeout, not a retry).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Where [`HttpPool::with_slot`]'s connection comes from.
enum Take {
    /// The idle connection taken with the slot, if there was one; a new one otherwise.
    Idle(Option<Box<Conn>>),
    /// A new one, for a request a reused connection refused before any of it was acted on,
    /// sent once more (see the module docs); its attempt was counted already.
    Retry,
}

/// Limits of one host's pool.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// Connections to this host at most (`--pool-per-host`). Zero is treated as one.
    pub max_conns: usize,
    /// Longest TCP connect (`--connect-timeout`).
    pub connect_timeout: Duration,
    /// Longest TLS handshake after the TCP connect (`--tls-timeout`); unused for http.
    pub tls_timeout: Duration,
    /// Longest wait for a free or permitted connection (`--pool-timeout`).
    pub pool_timeout: Duration,
}

/// TLS handshakes of a pool: how many succeeded and their exact total time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Handshakes {
    /// Completed handshakes.
    pub count: u64,
    /// Sum of their durations, µs.
    pub sum_us: u64,
}

/// The connection pool for one host. `Send + Sync`: share it by `&` or `Arc`.
#[derive(Debug)]
pub struct HttpPool {
    /// Every address of the host that is in use; new connections take them in turn.
    addrs: Vec<SocketAddr>,
    /// The address the next new connection tries first.
    next_addr: AtomicUsize,
    /// Attempts per address and handshakes; may be shared by several pools of one host.
    counters: Arc<HostCounters>,
    cfg: PoolConfig,
    /// One slot per exchange in flight, so at most `max_conns` connections are in use, and
    /// the idle keep-alive connections, under one lock never held across an await.
    slots: Slots,
    /// Idle connections older than this are closed instead of reused.
    idle_timeout: Duration,
    /// `Some` for an `https://` host.
    tls: Option<Tls>,
    /// `Some` when the host is reached through an HTTP proxy (`addrs` are then the proxy's).
    tunnel: Option<HubTunnel>,
}

/// What the pools of one host count beside the attempts' own stats: attempts per address
/// (only when there is more than one; otherwise every attempt went to the one) and the TLS
/// handshakes with their exact total time. Touched per attempt only with several addresses,
/// and per new connection otherwise.
#[derive(Debug)]
pub struct HostCounters {
    attempts: Vec<AtomicU64>,
    handshakes: AtomicU64,
    handshake_us: AtomicU64,
}

impl HostCounters {
    /// Counters for a host with `addrs` addresses.
    pub fn new(addrs: usize) -> Arc<Self> {
        Arc::new(Self {
            attempts: (0..addrs).map(|_| AtomicU64::new(0)).collect(),
            handshakes: AtomicU64::new(0),
            handshake_us: AtomicU64::new(0),
        })
    }

    /// Attempts per address, in address order (all zero with a single address).
    pub fn attempts(&self) -> Vec<u64> {
        self.attempts
            .iter()
            .map(|a| a.load(Ordering::Relaxed))
            .collect()
    }

    /// One attempt more to address `addr` (by index); the HTTP/2 transport's count.
    pub(crate) fn count_attempt(&self, addr: usize) {
        self.attempts[addr].fetch_add(1, Ordering::Relaxed);
    }

    /// One completed TLS handshake of this long; the HTTP/2 transport's count.
    pub(crate) fn count_handshake(&self, took: Duration) {
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.handshakes.fetch_add(1, Ordering::Relaxed);
        self.handshake_us.fetch_add(us, Ordering::Relaxed);
    }

    /// Completed TLS handshakes and their total time.
    pub fn handshakes(&self) -> Handshakes {
        Handshakes {
            count: self.handshakes.load(Ordering::Relaxed),
            sum_us: self.handshake_us.load(Ordering::Relaxed),
        }
    }
}

impl HttpPool {
    /// A pool for the `http://` host at `addr`. Nothing is connected until the first send.
    pub fn new(addr: SocketAddr, cfg: PoolConfig) -> Self {
        Self::with_addrs(vec![addr], cfg)
    }

    /// A pool for a host reachable at every one of `addrs` (at least one).
    pub fn with_addrs(addrs: Vec<SocketAddr>, cfg: PoolConfig) -> Self {
        assert!(!addrs.is_empty(), "a pool needs an address");
        let max = cfg.max_conns.max(1);
        Self {
            counters: HostCounters::new(addrs.len()),
            addrs,
            next_addr: AtomicUsize::new(0),
            slots: Slots::new(max),
            cfg,
            tls: None,
            tunnel: None,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
        }
    }

    /// Count into `counters` (made for as many addresses), shared with other pools.
    pub fn with_counters(mut self, counters: Arc<HostCounters>) -> Self {
        assert_eq!(
            counters.attempts.len(),
            self.addrs.len(),
            "one counter per address"
        );
        self.counters = counters;
        self
    }

    /// Speak TLS to this host (`https://`).
    pub fn with_tls(mut self, tls: Tls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Reach the host through a proxy's tunnel (the pool's addresses are the proxy's).
    pub fn with_tunnel(mut self, tunnel: Option<HubTunnel>) -> Self {
        self.tunnel = tunnel;
        self
    }

    /// The addresses in use.
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// Attempts per address, in [`addrs`](Self::addrs) order. With one address, nothing is
    /// counted here (every attempt went to it).
    pub fn addr_attempts(&self) -> Vec<u64> {
        self.counters.attempts()
    }

    /// Completed TLS handshakes and their total time.
    pub fn handshakes(&self) -> Handshakes {
        self.counters.handshakes()
    }

    /// Close idle connections after `idle_timeout` instead of [`DEFAULT_IDLE_TIMEOUT`].
    pub fn with_idle_timeout(mut self, idle_timeout: Duration) -> Self {
        self.idle_timeout = idle_timeout;
        self
    }

    /// A pool for the `https://` host at `addr`; see [`with_tls`](Self::with_tls).
    pub fn new_tls(addr: SocketAddr, cfg: PoolConfig, tls: Tls) -> Self {
        Self::new(addr, cfg).with_tls(tls)
    }

    /// One request/response exchange. `request` is the complete pre-rendered request (head
    /// and body). `deadline` bounds the whole attempt (pool wait, connect, write, read); the
    /// pool wait is further bounded by `pool_timeout` and the connect by `connect_timeout`.
    pub async fn send(
        &self,
        request: &[u8],
        deadline: Instant,
    ) -> Result<Response, TransportError> {
        let mut resp = Response::default();
        self.send_into(request, Instant::now(), deadline, &mut resp)
            .await?;
        Ok(resp)
    }

    /// The general path of an exchange when no slot was free (the exchange future, in
    /// `exchange.rs`, tried first): the pool wait, then the rest. It and the functions after
    /// it take over from the common case wherever that ends, holding the slot until the
    /// exchange is done. Not boxed here: the exchange future boxes every general path.
    async fn wait_then_exchange<R: Render + Send + Sync>(
        &self,
        request: R,
        deadline: Instant,
        resp: &mut Response,
    ) -> Result<(), TransportError> {
        let slot = self.acquire(deadline).await?;
        // When the exchange takes its connection: the end of the wait.
        let now = Instant::now();
        let idle = self.slots.pop_idle(now);
        self.with_slot(slot, now, Take::Idle(idle), request, deadline, resp)
            .await
    }

    /// With a slot: the connection `take` says, or a new one; `now` is when the exchange
    /// takes it.
    async fn with_slot<R: Render + Send + Sync>(
        &self,
        slot: Slot<'_>,
        now: Instant,
        take: Take,
        request: R,
        deadline: Instant,
        resp: &mut Response,
    ) -> Result<(), TransportError> {
        let retry = matches!(take, Take::Retry);
        let mut conn = match take {
            Take::Idle(Some(conn)) => conn,
            Take::Idle(None) | Take::Retry => self.connect_boxed(deadline).await?,
        };
        if !retry {
            self.count_attempt(&conn);
        }
        // Once more on a fresh connection when a reused one refused the request (the fresh
        // one is not `reused`, so this runs at most twice).
        loop {
            match conn.exchange_by(deadline, &request, resp).await {
                None => return Err(TransportError::Timeout(TimeoutKind::Response)),
                Some(Ok(keep_alive)) => {
                    self.finished(slot, conn, keep_alive, now);
                    return Ok(());
                }
                Some(Err(failure)) => {
                    if !(conn.reused && failure.unsent) {
                        return Err(failure.error);
                    }
                    drop(conn);
                    conn = self.connect_boxed(deadline).await?;
                }
            }
        }
    }

    /// The rest of an exchange on `conn` from `from`, after its request was written (so it
    /// is never resent).
    async fn finish_on(
        &self,
        slot: Slot<'_>,
        now: Instant,
        mut conn: Box<Conn>,
        from: Resume,
        deadline: Instant,
        resp: &mut Response,
    ) -> Result<(), TransportError> {
        match conn.finish_by(deadline, from, resp).await {
            None => Err(TransportError::Timeout(TimeoutKind::Response)),
            Some(Ok(keep_alive)) => {
                self.finished(slot, conn, keep_alive, now);
                Ok(())
            }
            Some(Err(failure)) => Err(failure.error),
        }
    }

    /// A finished exchange's slot and connection: the connection kept for reuse when it is
    /// clean (`now` as for [`with_slot`](Self::with_slot)), closed otherwise, and the slot
    /// given back.
    fn finished(&self, slot: Slot<'_>, mut conn: Box<Conn>, keep_alive: bool, now: Instant) {
        if keep_alive {
            conn.reused = true;
            slot.give_back(conn, now, self.idle_timeout);
        } else {
            drop(conn);
            drop(slot);
        }
    }

    /// One attempt more on `conn`'s address, when the host has several.
    fn count_attempt(&self, conn: &Conn) {
        if self.addrs.len() > 1 {
            self.counters.attempts[conn.addr].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Idle connections currently kept (for tests and diagnostics).
    pub fn idle_count(&self) -> usize {
        self.slots.idle_count()
    }

    /// Close every idle connection now: for a pool whose work is done for a long while (the
    /// registration phase's, idle for the whole load), whose connections would otherwise stay
    /// open until their idle timeout, most of them closed by the server meanwhile and held in
    /// CLOSE-WAIT (no exchange runs through the pool to notice). Exchanges in flight are not
    /// touched, and later ones open connections as usual.
    pub fn close_idle(&self) {
        self.slots.close_idle();
    }

    /// Wait for a slot (none was free), within `pool_timeout` and the deadline.
    async fn acquire(&self, deadline: Instant) -> Result<Slot<'_>, TransportError> {
        let limit = deadline.min(Instant::now() + self.cfg.pool_timeout);
        self.slots
            .take_by(limit)
            .await
            .ok_or(TransportError::Timeout(TimeoutKind::PoolWait))
    }

    /// [`connect`](Self::connect) on the heap, and the connection it makes boxed (two
    /// allocations per new connection): inline, the connect's state (a TLS handshake holds a
    /// whole rustls connection) would be part of every send's, and so of every worker task,
    /// which is touched once per request.
    async fn connect_boxed(&self, deadline: Instant) -> Result<Box<Conn>, TransportError> {
        Box::pin(self.connect(deadline)).await.map(Box::new)
    }

    /// A new connection: TCP within `connect_timeout` (trying the next address when one
    /// refuses), and the proxy's tunnel within the same bound when there is one, then the
    /// TLS handshake within `tls_timeout` for an https host.
    async fn connect(&self, deadline: Instant) -> Result<Conn, TransportError> {
        let limit = deadline.min(Instant::now() + self.cfg.connect_timeout);
        let (mut tcp, addr) = match timeout_at(limit, self.open_tcp()).await {
            Err(_) => return Err(TransportError::Timeout(TimeoutKind::Connect)),
            Ok(result) => result?,
        };
        if let Some(t) = &self.tunnel {
            tcp = t.open(tcp, limit).await?;
        }
        let Some(tls) = &self.tls else {
            return Ok(Conn::new(Stream::Plain(tcp), addr));
        };
        let started = Instant::now();
        let limit = deadline.min(started + self.cfg.tls_timeout);
        let handshake = tls.connector.connect(tls.server_name.clone(), tcp);
        match timeout_at(limit, handshake).await {
            Err(_) => Err(TransportError::Timeout(TimeoutKind::Connect)),
            Ok(Ok(s)) => {
                let us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
                self.counters.handshakes.fetch_add(1, Ordering::Relaxed);
                self.counters.handshake_us.fetch_add(us, Ordering::Relaxed);
                Ok(Conn::new(Stream::Tls(Box::new(s)), addr))
            }
            Ok(Err(e)) => Err(tls::handshake_error(&e)),
        }
    }

    /// TCP connect with `TCP_NODELAY` to the next address in turn; on a refusal, the
    /// following ones, each once. Returns the stream and its address index.
    async fn open_tcp(&self) -> Result<(TcpStream, usize), TransportError> {
        let n = self.addrs.len();
        let first = if n == 1 {
            0
        } else {
            self.next_addr.fetch_add(1, Ordering::Relaxed) % n
        };
        let mut last = TransportError::Conn(ConnErrorKind::Refused);
        for i in (0..n).map(|k| (first + k) % n) {
            match TcpStream::connect(self.addrs[i]).await {
                Ok(tcp) => {
                    tcp.set_nodelay(true).map_err(|e| io_error(&e))?;
                    return Ok((tcp, i));
                }
                Err(e) => match io_error(&e) {
                    refused @ TransportError::Conn(ConnErrorKind::Refused) => last = refused,
                    other => return Err(other),
                },
            }
        }
        Err(last)
    }
}
