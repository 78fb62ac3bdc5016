//! Test helper for the judge's unit tests: level statistics from known latencies.

use std::time::Duration;

use crate::result::{Attempt, Outcome};
use crate::stats::{AttemptTimes, Clock, LevelStats};

/// Statistics of `times` attempts of `latency` ending in `outcome`, for each triple.
pub(crate) fn stats(samples: &[(Duration, Outcome, u64)]) -> LevelStats {
    let clock = Clock::new();
    let t0 = clock.anchor();
    let mut s = LevelStats::default();
    for &(latency, outcome, times) in samples {
        let a = Attempt {
            server_timing: crate::result::ServerTimings::NONE,
            retry_after: crate::result::RetryAfter::NONE,
            outcome,
            status: 200,
            bytes_sent: 1,
            bytes_received: 1,
        };
        let t = AttemptTimes {
            level_start: t0,
            intended: Some(t0),
            start: t0,
            end: t0 + latency,
        };
        for _ in 0..times {
            s.record_attempt(&clock, t, &a, 0);
        }
    }
    s
}
