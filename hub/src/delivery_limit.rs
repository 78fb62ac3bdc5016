//! The hub-wide delivery limit's settings and figures (`--delivery-workers`,
//! `--delivery-queue`, `--delivery-queue-size`): plain data; the queue itself is
//! `delivery_queue.rs`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Deliveries the hub-wide queue holds by default (`--delivery-queue-size`).
pub const QUEUE_SIZE: usize = 65_536;

/// The order the hub-wide queue hands deliveries out in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueOrder {
    /// Arrival order over every tenant.
    #[default]
    Fifo,
    /// Round robin across tenants, arrival order within each.
    Fair,
}

impl fmt::Display for QueueOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QueueOrder::Fifo => "fifo",
            QueueOrder::Fair => "fair",
        })
    }
}

impl FromStr for QueueOrder {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "fifo" => Ok(QueueOrder::Fifo),
            "fair" => Ok(QueueOrder::Fair),
            other => Err(format!("{other:?}: expected fifo or fair")),
        }
    }
}

/// The hub-wide limit's settings; the hub has none by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliveryLimit {
    /// Deliveries in flight at once over the whole hub (≥ 1).
    pub workers: usize,
    /// How the waiting deliveries are ordered.
    pub order: QueueOrder,
    /// Deliveries the queue holds (≥ 1); one more is dropped.
    pub queue_size: usize,
}

/// The hub-wide queue's figures in `/stats` (`delivery_queue`; absent without the limit).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct DeliveryQueueStats {
    /// `--delivery-workers`.
    pub workers: u64,
    /// `--delivery-queue`: `fifo` or `fair`.
    pub order: QueueOrder,
    /// `--delivery-queue-size`.
    pub capacity: u64,
    /// Deliveries waiting in the queue now.
    pub queued: u64,
    /// The most that ever waited at once.
    pub max_queued: u64,
    /// Deliveries handed to their subscription's workers (each holding a permit).
    pub dispatched: u64,
    /// Deliveries in flight now (permits held).
    pub in_flight: u64,
    /// Deliveries dropped because the queue was full (also in `distribution.dropped`).
    pub overflow: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_parses_and_prints() {
        for o in [QueueOrder::Fifo, QueueOrder::Fair] {
            assert_eq!(o.to_string().parse::<QueueOrder>(), Ok(o));
        }
        assert!("lifo"
            .parse::<QueueOrder>()
            .unwrap_err()
            .contains("fifo or fair"));
    }
}
