//! The live page's delivery figures of one second (`--subscribers`): what the fleet's levels
//! delivered and owed since the second before, the end-to-end p50/p99 of those deliveries and
//! the open level's backlog. Each read adds a closed level's remainder from its final figures,
//! so the seconds add up to the levels' counts in summary.json.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::stats::{new_histogram, Histogram};
use crate::subscriber::{DeliveryPart, DeliveryView};

/// Where the run puts its fleet's view once the fleet exists (one per target path), numbered
/// so the reader knows a new fleet from the old.
#[derive(Debug, Clone, Default)]
pub struct DeliverySlot(Arc<Mutex<Option<(u64, DeliveryView)>>>);

impl DeliverySlot {
    /// Read `view` from now on.
    pub fn set(&self, view: DeliveryView) {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let n = g.as_ref().map_or(0, |(n, _)| n + 1);
        *g = Some((n, view));
    }

    fn get(&self) -> Option<(u64, DeliveryView)> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// What the reader counted of the fleet so far.
#[derive(Debug)]
pub struct DeliveryPrev {
    fleet: Option<u64>,
    level: usize,
    delivered: u64,
    owed: u64,
    e2e_us: Histogram,
    delivered_total: u64,
    owed_total: u64,
}

impl Default for DeliveryPrev {
    fn default() -> Self {
        DeliveryPrev {
            fleet: None,
            level: 0,
            delivered: 0,
            owed: 0,
            e2e_us: new_histogram(),
            delivered_total: 0,
            owed_total: 0,
        }
    }
}

/// What the fleet's levels delivered and owed since the last read (`None` before any fleet).
pub fn take(slot: &DeliverySlot, prev: &mut DeliveryPrev) -> Option<DeliveryPart> {
    let (fleet, view) = slot.get()?;
    if prev.fleet != Some(fleet) {
        // A new fleet (the next target path): its levels count from its first.
        prev.fleet = Some(fleet);
        prev.level = 0;
        prev.delivered = 0;
        prev.owed = 0;
        prev.e2e_us.reset();
    }
    let read = view.read(prev.level);
    let backlog = read
        .open
        .as_ref()
        .map_or(0, |o| o.owed.saturating_sub(o.delivered));
    let (mut delivered, mut owed, mut e2e) = (0, 0, new_histogram());
    for now in read.closed.into_iter().chain(read.open) {
        if now.level != prev.level {
            prev.level = now.level;
            prev.delivered = 0;
            prev.owed = 0;
            prev.e2e_us.reset();
        }
        delivered += now.delivered.saturating_sub(prev.delivered);
        owed += now.owed.saturating_sub(prev.owed);
        let mut d = now.e2e_us.clone();
        if d.subtract(&prev.e2e_us).is_ok() {
            // Same layout and auto-resize: adding cannot fail.
            let _ = e2e.add(&d);
        }
        prev.delivered = now.delivered;
        prev.owed = now.owed;
        prev.e2e_us = now.e2e_us;
    }
    prev.delivered_total += delivered;
    prev.owed_total += owed;
    Some(DeliveryPart {
        delivered,
        owed,
        backlog,
        e2e_us: e2e,
    })
}

/// The second's `delivery` figures (null before any fleet).
pub fn second(slot: &DeliverySlot, prev: &mut DeliveryPrev) -> Value {
    match take(slot, prev) {
        Some(part) => part.shown((prev.delivered_total, prev.owed_total)),
        None => Value::Null,
    }
}
