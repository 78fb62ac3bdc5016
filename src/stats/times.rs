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

/// The instants of one attempt as nanoseconds since the run's [`Clock`] anchor, each read
/// once: what the engine's workers record from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptNs {
    /// When the level started (timeline origin).
    pub level_start: u64,
    /// The open model's intended start (`None` in the closed model).
    pub intended: Option<u64>,
    /// When the attempt started.
    pub start: u64,
    /// When it ended.
    pub end: u64,
}

/// An instant read once, with its nanoseconds since the run's [`Clock`] anchor (`None`
/// before the anchor, which a run never reads): what the engine stamps attempts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// The instant, for deadlines and the delivery tracker.
    pub at: Instant,
    /// Nanoseconds since the anchor.
    pub ns: Option<u64>,
}

impl Stamp {
    /// `at`, stamped against `clock`.
    pub fn of(clock: &Clock, at: Instant) -> Stamp {
        Stamp {
            at,
            ns: clock.ns(at),
        }
    }

    /// Now.
    pub fn now(clock: &Clock) -> Stamp {
        Stamp::of(clock, Instant::now())
    }

    /// Whole µs from `earlier` to this stamp (0 if `earlier` is later), as
    /// `Duration::as_micros` of the difference gives.
    pub fn us_since(&self, earlier: &Stamp) -> u64 {
        match (self.ns, earlier.ns) {
            (Some(a), Some(b)) => a.saturating_sub(b) / 1000,
            _ => self.at.saturating_duration_since(earlier.at).as_micros() as u64,
        }
    }

    /// Wall-clock µs since the Unix epoch, as [`Clock::unix_us`] gives.
    pub fn unix_us(&self, clock: &Clock) -> u64 {
        match self.ns {
            Some(ns) => clock.unix_us_of_ns(ns),
            None => clock.unix_us(self.at),
        }
    }
}

impl AttemptSpan {
    /// The figures of an attempt from its stamps: [`from_ns`](Self::from_ns) when every
    /// stamp has its nanoseconds (always, in a run), else [`AttemptTimes::span`].
    pub fn of_stamps(
        clock: &Clock,
        level_start: &Stamp,
        intended: Option<&Stamp>,
        start: &Stamp,
        end: &Stamp,
    ) -> AttemptSpan {
        match (level_start.ns, intended.map(|i| i.ns), start.ns, end.ns) {
            (Some(level_start), intended @ (None | Some(Some(_))), Some(start), Some(end)) => {
                AttemptSpan::from_ns(
                    clock,
                    AttemptNs {
                        level_start,
                        intended: intended.flatten(),
                        start,
                        end,
                    },
                )
            }
            // An instant before the anchor (only tests make one up).
            _ => AttemptTimes {
                level_start: level_start.at,
                intended: intended.map(|i| i.at),
                start: start.at,
                end: end.at,
            }
            .span_by_duration(clock),
        }
    }

    /// The figures of an attempt whose instants are `t` (ns since `clock`'s anchor): integer
    /// arithmetic only, with the same results as [`AttemptTimes::span`] of those instants
    /// (durations are floored to whole µs and seconds exactly as `Duration` does).
    pub fn from_ns(clock: &Clock, t: AttemptNs) -> AttemptSpan {
        AttemptSpan {
            us: t.end.saturating_sub(t.start) / 1000,
            corrected_us: t.intended.map(|i| t.end.saturating_sub(i) / 1000),
            start_unix_us: clock.unix_us_of_ns(t.start),
            end_unix_us: clock.unix_us_of_ns(t.end),
            sec: ((t.end.saturating_sub(t.level_start) / 1_000_000_000) as usize).min(MAX_SECS),
        }
    }
}

impl AttemptTimes {
    /// The durations and wall-clock stamps of this attempt.
    pub fn span(&self, clock: &Clock) -> AttemptSpan {
        let stamp = |t: Instant| Stamp::of(clock, t);
        AttemptSpan::of_stamps(
            clock,
            &stamp(self.level_start),
            self.intended.map(stamp).as_ref(),
            &stamp(self.start),
            &stamp(self.end),
        )
    }

    /// [`span`](Self::span) through `Duration` arithmetic on the instants themselves.
    fn span_by_duration(&self, clock: &Clock) -> AttemptSpan {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The integer path gives, for instants at and after the anchor, exactly the figures of
    /// `Duration` arithmetic on the instants, at the µs and second boundaries (±1 ns) and on
    /// random spans up to days; instants before the anchor take the `Duration` path.
    #[test]
    fn integer_figures_equal_duration_arithmetic() {
        let clock = Clock::new();
        let a = clock.anchor();
        let mut rng = hubload_rng::SplitMix64::for_event(13, 0);
        let mut next = |limit: u64| rng.below(limit);
        let mut offsets: Vec<u64> = vec![0, 1, 999, 1_000, 1_001, 999_999_999, 1_000_000_000];
        offsets.extend((0..2000).map(|_| next(3 * 86_400_000_000_000)));
        let mut checked = 0;
        for w in offsets.windows(4) {
            let mut v = w.to_vec();
            v.sort_unstable();
            let at = |ns: u64| a + Duration::from_nanos(ns);
            for intended in [None, Some(at(v[1]))] {
                let t = AttemptTimes {
                    level_start: at(v[0]),
                    intended,
                    start: at(v[2]),
                    end: at(v[3]),
                };
                assert_eq!(t.span(&clock), t.span_by_duration(&clock), "{v:?}");
                checked += 1;
            }
        }
        assert_eq!(checked, 2 * (offsets.len() - 3));
        // Before the anchor: the stamps saturate as `unix_us` does.
        let early = AttemptTimes {
            level_start: a - Duration::from_secs(2),
            intended: None,
            start: a - Duration::from_micros(1500),
            end: a + Duration::from_micros(10),
        };
        let s = early.span(&clock);
        assert_eq!(s, early.span_by_duration(&clock));
        assert_eq!((s.us, s.sec), (1510, 2));
    }
}
