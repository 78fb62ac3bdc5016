//! The open model's schedule: when the k-th event *should* be sent (constant or Poisson, with ramp).
//!
//! Own code rather than `governor`: governor is a rate *limiter* (it answers "may I send now?"
//! and lets a late caller catch up in a burst), while an open-model load generator needs the
//! *intended* send time of every event, so latency can be measured from it (coordinated-omission
//! correction) and a send that cannot happen on time can be counted as dropped.

use std::str::FromStr;
use std::time::Duration;

use crate::workload::SplitMix64;

/// Inter-arrival law.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrivals {
    /// Evenly spaced: the k-th event at k / rate.
    Constant,
    /// Exponential inter-arrival times (a Poisson process), seeded.
    Poisson,
}

impl FromStr for Arrivals {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "constant" => Ok(Arrivals::Constant),
            "poisson" => Ok(Arrivals::Poisson),
            _ => Err(format!("`{s}` is not constant or poisson")),
        }
    }
}

/// Produces the intended offsets (from the start of measured time) of successive events.
#[derive(Debug, Clone)]
pub struct Schedule {
    rate: f64,
    ramp: f64,
    arrivals: Arrivals,
    rng: SplitMix64,
    k: u64,
    t: f64,
}

impl Schedule {
    /// A schedule at `rate` events/s, ramping linearly from 0 over `ramp`.
    pub fn new(rate: f64, ramp: Duration, arrivals: Arrivals, seed: u64) -> Self {
        Schedule {
            rate,
            ramp: ramp.as_secs_f64(),
            arrivals,
            rng: SplitMix64::for_event(seed, 0x9ace),
            k: 0,
            t: 0.0,
        }
    }

    /// Offset of the next event.
    pub fn next_offset(&mut self) -> Duration {
        let secs = match self.arrivals {
            Arrivals::Constant => self.constant_at(self.k),
            Arrivals::Poisson => {
                // Thinning-free approximation: draw the gap at the current instantaneous rate.
                let r = self.rate_at(self.t).max(self.rate * 1e-3);
                let u = self.rng.unit();
                self.t += -(1.0 - u).ln() / r;
                self.t
            }
        };
        self.k += 1;
        Duration::from_secs_f64(secs)
    }

    fn rate_at(&self, t: f64) -> f64 {
        if t < self.ramp {
            self.rate * t / self.ramp
        } else {
            self.rate
        }
    }

    /// Time of event k under a linear ramp: the cumulative count is `rate·t²/(2·ramp)` during
    /// the ramp and grows at `rate` after it.
    fn constant_at(&self, k: u64) -> f64 {
        let k = k as f64;
        let ramp_events = self.rate * self.ramp / 2.0;
        if k < ramp_events {
            (2.0 * k * self.ramp / self.rate).sqrt()
        } else {
            self.ramp + (k - ramp_events) / self.rate
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_rate_is_evenly_spaced() {
        let mut s = Schedule::new(200.0, Duration::ZERO, Arrivals::Constant, 1);
        let offs: Vec<Duration> = (0..5).map(|_| s.next_offset()).collect();
        let want: Vec<Duration> = (0..5).map(|k| Duration::from_millis(5 * k)).collect();
        assert_eq!(offs, want);
    }

    #[test]
    fn ramp_sends_half_as_many_events_during_the_ramp() {
        let mut s = Schedule::new(100.0, Duration::from_secs(10), Arrivals::Constant, 1);
        let in_ramp = std::iter::from_fn(|| Some(s.next_offset()))
            .take_while(|d| *d < Duration::from_secs(10))
            .count();
        assert_eq!(in_ramp, 500);
        // and the pace after the ramp is the full rate
        let a = s.next_offset();
        let b = s.next_offset();
        assert!(((b - a).as_secs_f64() - 0.01).abs() < 1e-9, "{:?}", b - a);
    }

    #[test]
    fn poisson_has_the_right_mean_rate() {
        let mut s = Schedule::new(1000.0, Duration::ZERO, Arrivals::Poisson, 7);
        let n = std::iter::from_fn(|| Some(s.next_offset()))
            .take_while(|d| *d < Duration::from_secs(20))
            .count();
        assert!((19_400..20_600).contains(&n), "{n}");
    }
}
