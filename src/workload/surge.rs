//! The noisy neighbour (`--surge`): which tenants publish K× their designed share, from when
//! (a time in each level, or a level on), and which tenant each extra event goes to. Pure and seeded by nothing: the
//! extra events are a fixed function of their sequence numbers.
//!
//! The surge adds load, it never redistributes it: the level's schedule and every event of
//! it stay as they are, and extra events, at `rate × (K − 1) × Σ share` per second, come from a
//! sequence space of their own, so the quiet tenants' events are the same with and without it.

use std::str::FromStr;
use std::time::Duration;

/// First sequence number of the surge's space: level `i`'s extra events are
/// `SURGE_SEQ_BASE + (i << 40) + k`, below the warm-up's space (`1 << 62`).
pub const SURGE_SEQ_BASE: u64 = 1 << 61;
/// Most extra events a level may number (`k` above).
const PER_LEVEL: u64 = 1 << 40;

/// `--surge TENANTSxK@START`, validated: the tenants (sorted, distinct), K > 1 and the start.
#[derive(Debug, Clone, PartialEq)]
pub struct Surge {
    /// Tenant indices (`tenant0007` is 7), sorted and distinct.
    pub tenants: Vec<u32>,
    /// K: each surging tenant publishes K× its designed share (1 < K ≤ 1000).
    pub factor: f64,
    /// Where the surge starts.
    pub start: SurgeStart,
}

/// Where a surge starts, and so where its baseline is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SurgeStart {
    /// `@30s`: whole seconds into every level's measured time; the seconds before are the
    /// level's baseline.
    At(Duration),
    /// `@level2`: in level N (1-based, as table.txt lists them) and every later one. Each of
    /// those levels runs twice its duration: a baseline pass without the surge, then the
    /// surged pass, at the same rate (config doubles the level's duration).
    Level(u32),
}

impl Surge {
    /// Seconds into level `index` (0-based) of `secs` measured seconds (as config resolved
    /// them) where the surge starts, the baseline being the seconds before; `None` when the
    /// level has no surge (before `@levelN`'s level, or a level without a duration).
    pub fn from_in(&self, index: usize, secs: Option<Duration>) -> Option<Duration> {
        match self.start {
            SurgeStart::At(d) => Some(d),
            SurgeStart::Level(n) if index + 1 >= n as usize => secs.map(|d| d / 2),
            SurgeStart::Level(_) => None,
        }
    }
}

impl FromStr for Surge {
    type Err = String;
    /// `tenant0007x10@30s`, or several tenants `tenant0003,tenant0007x4@1m`; a tenant may be
    /// given by number (`7x10@30s`); `@level2` starts at a level instead of a time.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let shape = "expected TENANTSxK@START, e.g. tenant0007x10@30s or tenant0007x10@level2";
        let (who, from) = s.split_once('@').ok_or(format!("no @START ({shape})"))?;
        let (names, factor) = who
            .rsplit_once(['x', '×'])
            .ok_or(format!("no xK ({shape})"))?;
        let factor: f64 = factor
            .trim()
            .parse()
            .ok()
            .filter(|k: &f64| k.is_finite())
            .ok_or(format!("K `{}` is not a number ({shape})", factor.trim()))?;
        if !(factor > 1.0 && factor <= 1000.0) {
            return Err(format!("K must be above 1 and at most 1000 (K = {factor})"));
        }
        let mut tenants = Vec::new();
        for name in names.split(',').map(str::trim) {
            let digits = name.strip_prefix("tenant").unwrap_or(name);
            let t: u32 = digits
                .parse()
                .map_err(|_| format!("`{name}` is not a tenant (tenant0007 or 7)"))?;
            tenants.push(t);
        }
        tenants.sort_unstable();
        tenants.dedup();
        let start = from.trim();
        if let Some(n) = start.strip_prefix("level") {
            let n: u32 = n.parse().ok().filter(|n| *n >= 1).ok_or(format!(
                "`{start}` is not a level: levelN with N a whole number from 1, the first level"
            ))?;
            return Ok(Surge {
                tenants,
                factor,
                start: SurgeStart::Level(n),
            });
        }
        let from = humantime::parse_duration(start)
            .map_err(|_| format!("START `{start}` is not a duration ({shape})"))?;
        if from.is_zero() || from.subsec_nanos() != 0 {
            return Err(format!(
                "START must be a whole number of seconds above 0, the baseline's length (START = {start})"
            ));
        }
        Ok(Surge {
            tenants,
            factor,
            start: SurgeStart::At(from),
        })
    }
}

