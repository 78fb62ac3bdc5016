//! What the hub's client bounds cut off, as `/stats` shows it (plain data; the counters are
//! in `serve_limits`).

use serde::{Deserialize, Serialize};

/// What the hub's client bounds cut off since it started serving (`serve` in `/stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServeStats {
    /// Connections closed because a request head was not complete within the head timeout,
    /// those that never sent enough to choose HTTP/1.1 or h2c included.
    pub head_timeouts: u64,
    /// Of `head_timeouts`, those that had not sent the 24 bytes that choose the protocol.
    pub silent: u64,
    /// Connections reset because a response write made no progress for the write stall.
    pub write_stalled: u64,
    /// Connections closed at accept because the connection cap was reached.
    pub over_limit: u64,
}
