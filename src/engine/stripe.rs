//! The recording stripes of a level: where workers record, and what the live display reads.

use std::sync::{Arc, Mutex};

use crate::stats::LevelStats;

/// Where workers record: a fixed number of stripes, each a `LevelStats` behind its own mutex
/// (the progress display reads them too, `live.rs`). Worker `w` records into stripe `w % n`.
///
/// Why not one `LevelStats` per worker (the plain design): each holds four HdrHistograms of
/// up to ~100 KB, and the open model runs up to `--max-inflight` workers (thousands), so memory
/// would grow with concurrency. A stripe lock is taken once per attempt, never across an
/// await, and with several stripes per core it is almost never contended (~20 ns).
pub(crate) struct Stripe {
    pub stats: LevelStats,
}

/// Stripes for a level: enough that two runtime threads rarely meet on one.
pub(crate) fn stripes(workers: usize) -> Arc<[Mutex<Stripe>]> {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let n = workers.clamp(1, 8 * cores);
    (0..n)
        .map(|_| {
            Mutex::new(Stripe {
                stats: LevelStats::default(),
            })
        })
        .collect()
}