/// Whether `seq` is an extra event of a surge.
pub fn is_surge_seq(seq: u64) -> bool {
    (SURGE_SEQ_BASE..1 << 62).contains(&seq)
}

/// Extra event `seq`'s number within its level (`k` above).
pub fn surge_offset(seq: u64) -> u64 {
    (seq - SURGE_SEQ_BASE) % PER_LEVEL
}

/// The first extra sequence number of level `index`.
pub fn surge_base(index: u64) -> u64 {
    SURGE_SEQ_BASE + (index % (1 << 20)) * PER_LEVEL
}

/// Which surging tenant each extra event goes to, in proportion to their designed shares.
#[derive(Debug, Clone)]
pub struct SurgePicks {
    surge: Surge,
    /// Cumulative designed shares of the surging tenants, normalised to end at 1; empty when
    /// they are all equal (then round robin).
    cdf: Vec<f64>,
    /// Σ the surging tenants' designed shares.
    share: f64,
}

impl SurgePicks {
    /// Picks for `surge`, with `share(t)` tenant `t`'s designed share of the load.
    pub fn new(surge: Surge, share: impl Fn(u32) -> f64) -> Self {
        let shares: Vec<f64> = surge.tenants.iter().map(|t| share(*t)).collect();
        let total: f64 = shares.iter().sum();
        let equal = shares.windows(2).all(|w| w[0] == w[1]);
        let cdf = if equal {
            Vec::new()
        } else {
            let mut acc = 0.0;
            shares
                .iter()
                .map(|s| {
                    acc += s / total;
                    acc
                })
                .collect()
        };
        SurgePicks {
            surge,
            cdf,
            share: total,
        }
    }

    /// The surge.
    pub fn surge(&self) -> &Surge {
        &self.surge
    }

    /// Extra events per event of the level's own schedule: (K − 1) × Σ the surging tenants'
    /// designed shares. Each then publishes K× its share, on top of everyone's load.
    pub fn extra(&self) -> f64 {
        (self.surge.factor - 1.0) * self.share
    }

