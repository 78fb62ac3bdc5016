//! The live page's handle on the fleet (`--web`): the closed levels' final delivery figures
//! and the open level's so far, read once a second, and the figures a page shows of them.

use std::sync::Arc;

use serde_json::{json, Value};

use super::fleet_shared::Shared;
use super::live_levels::{DeliveryNow, DeliveryRead};

/// A reader's handle on a fleet's levels; it keeps the fleet's shared state alive, nothing
/// else, and costs the deliveries nothing (they never take its lock).
#[derive(Debug, Clone)]
pub struct DeliveryView {
    shared: Arc<Shared>,
}

impl DeliveryView {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        DeliveryView { shared }
    }

    /// The final figures of the closed levels from the `from`th on, and the open level's so
    /// far.
    pub fn read(&self, from: usize) -> DeliveryRead {
        let sh = &self.shared;
        let book = sh.live.lock();
        let open = book.0.then(|| {
            let mut now = DeliveryNow::empty(book.1.len());
            now.delivered = sh.delivered_per_second.to_vec().iter().sum();
            now.owed = sh.tracker.owed_per_second().iter().sum();
            now.e2e_us = sh.hists.e2e_from_start_now();
            now
        });
        DeliveryRead {
            closed: book.1.get(from..).map_or_else(Vec::new, <[_]>::to_vec),
            open,
        }
    }
}

/// What the fleet delivered and owed since the last read, their end-to-end latency (µs),
/// and the open level's backlog.
#[derive(Debug)]
pub struct DeliveryPart {
    /// Deliveries received since the last read.
    pub delivered: u64,
    /// Deliveries owed since the last read (each accepted publish times its topic's listeners).
    pub owed: u64,
    /// Owed − delivered in the open level so far.
    pub backlog: u64,
    /// End-to-end latency of those deliveries, µs.
    pub e2e_us: crate::stats::Histogram,
}

impl DeliveryPart {
    /// The figures the page shows of a second's deliveries: `delivered`, `owed`, `backlog`,
    /// `p50_ms`, `p99_ms` and the run's `delivered_total` and `owed_total` (`totals`) so far.
    pub fn shown(&self, totals: (u64, u64)) -> Value {
        let ms = |q: f64| match self.e2e_us.len() {
            0 => Value::Null,
            _ => json!(self.e2e_us.value_at_quantile(q) as f64 / 1000.0),
        };
        json!({
            "delivered": self.delivered,
            "owed": self.owed,
            "backlog": self.backlog,
            "p50_ms": ms(0.5),
            "p99_ms": ms(0.99),
            "delivered_total": totals.0,
            "owed_total": totals.1,
        })
    }
}
