//! A per-second count of one level shared by every recorder: a fixed array of atomics, so a
//! long level's series costs nothing more as it runs (the deliveries owed and delivered).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

/// Seconds a level's series holds (18 h; later seconds count in the last one): 512 KiB, made
/// at first use and written at once, so it is resident from the start rather than growing.
pub const SERIES_SECONDS: usize = 1 << 16;

/// Counts per second since a level's origin, added to from many threads without a lock.
///
/// Why not a `Vec` per recorder (as the subscribers' `delivered` series was): each grew by 8 B
/// a second per subscriber, doubling its capacity as it went, so a long level's memory grew
/// with its length times the subscribers (docs/soak.md).
#[derive(Debug, Default)]
pub struct SecondSeries {
    counts: OnceLock<Box<[AtomicU64]>>,
}

impl SecondSeries {
    fn counts(&self) -> &[AtomicU64] {
        self.counts
            .get_or_init(|| (0..SERIES_SECONDS).map(|_| AtomicU64::new(0)).collect())
    }

    /// Add `n` to second `s` (the last second takes everything later).
    pub fn add(&self, s: usize, n: u64) {
        self.counts()[s.min(SERIES_SECONDS - 1)].fetch_add(n, Relaxed);
    }

    /// Every second back to 0 (between levels: nothing may add meanwhile).
    pub fn reset(&self) {
        self.counts().iter().for_each(|c| c.store(0, Relaxed));
    }

    /// The counts up to the last second with any (empty when none).
    pub fn to_vec(&self) -> Vec<u64> {
        let Some(counts) = self.counts.get() else {
            return Vec::new();
        };
        let used = counts
            .iter()
            .rposition(|c| c.load(Relaxed) > 0)
            .map_or(0, |i| i + 1);
        counts[..used].iter().map(|c| c.load(Relaxed)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_up_to_the_last_second_with_any_and_caps_the_rest() {
        let s = SecondSeries::default();
        assert!(s.to_vec().is_empty(), "nothing made before first use");
        s.add(0, 2);
        s.add(3, 1);
        s.add(0, 1);
        assert_eq!(s.to_vec(), [3, 0, 0, 1]);
        s.add(SERIES_SECONDS + 7, 5);
        assert_eq!(s.to_vec().len(), SERIES_SECONDS);
        assert_eq!(s.to_vec()[SERIES_SECONDS - 1], 5);
        s.reset();
        assert!(s.to_vec().is_empty());
    }
}
