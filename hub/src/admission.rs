//! The per-tenant admission limit (`--tenant-rate-limit`): one token bucket per tenant,
//! refused publishes answered 429 with `Retry-After`, counted per tenant.
//!
//! The tenant is the topic's first dot-separated part, as hubload names its topics. Each
//! bucket is a GCRA (a token bucket kept as one "theoretical arrival time"), so a tenant costs
//! one small entry. The map holds at most `max_tenants`; past that every further tenant shares
//! one bucket, [`OVERFLOW`], so memory stays bounded whatever topics clients send.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

use dashmap::DashMap;
use serde::{Deserialize, Serialize};

/// The bucket every tenant shares once the map holds `max_tenants` (and its key in `/stats`).
pub const OVERFLOW: &str = "(other tenants)";

/// Tenants the map holds by default before the rest share [`OVERFLOW`].
pub const MAX_TENANTS: usize = 100_000;

/// A rate, `N/s`, `N/m` or `N/h`: N publishes per second, minute or hour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TenantRate {
    /// Publishes per `per`.
    pub count: u32,
    /// The period the count is for.
    pub per: Duration,
}

impl TenantRate {
    /// The time one publish's token takes to come back, in µs (at least 1).
    fn interval_us(self) -> u64 {
        (self.per.as_micros() as u64 / u64::from(self.count)).max(1)
    }
}

impl fmt::Display for TenantRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.per.as_secs() {
            3600 => "h",
            60 => "m",
            _ => "s",
        };
        write!(f, "{}/{unit}", self.count)
    }
}

impl FromStr for TenantRate {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("{s:?}: expected publishes per tenant as N/s, N/m or N/h, e.g. 50/s");
        let (n, unit) = s.trim().split_once('/').ok_or_else(bad)?;
        let per = match unit.trim() {
            "s" | "sec" => Duration::from_secs(1),
            "m" | "min" => Duration::from_secs(60),
            "h" => Duration::from_secs(3600),
            _ => return Err(bad()),
        };
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 {
            return Err(format!("{s:?}: the count must be at least 1"));
        }
        Ok(TenantRate { count, per })
    }
}

/// The admission limit's settings; the hub has none by default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantLimit {
    /// The sustained rate each tenant is admitted at.
    pub rate: TenantRate,
    /// Publishes a tenant may send at once after a quiet spell (the bucket's size, ≥ 1).
    pub burst: u32,
    /// Tenants with a bucket of their own; the rest share one, `(other tenants)` in `/stats`.
    pub max_tenants: usize,
}

impl TenantLimit {
    /// `rate` with a burst of one second's worth of it (at least 1) and the default map cap.
    pub fn new(rate: TenantRate) -> TenantLimit {
        let per_sec = u64::from(rate.count) * 1_000_000 / (rate.per.as_micros() as u64).max(1);
        TenantLimit {
            rate,
            burst: per_sec.clamp(1, u64::from(u32::MAX)) as u32,
            max_tenants: MAX_TENANTS,
        }
    }
}

/// One tenant's admission counts in `/stats` (`tenants`).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct TenantAdmission {
    /// Publishes admitted (then answered as any publish is).
    pub admitted: u64,
    /// Publishes answered 429 with `Retry-After`.
    pub throttled: u64,
    /// Publishes that came before the `Retry-After` of the tenant's last 429 had passed: 0
    /// when the tenant's one client waits as told (with several clients in flight at once,
    /// their requests already under way count too).
    pub before_retry_after: u64,
}

/// A tenant's bucket and counts.
#[derive(Debug, Default)]
struct Entry {
    /// The theoretical arrival time of the next publish, µs since hub start.
    tat_us: u64,
    /// When the last 429's `Retry-After` ends, µs since hub start.
    retry_at_us: u64,
    counts: TenantAdmission,
}

impl Entry {
    /// Admit a publish at `now_us`, or refuse it with the whole seconds until one would be
    /// admitted (≥ 1): the GCRA with emission interval `t_us` and tolerance `tau_us`.
    fn admit(&mut self, now_us: u64, t_us: u64, tau_us: u64) -> Result<(), u32> {
        if now_us < self.retry_at_us {
            self.counts.before_retry_after += 1;
        }
        let tat = self.tat_us.max(now_us);
        let ahead = tat - now_us;
        if ahead > tau_us {
            let wait_us = ahead - tau_us;
            let secs = wait_us.div_ceil(1_000_000).clamp(1, u64::from(u32::MAX)) as u32;
            self.retry_at_us = now_us.saturating_add(u64::from(secs) * 1_000_000);
            self.counts.throttled += 1;
            return Err(secs);
        }
        self.tat_us = tat.saturating_add(t_us);
        self.counts.admitted += 1;
        Ok(())
    }
}

/// The limit in force and every tenant's bucket.
#[derive(Debug)]
pub(crate) struct Admission {
    limit: TenantLimit,
    interval_us: u64,
    tolerance_us: u64,
    tenants: DashMap<Box<str>, Entry>,
    /// Tenants with an entry of their own (the overflow bucket not included).
    held: AtomicUsize,
}

/// The tenant part of a topic: up to its first dot (the whole topic without one).
pub fn tenant_of(topic: &str) -> &str {
    topic.split('.').next().unwrap_or(topic)
}

impl Admission {
    pub fn new(limit: TenantLimit) -> Admission {
        let interval_us = limit.rate.interval_us();
        Admission {
            tolerance_us: interval_us.saturating_mul(u64::from(limit.burst.max(1) - 1)),
            interval_us,
            limit,
            tenants: DashMap::new(),
            held: AtomicUsize::new(0),
        }
    }

    /// The limit in force.
    pub fn limit(&self) -> &TenantLimit {
        &self.limit
    }

