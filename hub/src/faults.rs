//! Proxy-style fault settings and the pure decision of which fault hits which request.
//!
//! The faults are those a proxy or gateway in front of a real hub produces (docs/hub.md):
//! 503 over an in-flight limit, 502s, connection resets, extra latency, stall windows, and a
//! "broker" latency inside publish. Decisions are deterministic: every request gets a sequence
//! number (restarting at 1 whenever the settings change) and the ratios draw from a hash of
//! (seed, sequence number), so a run with the same settings and order is reproducible.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Fault settings; the default injects nothing. Settable by flags, a TOML file, and at runtime
/// with `PUT /admin/faults` (JSON).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct FaultConfig {
    /// Requests beyond this many in flight are answered 503 at once.
    pub max_inflight: Option<u64>,
    /// Fraction (0..=1) of requests answered 502.
    pub fail_502_ratio: f64,
    /// Every Nth request is answered 502 (checked before the ratio).
    pub fail_502_every: Option<u64>,
    /// Fraction (0..=1) of requests answered 503.
    pub fail_503_ratio: f64,
    /// Every Nth request is answered 503.
    pub fail_503_every: Option<u64>,
    /// Fraction (0..=1) of requests whose connection is reset (TCP RST, no answer).
    pub reset_ratio: f64,
    /// Every Nth request has its connection reset.
    pub reset_every: Option<u64>,
    /// Fixed extra latency before answering, in ms.
    pub latency_ms: u64,
    /// Extra random latency, uniform in 0..jitter_ms, in ms.
    pub jitter_ms: u64,
    /// Latency inside publish before it answers (the synchronous broker round trip), in ms.
    pub broker_latency_ms: u64,
    /// Periodic stalls: a stall of `stall_for_ms` starts every `stall_every_ms` (at k·every, k ≥ 1).
    pub stall_every_ms: Option<u64>,
    /// Length of each periodic stall, in ms.
    pub stall_for_ms: u64,
    /// Explicit stall windows `[start_ms, end_ms)` relative to hub start.
    pub stall_windows: Vec<[u64; 2]>,
    /// Seed for the ratio draws and the jitter.
    pub seed: u64,
    /// When not empty, every fault above hits only requests whose `hub.topic` begins with one
    /// of these (`tenant0007.` for one tenant's topics); the others pass untouched and take
    /// no sequence number. Empty (the default): every request.
    pub topic_prefixes: Vec<String>,
}

/// A setting that makes no sense, named by its field.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FaultError {
    /// A ratio outside 0..=1.
    #[error("faults.{0}: must be between 0 and 1, got {1}")]
    Ratio(&'static str, f64),
    /// An `every` of 0.
    #[error("faults.{0}: must be at least 1")]
    Zero(&'static str),
    /// A stall window that ends before it starts.
    #[error("faults.stall_windows: window [{0}, {1}) ends before it starts")]
    Window(u64, u64),
    /// An empty topic prefix (it would match every topic).
    #[error(
        "faults.topic_prefixes: an empty prefix matches every topic (leave the list empty instead)"
    )]
    EmptyPrefix,
}

/// What the fault layer does with one request before the hub logic sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Answer 502 now.
    Fail502,
    /// Answer 503 now.
    Fail503,
    /// Reset the connection now.
    Reset,
    /// Pass on to the hub after `delay`.
    Pass {
        /// Fixed latency plus jitter.
        delay: Duration,
    },
}

impl FaultConfig {
    /// Check every field; the first bad one is named.
    pub fn validate(&self) -> Result<(), FaultError> {
        for (name, r) in [
            ("fail_502_ratio", self.fail_502_ratio),
            ("fail_503_ratio", self.fail_503_ratio),
            ("reset_ratio", self.reset_ratio),
        ] {
            if !(0.0..=1.0).contains(&r) {
                return Err(FaultError::Ratio(name, r));
            }
        }
        for (name, e) in [
            ("max_inflight", self.max_inflight),
            ("fail_502_every", self.fail_502_every),
            ("fail_503_every", self.fail_503_every),
            ("reset_every", self.reset_every),
            ("stall_every_ms", self.stall_every_ms),
        ] {
            if e == Some(0) {
                return Err(FaultError::Zero(name));
            }
        }
        if let Some(&[a, b]) = self.stall_windows.iter().find(|[a, b]| b < a) {
            return Err(FaultError::Window(a, b));
        }
        if self.topic_prefixes.iter().any(String::is_empty) {
            return Err(FaultError::EmptyPrefix);
        }
        Ok(())
    }

