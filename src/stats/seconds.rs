//! Per-second state of a level (the `latency.hlog` per-second intervals and the `timeline`):
//! recorded by every worker through a few shared slots, kept encoded once a second closes.
//!
//! Second `s` holds the attempts that *ended* in `[origin + s, origin + s + 1)` from the
//! level's measured start, in the level's own histogram layout, so seconds add up exactly to
//! the level and shards add second by second. Memory is bounded by the seconds, never by the
//! request count: at most [`OPEN_SECONDS`] open histograms per slot plus [`GRACE`] + 1 being
//! folded; closed seconds go to a [`SecondSpill`] (docs/reports.md, docs/soak.md).

use std::sync::Mutex;
use std::time::Instant;

use super::second_list::SecondHistograms;
use super::second_spill::SecondSpill;
use super::times::MAX_SECS;
use super::{
    new_histogram, record, to_base64, AttemptSpan, AttemptTimes, Clock, Histogram,
    ServerTimingStats, TimelineBucket,
};
use crate::result::ServerTimings;

/// Seconds a slot keeps open before folding the oldest into the level's list.
pub const OPEN_SECONDS: usize = 2;
/// Seconds a folded second stays a full histogram (other slots may still fold into it) before
/// it is encoded.
pub const GRACE: usize = 2;

/// One second in progress in a slot.
#[derive(Debug)]
struct Open {
    sec: usize,
    bucket: TimelineBucket,
    latency: Histogram,
    corrected: Option<Histogram>,
}

/// Seconds closed by some slot, not yet encoded, and the encoded list.
#[derive(Debug, Default)]
struct Folded {
    pending: Vec<Open>,
    newest: usize,
    done: SecondSpill,
}

/// `h` encoded, `""` when it holds nothing.
fn encoded(h: &Histogram) -> String {
    if h.is_empty() {
        String::new()
    } else {
        to_base64(h).expect("hubload histograms serialize")
    }
}

impl Folded {
    fn encode(&mut self, o: Open) {
        let corrected = o.corrected.as_ref().map(encoded);
        self.done
            .put(o.sec, o.bucket, encoded(&o.latency), corrected);
    }

    fn fold(&mut self, o: Open) {
        self.newest = self.newest.max(o.sec);
        match self.pending.iter_mut().find(|p| p.sec == o.sec) {
            Some(p) => {
                p.bucket += &o.bucket;
                p.latency.add(&o.latency).expect("same histogram layout");
                if let (Some(a), Some(b)) = (&mut p.corrected, &o.corrected) {
                    a.add(b).expect("same histogram layout");
                }
            }
            None => self.pending.push(o),
        }
        let newest = self.newest;
        let (old, keep): (Vec<Open>, Vec<Open>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|p| p.sec + GRACE < newest);
        self.pending = keep;
        for p in old {
            self.encode(p);
        }
    }
}

/// One slot: its open seconds, and the `Server-Timing` durations of the attempts recorded
/// into it over the whole level.
#[derive(Debug, Default)]
struct Slot {
    open: Vec<Open>,
    /// Kept per slot (at most 8), not per recording stripe (8 per thread): its histograms
    /// grow to the largest duration each has seen, and 16 copies of each on 2 threads widened
    /// one after the other, the largest heap growth of a long level (docs/soak.md).
    server_timing: ServerTimingStats,
}

