//! The instants of one attempt, as every recorder (stripe, per-second histograms) takes them.

use std::time::Instant;

/// Times of one attempt.
#[derive(Debug, Clone, Copy)]
pub struct AttemptTimes {
    /// When the level started (timeline origin).
    pub level_start: Instant,
    /// When the attempt should have started: the open model's schedule. `None` in the closed
    /// model, where there is no schedule and corrected latency is the raw latency (not recorded
    /// twice).
    pub intended: Option<Instant>,
    /// When it actually started.
    pub start: Instant,
    /// When it ended.
    pub end: Instant,
}
