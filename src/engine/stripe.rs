//! The recording stripes of a level: where workers record, and what the live display reads.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::result::Attempt;
use crate::stats::{
    difference, histogram_up_to, new_histogram, record, AttemptSpan, Histogram, LevelStats, Writers,
};

/// Where workers record: a fixed number of stripes, each behind its own mutex (the progress
/// display reads them too, `live.rs`). Worker `w` records into stripe `w % n`.
///
/// Why not one `LevelStats` per worker (the plain design): each holds HdrHistograms of up to
/// ~100 KB, and the open model runs up to `--max-inflight` workers (thousands), so memory
/// would grow with concurrency. A stripe lock is taken once per attempt, never across an
/// await, and with several stripes per runtime thread (one on a single thread) it is almost
/// never contended (~20 ns).
///
/// Two of the level's histograms are derived instead of recorded, because in a healthy run
/// they are almost the whole of `latency` and recording each attempt three times was a
/// measurable share of the generator's work per request:
/// - `accepted_latency` is `latency` less `failed` (the attempts not accepted);
/// - `event_latency` is `latency` less `not_whole` (attempts that are not their event's only
///   one) plus `multi` (the events of those attempts): an event of one attempt has exactly
///   that attempt's latency, since both run from the attempt's start to its end.
///
/// Both are exact: bucket counts add and subtract without loss, and
/// [`finish`](Self::finish) rebuilds each at the size direct recording gives.
pub(crate) struct Stripe {
    /// Everything measured but the two derived histograms, which stay empty here.
    pub stats: LevelStats,
    /// Latency of the attempts not accepted.
    failed: Histogram,
    /// Latency of the attempts that are not, alone, a whole event.
    not_whole: Histogram,
    /// Latency of the events that are not one attempt alone.
    multi: Histogram,
    /// The attempts recorded since the live page's sampler last took them ([`Live`]'s
    /// `take_second`); `None` without a page, and then nothing more is recorded.
    ///
    /// [`Live`]: super::Live
    pub second: Option<SecondPart>,
}

/// What ended in one stretch of time (the live page's second): latency and corrected latency,
/// µs, in the one layout, so the stretches of a level add up to its histograms exactly.
#[derive(Debug, Clone)]
pub struct SecondPart {
    /// Latency from the actual start.
    pub latency: Histogram,
    /// Latency from the intended start (open model; empty in the closed model).
    pub corrected: Histogram,
}

impl Default for SecondPart {
    fn default() -> Self {
        SecondPart {
            latency: new_histogram(),
            corrected: new_histogram(),
        }
    }
}

impl SecondPart {
    /// Empty both, keeping their size (a second's histograms, reused, do not grow again).
    pub fn reset(&mut self) {
        // Zeroing is a pass over every count: skip it where nothing was recorded.
        for h in [&mut self.latency, &mut self.corrected] {
            if !h.is_empty() {
                h.reset();
            }
        }
    }

    /// Add `other`'s values (same layout, so it cannot fail on bounds).
    pub fn add(&mut self, other: &SecondPart) {
        let _ = self.latency.add(&other.latency);
        let _ = self.corrected.add(&other.corrected);
    }
}

impl Stripe {
    /// A stripe whose histograms recorded on every attempt and kept for the level are sized
    /// from the start: `latency` for `sizes.0`, `corrected` (the open model's) for `sizes.1`,
    /// µs, 0 for one that grows as it needs. The latency's bound is the attempt timeout, which
    /// no attempt outlasts; corrected values can, and grow the histogram as before. The other
    /// three record only failed or retried attempts and grow as they need.
    fn new(sizes: (u64, u64)) -> Self {
        let mut stats = LevelStats::default();
        if sizes.0 > 0 {
            stats.latency = histogram_up_to(sizes.0);
        }
        if sizes.1 > 0 {
            stats.corrected = histogram_up_to(sizes.1);
        }
        Stripe {
            stats,
            failed: new_histogram(),
            not_whole: new_histogram(),
            multi: new_histogram(),
            second: None,
        }
    }

