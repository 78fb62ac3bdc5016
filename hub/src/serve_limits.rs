//! The bounds the hub's accept loop puts on its clients ([`ServeLimits`]), what they cut off
//! ([`ServeCounts`], shown as [`ServeStats`]), and the I/O wrapper that sees a write make no progress and counts the
//! bytes read ([`Watched`]).

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::serve_stats::ServeStats;

/// Bounds on the hub's clients (docs/deadlines.md, "hubload's own servers").
#[derive(Debug, Clone)]
pub struct ServeLimits {
    /// A request head (of a new or a kept-alive connection) not complete within this closes
    /// the connection: slowloris heads, clients that connect and send nothing.
    pub head_timeout: Duration,
    /// A response write that makes no progress for this long (a client that never reads)
    /// resets the connection.
    pub write_stall: Duration,
    /// Connections open at once; one more is closed as soon as it is accepted.
    pub max_connections: usize,
    /// What the bounds cut off, shared with whoever wants to read it.
    pub counts: Arc<ServeCounts>,
}

impl Default for ServeLimits {
    fn default() -> Self {
        ServeLimits {
            head_timeout: Duration::from_secs(30),
            write_stall: Duration::from_secs(30),
            max_connections: 10_000,
            counts: Arc::default(),
        }
    }
}

/// Connections the hub's bounds cut off.
#[derive(Debug, Default)]
pub struct ServeCounts {
    /// Closed by hyper because a request head was not complete within `head_timeout`.
    pub head_timeouts: AtomicU64,
    /// Reset because a write made no progress for `write_stall`.
    pub write_stalled: AtomicU64,
    /// Closed at accept because `max_connections` were open.
    pub over_limit: AtomicU64,
    /// Closed because they had not sent the 24 bytes that tell HTTP/1.1 from h2c within
    /// `head_timeout` (hyper's own head timeout starts only after them).
    pub silent: AtomicU64,
}

impl ServeCounts {
    /// The counts now, as `/stats` shows them.
    pub fn snapshot(&self) -> ServeStats {
        let silent = self.silent.load(Ordering::Relaxed);
        ServeStats {
            head_timeouts: self.head_timeouts.load(Ordering::Relaxed) + silent,
            silent,
            write_stalled: self.write_stalled.load(Ordering::Relaxed),
            over_limit: self.over_limit.load(Ordering::Relaxed),
        }
    }
}

/// Bytes a connection must send before hyper's own head timeout applies: the length of the
/// h2 preface, which hyper-util reads to choose the protocol.
pub(crate) const PREFACE_BYTES: u64 = 24;

/// Since when the connection's writes have been pending without progress (`None` while they
/// go through), and the bytes read so far. Shared between [`Watched`] and its connection's
/// watchdog.
#[derive(Debug, Clone, Default)]
pub(crate) struct WriteStall(Arc<Mutex<Option<Instant>>>, Arc<AtomicU64>);

impl WriteStall {
    /// Bytes read from the connection so far.
    pub(crate) fn read_bytes(&self) -> u64 {
        self.1.load(Ordering::Relaxed)
    }

    /// How long the pending write has made no progress (zero when none is pending).
    pub(crate) fn stalled_for(&self) -> Duration {
        self.0
            .lock()
            .expect("stall lock")
            .map_or(Duration::ZERO, |since| since.elapsed())
    }

    fn note<T>(&self, r: &Poll<T>) {
        let mut since = self.0.lock().expect("stall lock");
        match r {
            Poll::Pending => {
                since.get_or_insert_with(Instant::now);
            }
            Poll::Ready(_) => *since = None,
        }
    }
}

/// An I/O stream whose writes note when they stop making progress.
pub(crate) struct Watched<I> {
    pub(crate) io: I,
    pub(crate) stall: WriteStall,
}

impl<I: AsyncRead + Unpin> AsyncRead for Watched<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.io).poll_read(cx, buf);
        let read = (buf.filled().len() - before) as u64;
        self.stall.1.fetch_add(read, Ordering::Relaxed);
        r
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Watched<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write(cx, buf);
        self.stall.note(&r);
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.stall.note(&r);
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.io).poll_flush(cx);
        self.stall.note(&r);
        r
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