/// Where the workers of one level record per-second histograms: a few slots (worker `w` uses
/// slot `w % slots`), each a lock around its open seconds, taken once per attempt.
#[derive(Debug)]
pub struct SecondsRecorder {
    level_start: Instant,
    origin_us: u64,
    slots: Box<[Mutex<Slot>]>,
    folded: Mutex<Folded>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl SecondsRecorder {
    /// A recorder for a level whose measured time starts at `level_start`, with `slots` slots.
    pub fn new(clock: &Clock, level_start: Instant, slots: usize) -> Self {
        SecondsRecorder {
            level_start,
            origin_us: clock.unix_us(level_start),
            slots: (0..slots.max(1)).map(|_| Mutex::default()).collect(),
            folded: Mutex::new(Folded::default()),
        }
    }

    /// Slots for workers on `threads` runtime threads: one per thread, at most 8 (a slot per
    /// thread keeps them from contending; more would only spread the histograms' hot buckets).
    pub fn slots_for(threads: usize) -> usize {
        threads.clamp(1, 8)
    }

    /// Record one attempt, not an error, into slot `slot % slots`.
    pub fn record(&self, slot: usize, t: &AttemptTimes) {
        let sec =
            (t.end.saturating_duration_since(self.level_start).as_secs() as usize).min(MAX_SECS);
        let us = t.end.saturating_duration_since(t.start).as_micros() as u64;
        let corrected = t
            .intended
            .map(|i| t.end.saturating_duration_since(i).as_micros() as u64);
        self.record_at(slot, sec, us, corrected, false, &ServerTimings::NONE);
    }

    /// [`record`](Self::record) from the attempt's [`AttemptSpan`], whose second counts from
    /// this recorder's `level_start` (the engine gives both the level's measured start);
    /// `error`: the attempt was not accepted (the timeline's `errors`); `server_timing`: what
    /// its response declared.
    pub fn record_span(
        &self,
        slot: usize,
        t: &AttemptSpan,
        error: bool,
        server_timing: &ServerTimings,
    ) {
        self.record_at(slot, t.sec, t.us, t.corrected_us, error, server_timing);
    }

    fn record_at(
        &self,
        slot: usize,
        sec: usize,
        us: u64,
        corrected: Option<u64>,
        error: bool,
        server_timing: &ServerTimings,
    ) {
        let evicted = {
            let mut slot = lock(&self.slots[slot % self.slots.len()]);
            if !server_timing.is_empty() {
                slot.server_timing.record(server_timing);
            }
            let open = &mut slot.open;
            let i = match open.iter().position(|o| o.sec >= sec) {
                Some(i) if open[i].sec == sec => i,
                found => {
                    let i = found.unwrap_or(open.len());
                    let o = Open {
                        sec,
                        bucket: TimelineBucket::default(),
                        latency: new_histogram(),
                        corrected: corrected.map(|_| new_histogram()),
                    };
                    open.insert(i, o);
                    i
                }
            };
            open[i].bucket.record(us, error);
            record(&mut open[i].latency, us);
            if let (Some(h), Some(c)) = (&mut open[i].corrected, corrected) {
                record(h, c);
            }
            (open.len() > OPEN_SECONDS).then(|| open.remove(0))
        };
        if let Some(o) = evicted {
            lock(&self.folded).fold(o);
        }
    }

    /// Everything recorded: the histograms encoded, and the timeline (one bucket per second
    /// up to the last with an attempt). Call once the workers are done.
    pub fn finish(&self) -> (SecondHistograms, Vec<TimelineBucket>) {
        let mut f = lock(&self.folded);
        for slot in self.slots.iter() {
            for o in std::mem::take(&mut lock(slot).open) {
                f.fold(o);
            }
        }
        for p in std::mem::take(&mut f.pending) {
            f.encode(p);
        }
        let (mut out, timeline) = f.done.finish();
        if !out.is_empty() {
            out.origin_us = Some(self.origin_us);
        }
        (out, timeline)
    }

    /// The `Server-Timing` durations of every slot, added up (and the slots' emptied).
    pub fn take_server_timing(&self) -> ServerTimingStats {
        let mut all = ServerTimingStats::default();
        for slot in self.slots.iter() {
            all += &std::mem::take(&mut lock(slot).server_timing);
        }
        all
    }

    /// Full histograms held right now (open in slots plus pending), for the memory bound.
    pub fn live_histograms(&self) -> usize {
        let count = |o: &Open| 1 + usize::from(o.corrected.is_some());
        let open: usize = self
            .slots
            .iter()
            .map(|s| lock(s).open.iter().map(count).sum::<usize>())
            .sum();
        open + lock(&self.folded).pending.iter().map(count).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::from_base64;
    use std::time::Duration;

    fn times(
        t0: Instant,
        end_us: u64,
        lat_us: u64,
        intended_early_us: Option<u64>,
    ) -> AttemptTimes {
        let end = t0 + Duration::from_micros(end_us);
        let start = end - Duration::from_micros(lat_us);
        AttemptTimes {
            level_start: t0,
            intended: intended_early_us.map(|e| start - Duration::from_micros(e)),
            start,
            end,
        }
    }

    /// Eight threads (more than the slots) record 10 s of attempts, some recorded late (a
    /// straggler of an already-folded second): every second holds exactly its attempts, the
    /// seconds add up to one histogram of everything, and the live state stays bounded.
    #[test]
    fn seconds_hold_exactly_their_attempts_and_add_up_to_the_level() {
        let clock = Clock::new();
        let t0 = clock.anchor() + Duration::from_secs(1);
        let rec = SecondsRecorder::new(&clock, t0, 3);
        let n = 20_000u64;
        let at = |i: u64| {
            // Ends spread over 10 s; every 97th is recorded out of order, 3 s late.
            let end = i * 500 + 1;
            let lat = 50 + (i * 7919) % 30_000;
            (end, lat)
        };
        let mut whole = new_histogram();
        let mut whole_corrected = new_histogram();
        let mut per_sec = [0u64; 10];
        let mut timeline = [TimelineBucket::default(); 10];
        for i in 0..n {
            let (end, lat) = at(i);
            record(&mut whole, lat);
            record(&mut whole_corrected, lat + i % 100);
            per_sec[(end / 1_000_000) as usize] += 1;
            timeline[(end / 1_000_000) as usize].record(lat, false);
        }
        let max_live = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for w in 0..8u64 {
                let (rec, max_live) = (&rec, &max_live);
                s.spawn(move || {
                    let mine: Vec<u64> = (w..n).step_by(8).collect();
                    let (late, on_time): (Vec<u64>, Vec<u64>) =
                        mine.iter().partition(|i| *i % 97 == 0);
                    let mut order = on_time;
                    // Late ones go in 6,000 attempts (3 s) after their time.
                    for l in late {
                        let pos = order
                            .iter()
                            .position(|i| *i > l + 6_000)
                            .unwrap_or(order.len());
                        order.insert(pos, l);
                    }
                    for i in order {
                        let (end, lat) = at(i);
                        rec.record(w as usize, &times(t0, end, lat, Some(i % 100)));
                        max_live
                            .fetch_max(rec.live_histograms(), std::sync::atomic::Ordering::Relaxed);
                    }
                });
            }
        });
        let (out, got_timeline) = rec.finish();
        assert_eq!(got_timeline, timeline, "one timeline, stragglers folded in");
        assert_eq!(out.origin_us, Some(clock.unix_us(t0)));
        assert_eq!((out.latency.len(), out.corrected.len()), (10, 10));
        let mut sum = new_histogram();
        let mut sum_corrected = new_histogram();
        for (s, (b64, c64)) in out.latency.iter().zip(&out.corrected).enumerate() {
            let h = from_base64(b64).unwrap();
            assert_eq!(h.len(), per_sec[s], "second {s}");
            sum.add(&h).unwrap();
            sum_corrected.add(from_base64(c64).unwrap()).unwrap();
        }
        assert_eq!(sum, whole);
        assert_eq!(sum_corrected, whole_corrected);
        // 3 slots × 2 open seconds + 3 pending, raw and corrected.
        let bound = 2 * (3 * OPEN_SECONDS + GRACE + 1);
        let seen = max_live.into_inner();
        assert!(seen <= bound, "{seen} live histograms > {bound}");
        assert_eq!(rec.live_histograms(), 0);
        // Merging two halves second by second equals the whole.
        let mut a = SecondHistograms {
            latency: out.latency[..4].to_vec(),
            ..out.clone()
        };
        let b = SecondHistograms {
            latency: out.latency[4..]
                .iter()
                .fold(vec![String::new(); 4], |mut v, x| {
                    v.push(x.clone());
                    v
                }),
            corrected: vec![],
            origin_us: out.origin_us.map(|o| o + 5),
        };
        a.corrected.clear();
        a += &b;
        assert_eq!(a.latency, out.latency);
        assert_eq!(a.origin_us, out.origin_us);
        assert!(a.validate().is_ok());
        a.latency[3] = "!!".into();
        assert!(a
            .validate()
            .unwrap_err()
            .starts_with("latency second 3: not base64"));
    }

    /// What one closed second costs, encoded: the figure docs/reports.md gives.
    #[test]
    fn an_encoded_second_takes_hundreds_of_bytes_to_a_few_kilobytes() {
        let clock = Clock::new();
        let t0 = clock.anchor();
        for (n, spread) in [
            (100u64, 1_000u64),
            (1_000, 20_000),
            (10_000, 200_000),
            (100_000, 5_000_000),
        ] {
            let rec = SecondsRecorder::new(&clock, t0, 1);
            for i in 0..n {
                // A long-tailed spread: most near 1 ms, some up to `spread` µs.
                let lat = 800 + (i * 7919 % 1000) * (i * 104_729 % spread) / 1000;
                rec.record(0, &times(t0, 100, lat.max(1), None));
            }
            let (out, _) = rec.finish();
            let bytes = out.latency[0].len();
            eprintln!("{n} attempts up to {spread} µs: {bytes} B");
            assert!((100..10_000).contains(&bytes), "{n}: {bytes} B");
        }
    }
}