    /// Record one measured attempt. `whole_event`: it is its event's first attempt and ends
    /// it (the event is then recorded with `whole_event` too, and its latency is this one's).
    pub fn record_attempt(&mut self, span: &AttemptSpan, a: &Attempt, whole_event: bool) {
        self.stats.record_span_striped(span, a);
        if let Some(p) = &mut self.second {
            record(&mut p.latency, span.us);
            if let Some(c) = span.corrected_us {
                record(&mut p.corrected, c);
            }
        }
        if a.outcome.class() != crate::result::Class::Accepted {
            record(&mut self.failed, span.us);
        }
        if !whole_event {
            record(&mut self.not_whole, span.us);
        }
    }

    /// Record one finished event of `attempts` attempts and latency `us`; `whole_event` as
    /// its attempt was recorded with (one attempt, recorded as ending the event); `late`: an
    /// open-model event whose first attempt started late.
    pub fn record_event(
        &mut self,
        us: u64,
        attempts: u32,
        ok: bool,
        whole_event: bool,
        late: bool,
    ) {
        self.stats.count_event(attempts, ok);
        self.stats.late_sends += u64::from(late);
        if !whole_event {
            record(&mut self.multi, us);
        }
    }

    /// Add `other`'s records to this stripe's (merging the level's stripes before
    /// [`finish`](Self::finish), so the histograms are derived once per level).
    pub fn add(&mut self, other: &Stripe) {
        self.stats += &other.stats;
        for (a, b) in [
            (&mut self.failed, &other.failed),
            (&mut self.not_whole, &other.not_whole),
            (&mut self.multi, &other.multi),
        ] {
            a.add(b).expect("same histogram layout");
        }
    }

    /// The stats with the derived histograms filled in: what recording every attempt and
    /// event into a `LevelStats` directly gives.
    pub fn finish(self) -> LevelStats {
        let mut s = self.stats;
        s.accepted_latency = difference(&s.latency, &self.failed);
        let mut events = difference(&s.latency, &self.not_whole);
        events.add(&self.multi).expect("same histogram layout");
        s.event_latency = events;
        s
    }
}

/// One stripe and, beside its lock, the count of measured attempts its workers started: the
/// live in-flight figure is started − recorded (`live.rs`). A counter next to the mutex the
/// attempt locks at its end anyway, so the start adds one uncontended add on a line the
/// worker is about to touch (an atomic one only when workers run on several threads), and
/// nothing else.
pub(crate) struct StripeCell {
    stripe: Mutex<Stripe>,
    started: AtomicU64,
    writers: Writers,
}

impl StripeCell {
    fn new(sizes: (u64, u64), writers: Writers) -> Self {
        StripeCell {
            stripe: Mutex::new(Stripe::new(sizes)),
            started: AtomicU64::new(0),
            writers,
        }
    }

    /// The stripe, locked (a poisoned lock still holds good counts).
    pub fn lock(&self) -> std::sync::MutexGuard<'_, Stripe> {
        self.stripe.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A measured attempt starts.
    pub fn start(&self) {
        self.writers.add_u64(&self.started, 1);
    }

    /// Measured attempts started so far.
    pub fn started(&self) -> u64 {
        self.started.load(Ordering::Relaxed)
    }
}

/// The level's stripes merged, with the derived histograms filled in.
/// Merged into histograms that grow, so the level's histograms (and their encoded headers in
/// the reports) are sized by what was recorded, whatever the stripes' sizes.
pub(crate) fn merged(stripes: &[StripeCell]) -> LevelStats {
    let mut all = Stripe::new((0, 0));
    for s in stripes {
        all.add(&s.lock());
    }
    all.finish()
}

