//! Maps monotonic `Instant`s onto wall-clock µs since the Unix epoch, so stats from separate
//! processes (shards) can share a time axis while durations still come from the monotonic clock.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// An anchor pairing one `Instant` with the wall clock read at the same moment.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    anchor: Instant,
    anchor_unix_us: u64,
}

impl Clock {
    /// Anchor now.
    pub fn new() -> Self {
        let anchor = Instant::now();
        let anchor_unix_us = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0);
        Clock {
            anchor,
            anchor_unix_us,
        }
    }

    /// Wall-clock µs since the Unix epoch for `t`, measured monotonically from the anchor.
    pub fn unix_us(&self, t: Instant) -> u64 {
        match t.checked_duration_since(self.anchor) {
            Some(d) => self.anchor_unix_us + d.as_micros() as u64,
            None => self
                .anchor_unix_us
                .saturating_sub(self.anchor.duration_since(t).as_micros() as u64),
        }
    }

    /// Nanoseconds from the anchor to `t`, or `None` for a `t` before the anchor. The engine
    /// reads each instant of an attempt once and works out every figure of it from these
    /// integers ([`AttemptSpan::from_ns`](super::AttemptSpan::from_ns)): one clock
    /// subtraction per instant instead of one per figure.
    pub fn ns(&self, t: Instant) -> Option<u64> {
        t.checked_duration_since(self.anchor)
            .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }

    /// Wall-clock µs since the Unix epoch for `ns` nanoseconds after the anchor: the same as
    /// [`unix_us`](Self::unix_us) of that instant.
    pub fn unix_us_of_ns(&self, ns: u64) -> u64 {
        self.anchor_unix_us + ns / 1000
    }

    /// The `Instant` that corresponds to the anchor.
    pub fn anchor(&self) -> Instant {
        self.anchor
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}
