//! The shard environment contract: which shard this process is (from the Indexed Job's
//! environment), how the workload splits across shards, and waiting for the shared start.
//!
//! Kubernetes is the coordinator: the Job controller sets `JOB_COMPLETION_INDEX`, the manifest
//! sets `HUBLOAD_SHARD_COUNT`, `HUBLOAD_RUN_ID` and `HUBLOAD_START_AT`. Nothing talks to
//! anything else; the split is a pure function of (index, count), so N shards together do
//! exactly what one process would.

use std::time::{Duration, SystemTime};

/// Set by the Job controller in Indexed mode: this pod's index, `0..count`.
pub const ENV_INDEX: &str = "JOB_COMPLETION_INDEX";
/// Number of shards (the Job's `completions`).
pub const ENV_COUNT: &str = "HUBLOAD_SHARD_COUNT";
/// Shared by all shards of one run; printed in every artifact line.
pub const ENV_RUN_ID: &str = "HUBLOAD_RUN_ID";
/// Wall-clock start shared by all shards, RFC 3339 (required when the count is above 1).
pub const ENV_START_AT: &str = "HUBLOAD_START_AT";

/// The longest run id accepted (a Kubernetes object name is at most 253 characters).
pub const MAX_RUN_ID: usize = 253;

/// A bad shard variable: the message names the variable and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var}: {reason}")]
pub struct ShardEnvError {
    /// The environment variable.
    pub var: &'static str,
    /// What is wrong with it, one line.
    pub reason: String,
}

/// Which slice of the run this process takes: shard `index` of `count`. The run path and
/// the engine carry this small value; [`ShardSpec`] adds the run id and start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardSlot {
    /// This shard's index, `0..count`.
    pub index: u32,
    /// Number of shards, ≥ 1.
    pub count: u32,
}

impl ShardSlot {
    /// An unsharded run: the one shard of one.
    pub const WHOLE: ShardSlot = ShardSlot { index: 0, count: 1 };

    /// Whether this shard publishes for `tenant`: see [`owns_tenant`].
    pub fn owns_tenant(self, tenant: u32) -> bool {
        owns_tenant(tenant, self.index, self.count)
    }

    /// This shard's part of `total`: see [`split_count`].
    pub fn part(self, total: u64) -> u64 {
        split_count(total, self.index, self.count)
    }

    /// True when the run has more than one shard.
    pub fn is_sharded(self) -> bool {
        self.count > 1
    }
}

/// Which shard this process is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardSpec {
    /// This shard's index, `0..count`.
    pub index: u32,
    /// Number of shards, ≥ 1.
    pub count: u32,
    /// The run id shared by every shard.
    pub run_id: String,
    /// When every shard starts its measured load (required when `count > 1`).
    pub start_at: Option<SystemTime>,
}

impl ShardSpec {
    /// Read the contract from the process environment. `Ok(None)` when `HUBLOAD_SHARD_COUNT`
    /// is not set: this is an ordinary, unsharded run.
    pub fn from_env() -> Result<Option<ShardSpec>, ShardEnvError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// As [`ShardSpec::from_env`], reading variables through `get` (tests pass a map).
    pub fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<ShardSpec>, ShardEnvError> {
        let var = |k: &'static str| {
            get(k)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let Some(count_s) = var(ENV_COUNT) else {
            return Ok(None);
        };
        let count: u32 = match count_s.parse() {
            Ok(n) if n >= 1 => n,
            _ => {
                return Err(ShardEnvError {
                    var: ENV_COUNT,
                    reason: format!("expected a whole number of shards ≥ 1, got {count_s:?}"),
                })
            }
        };
        let index = match var(ENV_INDEX) {
            Some(s) => match s.parse::<u32>() {
                Ok(i) if i < count => i,
                _ => {
                    return Err(ShardEnvError {
                        var: ENV_INDEX,
                        reason: format!("expected an index in 0..{count} ({ENV_COUNT} is {count}), got {s:?}"),
                    })
                }
            },
            None if count == 1 => 0,
            None => {
                return Err(ShardEnvError {
                    var: ENV_INDEX,
                    reason: format!(
                        "not set, but {ENV_COUNT} is {count}: run as an Indexed Job (completionMode: Indexed) or set it"
                    ),
                })
            }
        };
        let run_id = var(ENV_RUN_ID).ok_or_else(|| ShardEnvError {
            var: ENV_RUN_ID,
            reason: format!(
                "not set, but {ENV_COUNT} is: every shard of a run needs the same run id"
            ),
        })?;
        validate_run_id(&run_id).map_err(|reason| ShardEnvError {
            var: ENV_RUN_ID,
            reason,
        })?;
        let start_at = match var(ENV_START_AT) {
            Some(s) => Some(parse_start_at(&s).map_err(|reason| ShardEnvError {
                var: ENV_START_AT,
                reason,
            })?),
            None if count == 1 => None,
            None => {
                return Err(ShardEnvError {
                    var: ENV_START_AT,
                    reason: format!(
                        "not set, but {ENV_COUNT} is {count}: shards need a shared start, e.g. $(date -u -d '+2 min' +%Y-%m-%dT%H:%M:%SZ)"
                    ),
                })
            }
        };
        Ok(Some(ShardSpec {
            index,
            count,
            run_id,
            start_at,
        }))
    }

