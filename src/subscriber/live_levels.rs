//! The fleet's book of levels for the live page: whether one is open, and each closed level's
//! final delivery figures, so a reader that adds up what changed between two reads misses no
//! delivery a level counted.

use std::sync::{Mutex, MutexGuard};

use crate::stats::{new_histogram, Histogram};

/// One level's delivery figures up to a moment.
#[derive(Debug, Clone)]
pub struct DeliveryNow {
    /// The level's number in the fleet (0 for its first level).
    pub level: usize,
    /// Deliveries counted delivered (first acknowledged), every subscriber's.
    pub delivered: u64,
    /// Deliveries owed: each accepted publish times the subscribers listening to its topic.
    pub owed: u64,
    /// Publish start → delivery received, µs.
    pub e2e_us: Histogram,
}

impl DeliveryNow {
    pub(crate) fn empty(level: usize) -> Self {
        DeliveryNow {
            level,
            delivered: 0,
            owed: 0,
            e2e_us: new_histogram(),
        }
    }
}

/// What a read finds.
#[derive(Debug, Clone, Default)]
pub struct DeliveryRead {
    /// The closed levels' final figures asked for, in order.
    pub closed: Vec<DeliveryNow>,
    /// The open level so far (`None` between levels).
    pub open: Option<DeliveryNow>,
}

/// The levels' book, kept in the fleet: written as a level opens and closes, under one lock
/// the reader takes too, so a read sees a level either open or closed with its final figures.
#[derive(Debug, Default)]
pub(crate) struct LiveLevels {
    book: Mutex<(bool, Vec<DeliveryNow>)>,
}

impl LiveLevels {
    /// The book, locked; held while a level closes so no read sees it half taken.
    pub(crate) fn lock(&self) -> MutexGuard<'_, (bool, Vec<DeliveryNow>)> {
        self.book.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A level opened.
    pub(crate) fn opened(&self) {
        self.lock().0 = true;
    }
}

/// The final figures of a level being closed (`delivered` and `owed` per second, `e2e_us`),
/// recorded in `book` (held by the closer) and the level marked closed.
pub(crate) fn close_level(
    book: &mut (bool, Vec<DeliveryNow>),
    delivered: &[u64],
    owed: &[u64],
    e2e_us: &Histogram,
) {
    let level = book.1.len();
    book.1.push(DeliveryNow {
        level,
        delivered: delivered.iter().sum(),
        owed: owed.iter().sum(),
        e2e_us: e2e_us.clone(),
    });
    book.0 = false;
}
