//! Subscriber behaviour knobs: answer latency, failures (500) and leaving (410), to exercise a hub's delivery rules.

use std::time::Duration;

use crate::workload::SplitMix64;

/// How every subscriber of the fleet answers deliveries. `Default` answers 2xx at once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Behaviour {
    /// Wait this long before answering each delivery.
    pub latency: Duration,
    /// Answer 500 to every N-th delivery a subscriber receives (0 = never).
    pub fail_every: u64,
    /// Answer 500 to this fraction of deliveries (0.0–1.0), picked deterministically.
    pub fail_fraction: f64,
    /// After acknowledging this many deliveries, answer 410 from then on (the subscriber is gone).
    pub gone_after: Option<u64>,
}

/// How one delivery is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// 200.
    Ok,
    /// 500: the hub should retry.
    Error,
    /// 410: the hub should remove the subscription.
    Gone,
}

impl Answer {
    /// The HTTP status.
    pub fn status(self) -> u16 {
        match self {
            Answer::Ok => 200,
            Answer::Error => 500,
            Answer::Gone => 410,
        }
    }
}

impl Behaviour {
    /// The answer to receipt number `receipt` (1-based) of subscriber `sub`, which has
    /// acknowledged `acked` deliveries so far.
    pub fn answer(&self, sub: u64, receipt: u64, acked: u64) -> Answer {
        if self.gone_after.is_some_and(|g| acked >= g) {
            return Answer::Gone;
        }
        if self.fail_every > 0 && receipt % self.fail_every == 0 {
            return Answer::Error;
        }
        if self.fail_fraction > 0.0
            && SplitMix64::for_event(sub, receipt).unit() < self.fail_fraction
        {
            return Answer::Error;
        }
        Answer::Ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knobs_pick_exactly() {
        let every3 = Behaviour {
            fail_every: 3,
            ..Behaviour::default()
        };
        let got: Vec<u16> = (1..=7).map(|r| every3.answer(0, r, 0).status()).collect();
        assert_eq!(got, [200, 200, 500, 200, 200, 500, 200]);
        let gone = Behaviour {
            gone_after: Some(2),
            ..Behaviour::default()
        };
        assert_eq!(gone.answer(0, 1, 1), Answer::Ok);
        assert_eq!(gone.answer(0, 3, 2), Answer::Gone);
        let half = Behaviour {
            fail_fraction: 0.5,
            ..Behaviour::default()
        };
        let fails = (1..=10_000)
            .filter(|r| half.answer(9, *r, 0) == Answer::Error)
            .count();
        assert!((4_700..5_300).contains(&fails), "{fails}");
        assert_eq!(Behaviour::default().answer(1, 1, 0), Answer::Ok);
    }
}