    /// This shard's part of `total` (requests, concurrency, rate): see [`split_count`].
    pub fn part(&self, total: u64) -> u64 {
        split_count(total, self.index, self.count)
    }

    /// This shard's index and count.
    pub fn slot(&self) -> ShardSlot {
        ShardSlot {
            index: self.index,
            count: self.count,
        }
    }

    /// Whether this shard publishes for `tenant`: see [`owns_tenant`].
    pub fn owns_tenant(&self, tenant: u32) -> bool {
        owns_tenant(tenant, self.index, self.count)
    }
}

/// A run id is 1–253 characters of `A-Z a-z 0-9 . _ - :` (it appears in log lines and labels).
pub fn validate_run_id(id: &str) -> Result<(), String> {
    if id.is_empty() || id.len() > MAX_RUN_ID {
        return Err(format!(
            "must be 1 to {MAX_RUN_ID} characters, got {}",
            id.len()
        ));
    }
    match id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':')))
    {
        Some(c) => Err(format!(
            "{id:?} contains {c:?}; use only letters, digits, '.', '_', '-' and ':'"
        )),
        None => Ok(()),
    }
}

/// Parse an RFC 3339 time: `2026-11-30T05:00:00Z`, with optional fraction, or a numeric offset
/// such as `+02:00` (humantime reads only UTC, so the offset is applied here).
pub fn parse_start_at(s: &str) -> Result<SystemTime, String> {
    let bad = |why: &str| {
        format!("{s:?} is not an RFC 3339 time ({why}); expected e.g. 2026-11-30T05:00:00Z")
    };
    let b = s.as_bytes();
    let (utc, offset_s): (String, i64) = if s.ends_with('Z') || s.ends_with('z') {
        (format!("{}Z", &s[..s.len() - 1]), 0)
    } else if b.len() > 6
        && matches!(b[b.len() - 6], b'+' | b'-')
        && b[b.len() - 3] == b':'
        && s.is_char_boundary(s.len() - 6)
    {
        let (head, off) = s.split_at(s.len() - 6);
        let hh: i64 = off[1..3].parse().map_err(|_| bad("bad offset"))?;
        let mm: i64 = off[4..6].parse().map_err(|_| bad("bad offset"))?;
        if hh > 23 || mm > 59 {
            return Err(bad("bad offset"));
        }
        let sign = if b[b.len() - 6] == b'+' { 1 } else { -1 };
        (format!("{head}Z"), sign * (hh * 3600 + mm * 60))
    } else {
        return Err(bad("no time zone: end it with Z or an offset like +02:00"));
    };
    let t = humantime::parse_rfc3339(&utc).map_err(|e| bad(&e.to_string()))?;
    // Local time = UTC + offset, so UTC = local − offset.
    let d = Duration::from_secs(offset_s.unsigned_abs());
    let t = if offset_s >= 0 {
        t.checked_sub(d)
    } else {
        t.checked_add(d)
    };
    t.ok_or_else(|| bad("out of range"))
}

/// Shard `index`'s part of `total` when split across `count` shards: the floor, plus one for
/// the lowest `total % count` indices. The parts add up to `total` exactly. 0 when `count` is 0
/// or `index` is out of range.
pub fn split_count(total: u64, index: u32, count: u32) -> u64 {
    if count == 0 || index >= count {
        return 0;
    }
    let (c, i) = (u64::from(count), u64::from(index));
    total / c + u64::from(i < total % c)
}

/// Tenants are striped across shards: shard `index` publishes for every tenant with
/// `tenant % count == index`. False when `count` is 0.
pub fn owns_tenant(tenant: u32, index: u32, count: u32) -> bool {
    count != 0 && tenant % count == index
}

/// The shard started too late to join the shared start: its load would not overlap the others'.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "missed the start window: {ENV_START_AT} was {start_at}, this shard was ready {late_ms} ms later (grace {grace_ms} ms)"
)]
pub struct MissedStart {
    /// The shared start, RFC 3339.
    pub start_at: String,
    /// How late this shard was, ms.
    pub late_ms: u128,
    /// The grace allowed, ms.
    pub grace_ms: u128,
}

