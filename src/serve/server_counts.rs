//! A server's connection counts: accepted, ended, requests answered, and the deadlines reached.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A server's connection counts, as [`ServerStats::counts`] reads them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerCounts {
    /// Connections accepted.
    pub accepted: u64,
    /// Connections ended (all their requests are in `answered`).
    pub ended: u64,
    /// Requests answered on ended connections.
    pub answered: u64,
    /// Connections closed because no request began within the idle deadline.
    pub idle_closed: u64,
    /// Connections closed because a request's head or body was not read within the exchange deadline.
    pub read_late: u64,
    /// Connections closed because the client did not take an answer within the exchange deadline.
    pub write_late: u64,
    /// Connections closed at accept because `max_connections` were open (not in `accepted`).
    pub over_limit: u64,
}

/// A server's connection counters (shared by its connection tasks).
#[derive(Debug, Default)]
pub struct ServerStats {
    pub(super) accepted: AtomicU64,
    pub(super) ended: AtomicU64,
    pub(super) answered: AtomicU64,
    pub(super) idle_closed: AtomicU64,
    pub(super) read_late: AtomicU64,
    pub(super) write_late: AtomicU64,
    pub(super) over_limit: AtomicU64,
}

impl ServerStats {
    /// The counts so far.
    pub fn counts(&self) -> ServerCounts {
        ServerCounts {
            accepted: self.accepted.load(Relaxed),
            ended: self.ended.load(Relaxed),
            answered: self.answered.load(Relaxed),
            idle_closed: self.idle_closed.load(Relaxed),
            read_late: self.read_late.load(Relaxed),
            write_late: self.write_late.load(Relaxed),
            over_limit: self.over_limit.load(Relaxed),
        }
    }
}
