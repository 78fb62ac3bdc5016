//! Throttling like Azure's tiers: Standard's 1,000 credits per second per namespace (a
//! message operation costs 1, a management operation 10), or Premium's throughput per
//! messaging unit. A token bucket refilled continuously, one per emulator. The tier also sets
//! the largest message a link takes.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Credits per second of a Standard namespace (Microsoft's "Service Bus throttling" page).
pub const STANDARD_CREDITS_PER_SEC: f64 = 1_000.0;
/// Credits a message operation (send, receive, peek: per message) costs on Standard.
pub const MESSAGE_OP_CREDITS: f64 = 1.0;
/// Credits a management operation costs on Standard.
pub const MANAGEMENT_OP_CREDITS: f64 = 10.0;
/// Bytes per second per Premium messaging unit. Microsoft publishes no fixed figure (its
/// Premium page says a unit's resources are dedicated and grow linearly with the count);
/// 4 MiB/s is this emulator's assumption, settable with `--mu-bytes-per-sec`.
pub const DEFAULT_MU_BYTES_PER_SEC: u64 = 4 * 1024 * 1024;
/// The messaging-unit counts Azure sells.
pub const MESSAGING_UNITS: [u32; 5] = [1, 2, 4, 8, 16];

/// Azure's description of a throttled request (error code 50009).
pub const SERVER_BUSY_DESCRIPTION: &str = "The request was terminated because the entity is being throttled. Error code : 50009. Please wait 2 seconds and try again.";

/// Which tier the emulator plays.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tier {
    /// No budget (the default: only `--throttle-every` / `--throttle-ratio` throttle).
    Unlimited,
    /// Standard: credits per second per namespace.
    Standard,
    /// Premium: bytes per second, `units` × `bytes_per_unit`.
    Premium {
        /// Messaging units (1, 2, 4, 8 or 16).
        units: u32,
        /// Bytes per second each unit carries.
        bytes_per_unit: u64,
    },
}

/// Largest message Basic and Standard take (Microsoft's "Service Bus quotas": 256 KB).
pub const STANDARD_MAX_MESSAGE_SIZE: u64 = 256 * 1024;
/// Largest message a Premium entity can be set to take (Microsoft's "Service Bus quotas":
/// 100 MB; an entity's default there is 1 MB). The emulator's Premium links take this much.
pub const PREMIUM_MAX_MESSAGE_SIZE: u64 = 100 * 1024 * 1024;

impl Tier {
    /// The `max-message-size` the emulator's links advertise when playing this tier: 256 KiB
    /// (Basic and Standard, and the emulator without a tier), or Premium's 100 MiB.
    pub fn max_message_size(&self) -> u64 {
        match self {
            Tier::Premium { .. } => PREMIUM_MAX_MESSAGE_SIZE,
            Tier::Unlimited | Tier::Standard => STANDARD_MAX_MESSAGE_SIZE,
        }
    }
}

/// What an operation costs.
#[derive(Debug, Clone, Copy)]
pub enum Cost {
    /// `n` message operations carrying `bytes` body bytes.
    Messages {
        /// Messages (each filter evaluation of a topic send counts as one more on Standard).
        n: u64,
        /// Bytes, for Premium.
        bytes: u64,
    },
    /// One management operation.
    Management,
}

/// The namespace's bucket.
#[derive(Debug)]
pub struct Budget {
    tier: Tier,
    state: Mutex<(f64, Instant)>,
}

impl Budget {
    /// A full bucket (one second's worth).
    pub fn new(tier: Tier) -> Self {
        let b = Budget {
            tier,
            state: Mutex::new((0.0, Instant::now())),
        };
        b.state.lock().expect("budget lock").0 = b.per_sec();
        b
    }

    /// The tier.
    pub fn tier(&self) -> Tier {
        self.tier
    }

    fn per_sec(&self) -> f64 {
        match self.tier {
            Tier::Unlimited => f64::INFINITY,
            Tier::Standard => STANDARD_CREDITS_PER_SEC,
            Tier::Premium {
                units,
                bytes_per_unit,
            } => f64::from(units) * bytes_per_unit as f64,
        }
    }

    fn units(&self, cost: Cost) -> f64 {
        match (self.tier, cost) {
            (Tier::Unlimited, _) => 0.0,
            (Tier::Standard, Cost::Messages { n, .. }) => n as f64 * MESSAGE_OP_CREDITS,
            (Tier::Standard, Cost::Management) => MANAGEMENT_OP_CREDITS,
            (Tier::Premium { .. }, Cost::Messages { bytes, .. }) => bytes as f64,
            (Tier::Premium { .. }, Cost::Management) => 0.0,
        }
    }

    /// Take `cost` from the bucket at `now`: `Ok` if it was there, else `Err(wait)`, how long
    /// until it would be (nothing is taken).
    pub fn take_at(&self, cost: Cost, now: Instant) -> Result<(), Duration> {
        let need = self.units(cost);
        if need == 0.0 {
            return Ok(());
        }
        let rate = self.per_sec();
        let mut g = self.state.lock().expect("budget lock");
        let (level, at) = *g;
        let level =
            (level + now.saturating_duration_since(at).as_secs_f64() * rate).min(rate.max(need));
        if level >= need {
            *g = (level - need, now);
            Ok(())
        } else {
            *g = (level, now);
            Err(Duration::from_secs_f64((need - level) / rate))
        }
    }

    /// [`Self::take_at`] now.
    pub fn take(&self, cost: Cost) -> Result<(), Duration> {
        self.take_at(cost, Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_allows_a_thousand_credits_a_second() {
        let b = Budget::new(Tier::Standard);
        let t0 = Instant::now();
        let one = Cost::Messages { n: 1, bytes: 100 };
        let ok = (0..1_500).filter(|_| b.take_at(one, t0).is_ok()).count();
        assert_eq!(ok, 1_000);
        // Half a second later, 500 more credits; a management op costs 10 of them.
        let t1 = t0 + Duration::from_millis(500);
        assert!(b.take_at(Cost::Management, t1).is_ok());
        let ok = (0..1_000).filter(|_| b.take_at(one, t1).is_ok()).count();
        assert_eq!(ok, 490);
        assert_eq!(b.take_at(one, t1), Err(Duration::from_millis(1)));
    }

    #[test]
    fn premium_is_bytes_per_unit() {
        let b = Budget::new(Tier::Premium {
            units: 2,
            bytes_per_unit: 1_000,
        });
        let t0 = Instant::now();
        let kb = Cost::Messages { n: 1, bytes: 1_000 };
        assert_eq!((0..5).filter(|_| b.take_at(kb, t0).is_ok()).count(), 2);
        assert!(b.take_at(Cost::Management, t0).is_ok());
    }

    #[test]
    fn unlimited_never_refuses() {
        let b = Budget::new(Tier::Unlimited);
        assert!((0..10_000).all(|_| b.take(Cost::Management).is_ok()));
    }
}
