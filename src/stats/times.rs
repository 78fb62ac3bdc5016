//! The instants of one attempt, as every recorder (stripe, per-second histograms) takes them.

use std::time::Instant;

use super::Clock;

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

/// The figures every recorder takes from an attempt's times, each worked out once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptSpan {
    /// Start to end, µs.
    pub us: u64,
    /// Intended start to end, µs (open model only).
    pub corrected_us: Option<u64>,
    /// Start, µs since the Unix epoch.
    pub start_unix_us: u64,
    /// End, µs since the Unix epoch.
    pub end_unix_us: u64,
    /// The second of the level the attempt ended in (whole seconds since `level_start`),
    /// capped at `MAX_SECS`.
    pub sec: usize,
}

/// The longest per-second list kept (timeline and per-second histograms): later attempts land
/// in the last second.
pub const MAX_SECS: usize = 24 * 3600;

impl AttemptTimes {
    /// The durations and wall-clock stamps of this attempt.
    pub fn span(&self, clock: &Clock) -> AttemptSpan {
        AttemptSpan {
            us: self.end.saturating_duration_since(self.start).as_micros() as u64,
            corrected_us: self
                .intended
                .map(|i| self.end.saturating_duration_since(i).as_micros() as u64),
            start_unix_us: clock.unix_us(self.start),
            end_unix_us: clock.unix_us(self.end),
            sec: (self
                .end
                .saturating_duration_since(self.level_start)
                .as_secs() as usize)
                .min(MAX_SECS),
        }
    }
}
