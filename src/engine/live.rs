//! Live numbers for the progress display: workers flush small deltas here a few times a second.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::result::Class;
use crate::stats::{new_histogram, record, Counts, Histogram};

/// How often a worker flushes into [`Live`].
pub(crate) const FLUSH_EVERY: Duration = Duration::from_millis(200);

/// Counts and a latency histogram for the level in progress. Shared; written in batches.
#[derive(Debug)]
pub struct Live {
    counts: [AtomicU64; Class::COUNT],
    hist: Mutex<Histogram>,
}

impl Default for Live {
    fn default() -> Self {
        Live {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            hist: Mutex::new(new_histogram()),
        }
    }
}

impl Live {
    /// Forget the previous level.
    pub fn reset(&self) {
        self.counts
            .iter()
            .for_each(|c| c.store(0, Ordering::Relaxed));
        self.hist.lock().expect("live histogram").reset();
    }

    /// Counts so far and the p99 latency so far (µs).
    pub fn snapshot(&self) -> (Counts, u64) {
        let mut c = Counts::default();
        for (i, a) in self.counts.iter().enumerate() {
            c.0[i] = a.load(Ordering::Relaxed);
        }
        let p99 = self
            .hist
            .lock()
            .expect("live histogram")
            .value_at_quantile(0.99);
        (c, p99)
    }

    fn flush(&self, counts: &Counts, hist: &Histogram) {
        for (a, n) in self.counts.iter().zip(counts.0.iter()) {
            if *n > 0 {
                a.fetch_add(*n, Ordering::Relaxed);
            }
        }
        let _ = self.hist.lock().expect("live histogram").add(hist);
    }
}

/// A worker's unflushed delta.
#[derive(Debug)]
pub(crate) struct LiveDelta {
    counts: Counts,
    hist: Histogram,
    last: Instant,
}

impl LiveDelta {
    pub fn new() -> Self {
        LiveDelta {
            counts: Counts::default(),
            hist: new_histogram(),
            last: Instant::now(),
        }
    }

    /// Note one attempt; flush when due.
    pub fn note(&mut self, live: &Live, class: Class, us: u64, now: Instant) {
        self.counts.bump(class);
        record(&mut self.hist, us);
        if now.duration_since(self.last) >= FLUSH_EVERY {
            self.flush(live, now);
        }
    }

    pub fn flush(&mut self, live: &Live, now: Instant) {
        live.flush(&self.counts, &self.hist);
        self.counts = Counts::default();
        self.hist.reset();
        self.last = now;
    }
}
