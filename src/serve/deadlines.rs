//! How long a connection of hubload's own servers may wait for a request and take over one.

use std::time::Duration;

/// How long a connection of hubload's own servers may take (docs/deadlines.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerDeadlines {
    /// Waiting for a request's first byte, on a new or a kept-alive connection.
    pub idle: Duration,
    /// From a request's first byte: reading its head and body and writing its answer.
    pub exchange: Duration,
    /// Connections open at once; one more is closed as soon as it is accepted (counted
    /// `over_limit`), so idle clients cannot take every descriptor.
    pub max_connections: usize,
}

impl Default for ServerDeadlines {
    /// 60 s idle (a hub's kept-alive connection between deliveries; nginx keeps 75 s), 10 s
    /// an exchange (a request or answer of at most a few megabytes, on a local network),
    /// 10,000 connections.
    fn default() -> Self {
        ServerDeadlines {
            idle: Duration::from_secs(60),
            exchange: Duration::from_secs(10),
            max_connections: 10_000,
        }
    }
}
