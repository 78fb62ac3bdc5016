//! Live numbers for the progress display, read on demand from the level's stripes.
//!
//! Workers record nothing extra for it: a snapshot locks each stripe in turn and adds up its
//! counts and latency histogram, so the figures are exact and current, and the per-attempt
//! path carries no live delta, no fourth histogram and no periodic flush.

use std::sync::{Arc, Mutex};

use super::stripe::{Stripe, StripeCell};
use crate::stats::{new_histogram, Counts};

/// The level's figures so far, as [`Live::totals`] adds them up.
#[derive(Debug)]
pub struct Totals {
    /// Attempts ended, per class.
    pub counts: Counts,
    /// Latency from the actual start, µs.
    pub latency: hdrhistogram::Histogram<u64>,
    /// Latency from the intended start (the open model's corrected latency; the same as
    /// `latency` in the closed model), µs.
    pub corrected: hdrhistogram::Histogram<u64>,
}

impl Totals {
    /// Nothing ended yet: no count, empty histograms.
    pub fn empty() -> Self {
        Totals {
            counts: Counts::default(),
            latency: new_histogram(),
            corrected: new_histogram(),
        }
    }
}

/// One level's stripes (see [`Live::level`]).
#[derive(Clone)]
pub struct LiveLevel(Arc<[StripeCell]>);

impl std::fmt::Debug for LiveLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveLevel").finish_non_exhaustive()
    }
}

impl LiveLevel {
    /// The same level's stripes as `other`'s.
    pub fn is(&self, other: &LiveLevel) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Counts, latency and corrected latency of this level so far (µs).
    pub fn totals(&self) -> Totals {
        let live = Live {
            stripes: Mutex::new(Some(self.0.clone())),
        };
        live.totals()
    }
}

/// The stripes of the level in progress (or of the last one), shared with the display.
#[derive(Default)]
pub struct Live {
    stripes: Mutex<Option<Arc<[StripeCell]>>>,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live").finish_non_exhaustive()
    }
}

impl Live {
    /// Show `stripes` (a new level) from now on; the previous level is forgotten.
    pub(crate) fn watch(&self, stripes: Arc<[StripeCell]>) {
        *self.stripes.lock().unwrap_or_else(|e| e.into_inner()) = Some(stripes);
    }

    /// Counts so far and the latency quantiles 0.5, 0.9, 0.99 and 1 so far (µs): what the
    /// exporter (`observe/`) publishes while a level runs.
    pub fn quantiles(&self) -> (Counts, [u64; 4]) {
        let (counts, hist) = self.merged();
        let q = |x: f64| hist.value_at_quantile(x);
        (counts, [q(0.5), q(0.9), q(0.99), hist.max()])
    }

    /// Measured attempts in flight now: started and not yet recorded. Each stripe's start
    /// count is read before its recorded count, so an attempt that ends between the two
    /// reads is never counted as ended without having been counted as started (the figure
    /// can only lag, by the attempts that start during the read, never go below zero).
    pub fn inflight(&self) -> u64 {
        self.current()
            .iter()
            .flat_map(|s| s.iter())
            .map(|s| {
                let started = s.started();
                started.saturating_sub(s.lock().stats.counts.total())
            })
            .sum()
    }

    /// Counts so far and the p99 latency so far (µs).
    pub fn snapshot(&self) -> (Counts, u64) {
        let (counts, hist) = self.merged();
        (counts, hist.value_at_quantile(0.99))
    }

    /// Counts, latency and corrected latency so far (µs): what the live page (`web/`) takes
    /// a second's difference of.
    pub fn totals(&self) -> Totals {
        let mut corrected = new_histogram();
        let (counts, latency) = self.merge_with(|s| {
            let _ = corrected.add(&s.stats.corrected);
        });
        Totals {
            counts,
            latency,
            corrected,
        }
    }

    /// The level being watched now: a handle that keeps reading that level's stripes after
    /// the next level is watched (a shard's seconds take a level's last part from it).
    pub fn level(&self) -> Option<LiveLevel> {
        self.current().map(LiveLevel)
    }

    /// Every stripe's counts and latency histogram, added up.
    fn merged(&self) -> (Counts, hdrhistogram::Histogram<u64>) {
        self.merge_with(|_| {})
    }

    /// Every stripe's counts and latency histogram, added up; `also` sees each stripe too,
    /// under the same lock.
    fn merge_with(&self, mut also: impl FnMut(&Stripe)) -> (Counts, hdrhistogram::Histogram<u64>) {
        let mut counts = Counts::default();
        let mut hist = new_histogram();
        for s in self.current().iter().flat_map(|s| s.iter()) {
            let s = s.lock();
            counts += &s.stats.counts;
            // Same layout everywhere, so `add` cannot fail on bounds.
            let _ = hist.add(&s.stats.latency);
            also(&s);
        }
        (counts, hist)
    }

    /// The stripes being watched (a clone of the handle, so no stripe is locked under ours).
    fn current(&self) -> Option<Arc<[StripeCell]>> {
        self.stripes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}