    /// True when any fault could touch a request (the hot path skips the layer otherwise).
    pub fn is_active(&self) -> bool {
        *self
            != FaultConfig {
                broker_latency_ms: self.broker_latency_ms,
                seed: self.seed,
                topic_prefixes: self.topic_prefixes.clone(),
                ..FaultConfig::default()
            }
    }

    /// Whether the faults apply to a request for `topic` (`None`: the request names none).
    pub fn scopes(&self, topic: Option<&str>) -> bool {
        self.topic_prefixes.is_empty()
            || topic.is_some_and(|t| {
                self.topic_prefixes
                    .iter()
                    .any(|p| t.starts_with(p.as_str()))
            })
    }

    /// The action for request number `seq` (1-based since the settings were set) when
    /// `inflight` requests are in flight, this one included. Pure.
    pub fn decide(&self, seq: u64, inflight: u64) -> Action {
        if self.max_inflight.is_some_and(|m| inflight > m) {
            return Action::Fail503;
        }
        let hit = |every: Option<u64>, ratio: f64, stream: u64| {
            every.is_some_and(|n| n > 0 && seq % n == 0)
                || (ratio > 0.0 && self.draw(seq, stream) < ratio)
        };
        if hit(self.fail_502_every, self.fail_502_ratio, 1) {
            return Action::Fail502;
        }
        if hit(self.fail_503_every, self.fail_503_ratio, 2) {
            return Action::Fail503;
        }
        if hit(self.reset_every, self.reset_ratio, 3) {
            return Action::Reset;
        }
        let jitter = if self.jitter_ms > 0 {
            (self.draw(seq, 4) * self.jitter_ms as f64) as u64
        } else {
            0
        };
        Action::Pass {
            delay: Duration::from_millis(self.latency_ms + jitter),
        }
    }

    /// If `at_ms` (since hub start) is inside a stall window, the time at which it ends.
    pub fn stall_end(&self, at_ms: u64) -> Option<u64> {
        let periodic = self.stall_every_ms.filter(|&e| e > 0).and_then(|every| {
            let k = at_ms / every;
            let start = k * every;
            (k >= 1 && at_ms < start + self.stall_for_ms).then_some(start + self.stall_for_ms)
        });
        let explicit = self
            .stall_windows
            .iter()
            .filter(|[a, b]| (*a..*b).contains(&at_ms))
            .map(|[_, b]| *b)
            .max();
        periodic.max(explicit)
    }