    /// Admit a publish to `topic` at `now_us` (µs since hub start), or refuse it with the
    /// `Retry-After` seconds.
    pub fn admit(&self, topic: &str, now_us: u64) -> Result<(), u32> {
        let tenant = tenant_of(topic);
        let (t, tau) = (self.interval_us, self.tolerance_us);
        if let Some(mut e) = self.tenants.get_mut(tenant) {
            return e.admit(now_us, t, tau);
        }
        // A new tenant: its own entry while there is room, else the shared one. Two
        // requests racing here may take the map one or two past the cap (one per shard).
        let key = match self.held.load(Relaxed) < self.limit.max_tenants {
            true => tenant,
            false => OVERFLOW,
        };
        let mut e = self.tenants.entry(key.into()).or_insert_with(|| {
            if key != OVERFLOW {
                self.held.fetch_add(1, Relaxed);
            }
            Entry::default()
        });
        e.admit(now_us, t, tau)
    }

    /// Every tenant's counts.
    pub fn snapshot(&self) -> BTreeMap<String, TenantAdmission> {
        self.tenants
            .iter()
            .map(|e| (e.key().to_string(), e.value().counts))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(rate: &str, burst: u32) -> Admission {
        Admission::new(TenantLimit {
            burst,
            ..TenantLimit::new(rate.parse().unwrap())
        })
    }

    #[test]
    fn rates_parse_and_bad_ones_say_why() {
        let r: TenantRate = "50/s".parse().unwrap();
        assert_eq!((r.count, r.per), (50, Duration::from_secs(1)));
        assert_eq!(r.interval_us(), 20_000);
        assert_eq!(
            " 6 / m ".parse::<TenantRate>().unwrap().interval_us(),
            10_000_000
        );
        assert_eq!("1/h".parse::<TenantRate>().unwrap().to_string(), "1/h");
        assert_eq!("50/s".parse::<TenantRate>().unwrap().to_string(), "50/s");
        for bad in ["", "50", "50/d", "x/s", "-1/s", "1.5/s", "99999999999/s"] {
            let e = bad.parse::<TenantRate>().unwrap_err();
            assert!(e.contains("N/s"), "{bad}: {e}");
        }
        assert!("0/s"
            .parse::<TenantRate>()
            .unwrap_err()
            .contains("at least 1"));
        // The default burst: one second's worth, at least 1.
        assert_eq!(TenantLimit::new("50/s".parse().unwrap()).burst, 50);
        assert_eq!(TenantLimit::new("6/m".parse().unwrap()).burst, 1);
    }

    #[test]
    fn a_burst_then_the_rate_and_retry_after_in_whole_seconds() {
        // 2/s with a burst of 3: three at once, then one every 500 ms.
        let a = limit("2/s", 3);
        let at = |us| a.admit("tenant0001.org.schema.WSO2.v1.event.login", us);
        assert_eq!([at(0), at(0), at(0)], [Ok(()), Ok(()), Ok(())]);
        // The next token comes at 500 ms: Retry-After rounds up to 1 s.
        assert_eq!(at(0), Err(1));
        assert_eq!(at(499_999), Err(1));
        assert_eq!(at(500_000), Ok(()));
        assert_eq!(at(500_000), Err(1));
        let s = a.snapshot();
        let t = s["tenant0001"];
        assert_eq!((t.admitted, t.throttled), (4, 3));
        // The 429s at 0 and 499,999 µs said 1 s: the arrivals before 1 s and 1.5 s count.
        assert_eq!(t.before_retry_after, 3);
    }

    #[test]
    fn a_slow_rate_asks_for_a_long_wait_and_tenants_are_apart() {
        let a = limit("1/m", 1);
        assert_eq!(a.admit("a.x", 0), Ok(()));
        assert_eq!(a.admit("a.y", 1), Err(60));
        assert_eq!(a.admit("a.y", 30_000_000), Err(30));
        // Another tenant has a bucket of its own; a topic without a dot is its own tenant.
        assert_eq!(a.admit("b.x", 1), Ok(()));
        assert_eq!(a.admit("b", 1), Err(60));
        assert_eq!(a.admit("c", 1), Ok(()));
        let s = a.snapshot();
        assert_eq!(s.keys().collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(s["a"].throttled, 2);
        // The second 429 came before the first one's minute was over.
        assert_eq!(s["a"].before_retry_after, 1);
    }

    #[test]
    fn past_the_cap_further_tenants_share_one_bucket() {
        let a = Admission::new(TenantLimit {
            rate: "1/s".parse().unwrap(),
            burst: 1,
            max_tenants: 2,
        });
        assert_eq!(a.admit("t1.a", 0), Ok(()));
        assert_eq!(a.admit("t2.a", 0), Ok(()));
        assert_eq!(a.admit("t3.a", 0), Ok(()));
        // t4 shares t3's bucket, which is empty until 1 s.
        assert_eq!(a.admit("t4.a", 0), Err(1));
        for i in 0..1000 {
            let _ = a.admit(&format!("x{i}.a"), 2_000_000);
        }
        let s = a.snapshot();
        assert_eq!(s.len(), 3, "{:?}", s.keys());
        let o = s[OVERFLOW];
        assert_eq!(o.admitted + o.throttled, 1002);
        assert_eq!(o.admitted, 2);
    }

    #[test]
    fn hostile_times_and_rates_do_not_overflow() {
        let a = Admission::new(TenantLimit {
            rate: TenantRate {
                count: 1,
                per: Duration::from_secs(u32::MAX as u64),
            },
            burst: u32::MAX,
            max_tenants: 1,
        });
        assert_eq!(a.admit("t", u64::MAX / 2), Ok(()));
        let fast = limit("4294967295/s", u32::MAX);
        assert_eq!(fast.admit("t", 0), Ok(()));
    }
}
