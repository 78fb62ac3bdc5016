//! Live numbers for the progress display, read on demand from the level's stripes.
//!
//! Workers record nothing extra for it: a snapshot locks each stripe in turn and adds up its
//! counts and latency histogram, so the figures are exact and current, and the per-attempt
//! path carries no live delta, no fourth histogram and no periodic flush.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

pub use super::stripe::SecondPart;
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
            seconds: AtomicBool::new(false),
        };
        live.totals()
    }
}

/// The stripes of the level in progress (or of the last one), shared with the display.
#[derive(Default)]
pub struct Live {
    stripes: Mutex<Option<Arc<[StripeCell]>>>,
    /// A live page samples the levels: their stripes keep the part of a second since the
    /// last [`take_second`](Self::take_second).
    seconds: AtomicBool,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live").finish_non_exhaustive()
    }
}

impl Live {
    /// Show `stripes` (a new level) from now on; the previous level is forgotten.
    pub(crate) fn watch(&self, stripes: Arc<[StripeCell]>) {
        let mut g = self.stripes.lock().unwrap_or_else(|e| e.into_inner());
        if self.seconds.load(Ordering::Acquire) {
            keep_seconds(&stripes);
        }
        *g = Some(stripes);
    }

    /// From now on every level's stripes keep the part of a second the live page's sampler
    /// takes ([`take_second`](Self::take_second)): two more histogram records per attempt,
    /// and only with a page.
    pub fn keep_seconds(&self) {
        let g = self.stripes.lock().unwrap_or_else(|e| e.into_inner());
        self.seconds.store(true, Ordering::Release);
        if let Some(s) = g.as_ref() {
            keep_seconds(s);
        }
    }

    /// The level's counts so far and its attempts in flight, and in `part` what ended since
    /// the last call (the whole level at its first; empty without
    /// [`keep_seconds`](Self::keep_seconds)). Each stripe's histograms are swapped for
    /// empty ones under the lock its counts are read under, so the counts' growth and `part`
    /// are of the same attempts, and a level's parts add up to its histograms exactly.
    /// `spare` is scratch of the same kind, kept by the caller so nothing is allocated a
    /// second once the histograms have grown to the level's latencies.
    pub fn take_second(&self, part: &mut SecondPart, spare: &mut SecondPart) -> (Counts, u64) {
        part.reset();
        let mut counts = Counts::default();
        let mut inflight = 0;
        let mut first = true;
        for s in self.current().iter().flat_map(|s| s.iter()) {
            let started = s.started();
            let mut g = s.lock();
            counts += &g.stats.counts;
            inflight += started.saturating_sub(g.stats.counts.total());
            let Some(mine) = g.second.as_mut() else {
                continue;
            };
            if first {
                // The first stripe's part becomes `part` whole, without a copy.
                std::mem::swap(mine, part);
                first = false;
            } else {
                spare.reset();
                std::mem::swap(mine, spare);
                drop(g);
                part.add(spare);
            }
        }
        (counts, inflight)
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

/// Start keeping each stripe's part of a second (a stripe that keeps one already goes on).
fn keep_seconds(stripes: &[StripeCell]) {
    for s in stripes {
        let mut g = s.lock();
        if g.second.is_none() {
            g.second = Some(SecondPart::default());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{Attempt, Class, Outcome};
    use crate::stats::AttemptSpan;

    /// Attempts recorded into three stripes between takes, some taken before any page kept
    /// seconds: the parts taken add up to the level's histograms exactly, each part holds
    /// exactly the attempts its counts grew by, and the in-flight count is started − ended.
    #[test]
    fn the_seconds_taken_add_up_to_the_level() {
        let live = Live::default();
        live.keep_seconds();
        let stripes = super::super::stripe::stripes(
            3,
            2,
            (1_000_000, 1_000_000),
            crate::stats::Writers::Threads,
        );
        live.watch(stripes.clone());
        let (mut part, mut spare) = (SecondPart::default(), SecondPart::default());
        let (mut sum, mut prev) = (SecondPart::default(), Counts::default());
        let mut rng = hubload_rng::SplitMix64::for_event(3, 0);
        for second in 0..6u64 {
            let n = 50 * second;
            for i in 0..n {
                let us = 1 + rng.below(3_000_000);
                let span = AttemptSpan {
                    us,
                    corrected_us: Some(us + rng.below(1_000)),
                    start_unix_us: 0,
                    end_unix_us: us,
                    sec: second as usize,
                };
                let outcome = match i % 5 {
                    0 => Outcome::Http503,
                    _ => Outcome::Accepted,
                };
                let a = Attempt {
                    outcome,
                    ..Attempt::CANCELLED
                };
                let s = &stripes[(i % 3) as usize];
                s.start();
                s.lock().record_attempt(&span, &a, true);
            }
            // Two started, not ended.
            stripes[0].start();
            stripes[2].start();
            let (counts, inflight) = live.take_second(&mut part, &mut spare);
            assert_eq!(counts.total() - prev.total(), n, "second {second}");
            assert_eq!(part.latency.len(), n);
            assert_eq!(part.corrected.len(), n);
            assert_eq!(inflight, 2 * (second + 1));
            assert_eq!(
                counts.get(Class::Http503) - prev.get(Class::Http503),
                n.div_ceil(5)
            );
            sum.add(&part);
            prev = counts;
        }
        let level = super::super::stripe::merged(&stripes);
        assert_eq!(sum.latency, level.latency);
        assert_eq!(sum.corrected, level.corrected);
        assert_eq!(level.latency.len(), 50 * 15);
        // Nothing more ended: an empty part.
        live.take_second(&mut part, &mut spare);
        assert!(part.latency.is_empty() && part.corrected.is_empty());
    }
}