/// Stripes for a level whose workers run on `threads` runtime threads: enough that two
/// threads rarely meet on one, and one for a single thread, which never contends.
///
/// No more than that: each stripe's histograms are written at the buckets of the latencies
/// seen, spread over a few KB, and a request touches its stripe once per round of the
/// stripes, so every stripe beyond need adds cold cache lines to each request (the kernel's
/// work between two touches of one stripe evicts them).
///
/// `sizes` sizes each stripe's per-attempt histograms ([`Stripe::new`]): 112 KB each for the
/// default 5 s timeout, so 1.75 MB in the closed model and 3.5 MB in the open one (which fills
/// `corrected` too) at the 16 stripes of a 2-thread runtime, whatever the number of tenants,
/// topics or workers; 14 and 28 MB at 16 threads (128 stripes). `writers`: how the workers
/// add to the started counts.
pub(crate) fn stripes(
    workers: usize,
    threads: usize,
    sizes: (u64, u64),
    writers: Writers,
) -> Arc<[StripeCell]> {
    let n = match threads {
        0 | 1 => 1,
        t => workers.clamp(1, 8 * t),
    };
    (0..n).map(|_| StripeCell::new(sizes, writers)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{Outcome, TimeoutKind};

    /// Events of one to three attempts, with every outcome mix, some cut short after a
    /// failed first attempt (a stop before the retry): the stripe's derived histograms equal
    /// a `LevelStats` recording every attempt and event directly, and so do all other figures.
    #[test]
    fn derived_histograms_equal_direct_recording() {
        let mut direct = LevelStats::default();
        // Two stripes, merged as a level's are: one sized for 1 s (less than some latencies),
        // one growing.
        let stripes = [
            StripeCell::new((1_000_000, 1_000_000), Writers::Threads),
            StripeCell::new((0, 0), Writers::Threads),
        ];
        let mut rng = hubload_rng::SplitMix64::for_event(11, 0);
        let mut next = |n: u64| rng.below(n);
        let mut t_us = 1_000_000u64;
        for _ in 0..5_000 {
            let attempts = 1 + next(3) as u32;
            let cut_short = attempts == 1 && next(10) == 0;
            let first_start = t_us;
            let mut ok = false;
            for n in 1..=attempts {
                let last = n == attempts;
                // A failing run now and then has latencies far above the accepted ones.
                let outcome = match (last, next(4)) {
                    (true, 0..=2) if !cut_short => Outcome::Accepted,
                    (_, 0) => Outcome::Http503,
                    _ => Outcome::Timeout(TimeoutKind::Response),
                };
                let us = match outcome {
                    Outcome::Accepted => 50 + next(5_000),
                    _ => 100 + next(3_000_000),
                };
                let span = AttemptSpan {
                    us,
                    corrected_us: None,
                    start_unix_us: t_us,
                    end_unix_us: t_us + us,
                    sec: 0,
                };
                t_us += us;
                ok = outcome == Outcome::Accepted;
                let a = Attempt {
                    outcome,
                    ..Attempt::CANCELLED
                };
                let whole = n == 1 && last && !cut_short;
                direct.record_span(&span, &a);
                stripes[t_us as usize % 2]
                    .lock()
                    .record_attempt(&span, &a, whole);
            }
            let event_us = t_us - first_start;
            direct.record_event_us(event_us, attempts, ok);
            stripes[first_start as usize % 2].lock().record_event(
                event_us,
                attempts,
                ok,
                attempts == 1 && !cut_short,
                false,
            );
        }
        let got = merged(&stripes);
        assert!(direct.accepted_latency.len() > 1_000 && direct.event_latency.len() == 5_000);
        assert!(direct.accepted_latency.max() < direct.latency.max() / 100);
        for (name, a, b) in [
            ("accepted", &got.accepted_latency, &direct.accepted_latency),
            ("event", &got.event_latency, &direct.event_latency),
            ("latency", &got.latency, &direct.latency),
        ] {
            // Both ways: hdrhistogram's `==` reads only the left side's buckets.
            assert_eq!(a, b, "{name}");
            assert_eq!(b, a, "{name}");
            let buckets = |h: &Histogram| {
                h.iter_recorded()
                    .map(|v| (v.value_iterated_to(), v.count_at_value()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(buckets(a), buckets(b), "{name}");
        }
        assert_eq!(got.counts, direct.counts);
        assert_eq!(
            (got.events, got.events_failed, got.retries),
            (direct.events, direct.events_failed, direct.retries)
        );
        assert_eq!(got.sum_us, direct.sum_us);
        // The timeline is the level's, not the stripes' (`stats::SharedLevel`).
        assert!(got.timeline.is_empty() && direct.timeline.len() == 1);
    }
}