/// How long to sleep at `now` to start at `start_at`; an error if `now` is past `start_at + grace`.
pub fn start_delay(
    now: SystemTime,
    start_at: SystemTime,
    grace: Duration,
) -> Result<Duration, MissedStart> {
    match start_at.duration_since(now) {
        Ok(wait) => Ok(wait),
        Err(e) if e.duration() <= grace => Ok(Duration::ZERO),
        Err(e) => Err(MissedStart {
            start_at: humantime::format_rfc3339_millis(start_at).to_string(),
            late_ms: e.duration().as_millis(),
            grace_ms: grace.as_millis(),
        }),
    }
}

/// Sleep until the wall clock reaches `start_at`; start at once if it passed less than `grace`
/// ago; [`MissedStart`] if it passed longer ago (the caller exits with its own code).
pub async fn wait_for_start(start_at: SystemTime, grace: Duration) -> Result<(), MissedStart> {
    let wait = start_delay(SystemTime::now(), start_at, grace)?;
    // The delay is taken from the wall clock once and then slept monotonically, so a clock
    // step during the wait cannot stretch it.
    tokio::time::sleep(wait).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::time::UNIX_EPOCH;

    fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    fn err(vars: &[(&str, &str)]) -> ShardEnvError {
        ShardSpec::from_lookup(lookup(vars)).unwrap_err()
    }

    #[test]
    fn unsharded_when_count_unset() {
        assert_eq!(ShardSpec::from_lookup(lookup(&[])).unwrap(), None);
        // The index alone (any Indexed Job) does not make a shard.
        assert_eq!(
            ShardSpec::from_lookup(lookup(&[(ENV_INDEX, "3")])).unwrap(),
            None
        );
    }

    #[test]
    fn full_contract() {
        let s = ShardSpec::from_lookup(lookup(&[
            (ENV_COUNT, "4"),
            (ENV_INDEX, "3"),
            (ENV_RUN_ID, "hubload-x1"),
            (ENV_START_AT, "2026-11-30T05:00:00Z"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!((s.index, s.count, s.run_id.as_str()), (3, 4, "hubload-x1"));
        let secs = s
            .start_at
            .unwrap()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert_eq!(secs, 1_796_014_800);
    }

    #[test]
    fn single_shard_needs_no_index_or_start() {
        let s = ShardSpec::from_lookup(lookup(&[(ENV_COUNT, "1"), (ENV_RUN_ID, "r")]))
            .unwrap()
            .unwrap();
        assert_eq!((s.index, s.count, s.start_at), (0, 1, None));
    }

    #[test]
    fn errors_name_the_variable() {
        let base = [(ENV_RUN_ID, "r"), (ENV_START_AT, "2026-11-30T05:00:00Z")];
        let with = |extra: &[(&'static str, &'static str)]| {
            let mut v = base.to_vec();
            v.extend_from_slice(extra);
            err(&v)
        };
        for bad in ["0", "-1", "two", "1.5"] {
            let e = with(&[(ENV_COUNT, bad)]);
            assert_eq!(e.var, ENV_COUNT, "{bad}");
            assert!(e.to_string().starts_with("HUBLOAD_SHARD_COUNT: "), "{e}");
        }
        let e = with(&[(ENV_COUNT, "4"), (ENV_INDEX, "4")]);
        assert_eq!(e.var, ENV_INDEX);
        assert!(e.reason.contains("0..4"), "{e}");
        let e = with(&[(ENV_COUNT, "4")]);
        assert_eq!(e.var, ENV_INDEX);
        let e = err(&[
            (ENV_COUNT, "2"),
            (ENV_INDEX, "0"),
            (ENV_START_AT, "2026-11-30T05:00:00Z"),
        ]);
        assert_eq!(e.var, ENV_RUN_ID);
        let e = err(&[(ENV_COUNT, "2"), (ENV_INDEX, "0"), (ENV_RUN_ID, "a b")]);
        assert_eq!(e.var, ENV_RUN_ID);
        assert!(e.reason.contains("' '"), "{e}");
        let e = err(&[(ENV_COUNT, "2"), (ENV_INDEX, "0"), (ENV_RUN_ID, "r")]);
        assert_eq!(e.var, ENV_START_AT);
        let e = with(&[
            (ENV_COUNT, "2"),
            (ENV_INDEX, "0"),
            (ENV_START_AT, "tomorrow"),
        ]);
        assert_eq!(e.var, ENV_START_AT);
        assert!(e.to_string().contains("\"tomorrow\""), "{e}");
        assert!(!e.to_string().contains('\n'));
    }

    #[test]
    fn rfc3339_forms() {
        let z = parse_start_at("2026-11-30T05:00:00Z").unwrap();
        assert_eq!(parse_start_at("2026-11-30T07:00:00+02:00").unwrap(), z);
        assert_eq!(parse_start_at("2026-11-30T00:30:00-04:30").unwrap(), z);
        assert_eq!(parse_start_at("2026-11-30T05:00:00+00:00").unwrap(), z);
        assert_eq!(
            parse_start_at("2026-11-30T05:00:00.250Z").unwrap(),
            z + Duration::from_millis(250)
        );
        for bad in [
            "2026-11-30T05:00:00",
            "2026-11-30 05:00",
            "",
            "2026-11-30T05:00:00+25:00",
            "ééééééééééééééééééééé+02:00",
        ] {
            assert!(parse_start_at(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn run_ids() {
        assert!(validate_run_id("hubload-20261130.0500_a:b").is_ok());
        assert!(validate_run_id("").is_err());
        assert!(validate_run_id(&"a".repeat(MAX_RUN_ID + 1)).is_err());
        assert!(validate_run_id("a/b").is_err());
    }

    #[test]
    fn split_parts_add_up_exactly() {
        let totals = [0u64, 1, 2, 3, 7, 10, 99, 100, 101, 1_000_003, u64::MAX];
        for count in 1..=40u32 {
            for &total in &totals {
                let parts: Vec<u64> = (0..count).map(|i| split_count(total, i, count)).collect();
                let sum: u128 = parts.iter().map(|&p| u128::from(p)).sum();
                assert_eq!(sum, u128::from(total), "total {total} count {count}");
                // Floor plus remainder: non-increasing, differing by at most one.
                assert!(parts.windows(2).all(|w| w[0] >= w[1] && w[0] - w[1] <= 1));
                assert_eq!(
                    parts[0] - parts[count as usize - 1],
                    u64::from(total % u64::from(count) != 0)
                );
            }
        }
        assert_eq!(split_count(10, 0, 0), 0);
        assert_eq!(split_count(10, 3, 3), 0);
        assert_eq!(
            (0..3).map(|i| split_count(10, i, 3)).collect::<Vec<_>>(),
            [4, 3, 3]
        );
    }

    #[test]
    fn tenants_are_striped_once_each_and_match_split() {
        for count in 1..=17u32 {
            for tenants in [0u32, 1, 5, 16, 17, 100, 101] {
                for t in 0..tenants {
                    let owners = (0..count).filter(|&i| owns_tenant(t, i, count)).count();
                    assert_eq!(owners, 1, "tenant {t} of {tenants}, {count} shards");
                }
                for i in 0..count {
                    let owned = (0..tenants).filter(|&t| owns_tenant(t, i, count)).count() as u64;
                    assert_eq!(owned, split_count(u64::from(tenants), i, count));
                }
            }
        }
        assert!(!owns_tenant(0, 0, 0));
    }

    #[test]
    fn start_delay_window() {
        let start = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let grace = Duration::from_secs(5);
        let early = start - Duration::from_millis(1500);
        assert_eq!(
            start_delay(early, start, grace),
            Ok(Duration::from_millis(1500))
        );
        assert_eq!(start_delay(start, start, grace), Ok(Duration::ZERO));
        assert_eq!(
            start_delay(start + Duration::from_secs(5), start, grace),
            Ok(Duration::ZERO)
        );
        let e = start_delay(start + Duration::from_millis(5001), start, grace).unwrap_err();
        assert_eq!((e.late_ms, e.grace_ms), (5001, 5000));
        assert_eq!(
            e.to_string(),
            "missed the start window: HUBLOAD_START_AT was 1970-01-12T13:46:40.000Z, this shard was ready 5001 ms later (grace 5000 ms)"
        );
    }

    #[tokio::test]
    async fn waits_until_start() {
        let before = std::time::Instant::now();
        wait_for_start(
            SystemTime::now() + Duration::from_millis(300),
            Duration::from_secs(1),
        )
        .await
        .unwrap();
        let waited = before.elapsed();
        // Generous upper margin for a loaded machine; the lower bound is the point.
        assert!(
            waited >= Duration::from_millis(250) && waited < Duration::from_secs(5),
            "{waited:?}"
        );
    }

    #[tokio::test]
    async fn late_shard_is_refused_without_waiting() {
        let before = std::time::Instant::now();
        let e = wait_for_start(
            SystemTime::now() - Duration::from_secs(60),
            Duration::from_secs(10),
        )
        .await
        .unwrap_err();
        assert!(e.late_ms >= 60_000 && e.grace_ms == 10_000, "{e}");
        assert!(before.elapsed() < Duration::from_secs(1));
    }
}
