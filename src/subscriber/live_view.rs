//! The live page's handle on the fleet (`--web`): the closed levels' final delivery figures
//! and the open level's so far, read once a second.

use std::sync::Arc;

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