    /// The tenant of extra event `seq` (an [`is_surge_seq`] number): round robin over equal
    /// shares; otherwise the golden-ratio sequence on their cumulative shares, which spreads
    /// any run of consecutive numbers within a few of the exact proportions.
    pub fn tenant(&self, seq: u64) -> u32 {
        let k = seq % PER_LEVEL;
        let n = self.surge.tenants.len();
        let i = if self.cdf.is_empty() {
            (k % n as u64) as usize
        } else {
            let u = ((k as f64 + 0.5) * 0.618_033_988_749_894_9).fract();
            self.cdf.partition_point(|c| *c <= u).min(n - 1)
        };
        self.surge.tenants[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tenants_factor_and_start() {
        let s: Surge = "tenant0007x10@30s".parse().unwrap();
        assert_eq!(s.tenants, [7]);
        assert_eq!(s.factor, 10.0);
        assert_eq!(s.start, SurgeStart::At(Duration::from_secs(30)));
        let s: Surge = "9, tenant0003,3x2.5@1m".parse().unwrap();
        assert_eq!((s.tenants, s.factor), (vec![3, 9], 2.5));
        assert_eq!(s.start, SurgeStart::At(Duration::from_secs(60)));
        let s: Surge = "7x10@level2".parse().unwrap();
        assert_eq!(s.start, SurgeStart::Level(2));
        for (bad, why) in [
            ("tenant0007x10", "no @START"),
            ("tenant0007@30s", "no xK"),
            ("tenant0007xten@30s", "K `ten` is not a number"),
            ("tenant0007x1@30s", "K must be above 1"),
            ("tenant0007x1001@30s", "K must be above 1 and at most 1000"),
            ("tenantABCx10@30s", "`tenantABC` is not a tenant"),
            ("tenant0007x10@soon", "START `soon` is not a duration"),
            (
                "tenant0007x10@1500ms",
                "START must be a whole number of seconds",
            ),
            (
                "tenant0007x10@0s",
                "START must be a whole number of seconds",
            ),
            (
                "7x10@level0",
                "`level0` is not a level: levelN with N a whole",
            ),
            ("7x10@level", "`level` is not a level"),
            ("7x10@levelx", "`levelx` is not a level"),
            ("7x10@level-1", "`level-1` is not a level"),
        ] {
            let e = bad.parse::<Surge>().unwrap_err();
            assert!(e.starts_with(why), "{bad}: {e}");
        }
    }

    #[test]
    fn a_level_start_surges_that_level_and_later_ones_after_half_their_time() {
        let s: Surge = "7x10@level2".parse().unwrap();
        let d = Some(Duration::from_secs(6));
        assert_eq!(s.from_in(0, d), None);
        assert_eq!(s.from_in(1, d), Some(Duration::from_secs(3)));
        assert_eq!(s.from_in(4, d), Some(Duration::from_secs(3)));
        assert_eq!(s.from_in(1, None), None);
        let t: Surge = "7x10@4s".parse().unwrap();
        assert_eq!(t.from_in(0, d), Some(Duration::from_secs(4)));
    }

    #[test]
    fn extra_events_follow_equal_shares_exactly() {
        // 10 tenants of 1/10 each; tenants 2 and 7 at 4×: 3 × 0.2 = 0.6 extra per event.
        let s: Surge = "2,7x4@1s".parse().unwrap();
        let p = SurgePicks::new(s, |_| 0.1);
        assert!((p.extra() - 0.6).abs() < 1e-12);
        let mut count = [0u32; 10];
        for k in 0..1001 {
            count[p.tenant(surge_base(3) + k) as usize] += 1;
        }
        // Round robin from k = 0: tenant 2 gets the 501 even numbers, 7 the 500 odd ones.
        assert_eq!(count[2], 501);
        assert_eq!(count[7], 500);
        assert_eq!(count.iter().sum::<u32>(), 1001);
    }

    #[test]
    fn extra_events_follow_unequal_shares_within_a_few() {
        // Shares 0.3 and 0.1: of 10,000 extra events 7,500 and 2,500, give or take the
        // golden-ratio sequence's discrepancy (a few events).
        let s: Surge = "0,1x2@1s".parse().unwrap();
        let p = SurgePicks::new(s, |t| if t == 0 { 0.3 } else { 0.1 });
        assert!((p.extra() - 0.4).abs() < 1e-12);
        let zero = (0..10_000)
            .filter(|k| p.tenant(surge_base(0) + k) == 0)
            .count();
        assert!((7_497..=7_503).contains(&zero), "{zero}");
    }

    #[test]
    fn quiet_tenants_keep_their_events_and_the_surging_one_gets_k_times_its_share() {
        use crate::workload::{Distribution, TopicLayout, Workload, WorkloadConfig};
        let cfg = WorkloadConfig {
            tenants: 10,
            sps: 2,
            users: 2,
            channels: vec!["login".into()],
            layout: TopicLayout::PerTenant,
            payload_bytes: None,
            seed: 3,
            distribution: Distribution::Uniform,
        };
        let plain = Workload::new(cfg.clone());
        let noisy = Workload::new(cfg).with_surge(Some("tenant0004x10@5s".parse().unwrap()));
        let picks = noisy.surge().unwrap();
        // 10,000 tickets of the level's own schedule, and (10 − 1) × 1/10 = 0.9 extra per
        // ticket: 9,000 extra events.
        assert!((picks.extra() - 0.9).abs() < 1e-12);
        let mut with = [0u64; 10];
        let mut without = [0u64; 10];
        for seq in 0..10_000 {
            with[noisy.event_unrendered(seq, 0).tenant as usize] += 1;
            without[plain.event_unrendered(seq, 0).tenant as usize] += 1;
        }
        assert_eq!(with, without, "the level's own events are the same");
        for k in 0..9_000 {
            with[noisy.event_unrendered(surge_base(1) + k, 0).tenant as usize] += 1;
        }
        for t in 0..10 {
            let extra = if t == 4 { 9_000 } else { 0 };
            assert_eq!(with[t], without[t] + extra, "tenant {t}");
        }
        // Tenant 4 published its own draws plus 9× a share of 1,000: K× its share in all, up
        // to how far its draws are from 1,000.
        assert_eq!(with.iter().sum::<u64>(), 19_000);
    }

    #[test]
    fn surge_numbers_are_their_own_space() {
        assert!(is_surge_seq(surge_base(0)));
        assert!(is_surge_seq(surge_base(5) + 12_345));
        assert!(!is_surge_seq(5 << 40));
        assert!(!is_surge_seq((1 << 62) + (5 << 40)), "warm-up numbers");
        assert_eq!(surge_base(1) - surge_base(0), PER_LEVEL);
    }
}