    /// A uniform draw in [0, 1) for (seed, seq, stream): SplitMix64's finaliser of
    /// `seed + seq·γ + stream·0xD1B5_4A32_D192_ED03` (docs/hub.md states the rule).
    fn draw(&self, seq: u64, stream: u64) -> f64 {
        let z = self
            .seed
            .wrapping_add(seq.wrapping_mul(hubload_rng::GAMMA))
            .wrapping_add(stream.wrapping_mul(0xD1B5_4A32_D192_ED03));
        hubload_rng::unit(hubload_rng::mix(z))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(f: &FaultConfig, n: u64) -> (u64, u64, u64, u64) {
        let (mut a, mut b, mut c, mut d) = (0, 0, 0, 0);
        for seq in 1..=n {
            match f.decide(seq, 1) {
                Action::Fail502 => a += 1,
                Action::Fail503 => b += 1,
                Action::Reset => c += 1,
                Action::Pass { .. } => d += 1,
            }
        }
        (a, b, c, d)
    }

    #[test]
    fn every_n_is_exact_and_ordered() {
        let f = FaultConfig {
            fail_502_every: Some(5),
            fail_503_every: Some(4),
            reset_every: Some(7),
            ..Default::default()
        };
        // 502 on multiples of 5 (20); 503 on multiples of 4 but not 5 (20); reset on
        // multiples of 7 that are neither (14 - 35, 70 - 28, 56, 84 = 9).
        assert_eq!(count(&f, 100), (20, 20, 9, 51));
        assert_eq!(f.decide(20, 1), Action::Fail502);
        assert_eq!(f.decide(8, 1), Action::Fail503);
        assert_eq!(f.decide(28, 1), Action::Fail503);
        assert_eq!(f.decide(14, 1), Action::Reset);
    }

    #[test]
    fn ratios_are_near_and_reproducible() {
        let f = FaultConfig {
            fail_502_ratio: 0.1,
            seed: 42,
            ..Default::default()
        };
        let (a, _, _, _) = count(&f, 100_000);
        assert!((9_000..11_000).contains(&a), "{a}");
        assert_eq!(count(&f, 1000), count(&f.clone(), 1000));
        let g = FaultConfig {
            seed: 43,
            ..f.clone()
        };
        assert_ne!(
            (1..=200).map(|s| f.decide(s, 1)).collect::<Vec<_>>(),
            (1..=200).map(|s| g.decide(s, 1)).collect::<Vec<_>>()
        );
        let all = FaultConfig {
            reset_ratio: 1.0,
            ..Default::default()
        };
        assert_eq!(count(&all, 50), (0, 0, 50, 0));
    }

    #[test]
    fn topic_prefixes_scope_the_faults() {
        let every = FaultConfig::default();
        assert!(every.scopes(None) && every.scopes(Some("tenant0001.x")));
        let one = FaultConfig {
            topic_prefixes: vec!["tenant0001.".into(), "shared".into()],
            ..Default::default()
        };
        assert!(one.scopes(Some("tenant0001.abc")));
        assert!(one.scopes(Some("shared-7")));
        assert!(!one.scopes(Some("tenant0010.abc")));
        assert!(!one.scopes(Some("tenant0001")));
        assert!(!one.scopes(None));
        let empty = FaultConfig {
            topic_prefixes: vec![String::new()],
            ..Default::default()
        };
        assert_eq!(empty.validate(), Err(FaultError::EmptyPrefix));
    }

    #[test]
    fn inflight_limit_comes_first() {
        let f = FaultConfig {
            max_inflight: Some(3),
            fail_502_every: Some(1),
            ..Default::default()
        };
        assert_eq!(f.decide(1, 4), Action::Fail503);
        assert_eq!(f.decide(1, 3), Action::Fail502);
    }

    #[test]
    fn latency_and_jitter() {
        let f = FaultConfig {
            latency_ms: 50,
            jitter_ms: 10,
            ..Default::default()
        };
        for seq in 1..500 {
            let Action::Pass { delay } = f.decide(seq, 1) else {
                panic!("no fault expected")
            };
            assert!((50..60).contains(&delay.as_millis()), "{delay:?}");
        }
    }

    #[test]
    fn stall_windows() {
        let f = FaultConfig {
            stall_every_ms: Some(1000),
            stall_for_ms: 200,
            stall_windows: vec![[150, 300]],
            ..Default::default()
        };
        assert_eq!(f.stall_end(0), None);
        assert_eq!(f.stall_end(149), None);
        assert_eq!(f.stall_end(150), Some(300));
        assert_eq!(f.stall_end(300), None);
        assert_eq!(f.stall_end(999), None);
        assert_eq!(f.stall_end(1000), Some(1200));
        assert_eq!(f.stall_end(2199), Some(2200));
        assert_eq!(f.stall_end(2200), None);
    }

    #[test]
    fn validation_names_the_field() {
        let bad = FaultConfig {
            reset_ratio: 1.5,
            ..Default::default()
        };
        assert_eq!(
            bad.validate().unwrap_err().to_string(),
            "faults.reset_ratio: must be between 0 and 1, got 1.5"
        );
        let zero = FaultConfig {
            fail_503_every: Some(0),
            ..Default::default()
        };
        assert!(zero
            .validate()
            .unwrap_err()
            .to_string()
            .contains("fail_503_every"));
        assert!(FaultConfig::default().validate().is_ok());
        assert!(!FaultConfig::default().is_active());
        let broker = FaultConfig {
            broker_latency_ms: 5,
            ..Default::default()
        };
        assert!(!broker.is_active());
        assert!(FaultConfig {
            latency_ms: 1,
            ..Default::default()
        }
        .is_active());
    }

    #[test]
    fn toml_and_json_round_trip() {
        let f: FaultConfig = toml::from_str(
            "fail_502_every = 5\nlatency_ms = 3\nstall_windows = [[100, 200]]\nseed = 7\n",
        )
        .unwrap();
        assert_eq!(f.fail_502_every, Some(5));
        assert_eq!(f.stall_windows, vec![[100, 200]]);
        let back: FaultConfig = serde_json::from_str(&serde_json::to_string(&f).unwrap()).unwrap();
        assert_eq!(back, f);
        assert!(toml::from_str::<FaultConfig>("fail_502_evry = 5").is_err());
    }
}
