//! The judging flags (thresholds, the capacity finder and its SLO, what-if timeouts) → what
//! the run is judged by (`CapacityConfig` for the finder).
//!
//! Only the conversion of flags lives here, as for every other flag (the CLI is turned into a
//! validated config in one place, `config/`): each rule is parsed by `judge::rules`, the one
//! rule language, and what the rules mean, how they are judged and what judging produces are
//! all in `report/judge/`. What stays is the flags' own checks (defaults, ranges, which flags need
//! which), so a bad flag is refused before the run starts.

use std::time::Duration;

use serde::Serialize;

use super::error::ConfigError;
use super::parse::{list, opt, positive_duration, rate};
use crate::cli::RunArgs;
use crate::report::judge::rules::{Flag, Gate, Threshold};
use crate::shard_contract::ShardSpec;

/// The capacity finder's settings.
#[derive(Debug, Clone, Serialize)]
pub struct CapacityConfig {
    /// The SLO: every bound must hold for a level to pass.
    pub slo: Vec<Threshold>,
    /// Upper bound of the search.
    pub max: f64,
    /// Longest total time of the search.
    #[serde(with = "super::serialize::humantime_serde_str")]
    pub budget: Duration,
}

/// What a run is judged by.
#[derive(Debug, Clone)]
pub(super) struct Judging {
    pub thresholds: Vec<Threshold>,
    pub capacity: Option<CapacityConfig>,
    pub what_if: Vec<Duration>,
}

const DEFAULT_WHAT_IF: [Duration; 4] = [
    Duration::from_millis(100),
    Duration::from_millis(300),
    Duration::from_secs(1),
    Duration::from_secs(5),
];

fn threshold(flag: Flag) -> impl Fn(&str, &str) -> Result<Threshold, ConfigError> {
    move |_, t| Gate::parse(flag, t).map_err(ConfigError::Gate)
}

fn capacity(a: &RunArgs, shard: Option<&ShardSpec>) -> Result<Option<CapacityConfig>, ConfigError> {
    // Checked even without --find-capacity: a zero given is a mistake whether or not the
    // search runs (a profile may carry it for the day it does).
    let max = opt(&a.capacity_max).map_or(Ok(4096.0), |s| rate("capacity-max", s))?;
    let budget = opt(&a.capacity_budget).map_or(Ok(Duration::from_secs(600)), |s| {
        positive_duration("capacity-budget", s)
    })?;
    if !a.find_capacity {
        if a.slo.is_some() {
            return Err(ConfigError::Conflict(
                "--slo is used by --find-capacity; add --find-capacity or use --threshold".into(),
            ));
        }
        return Ok(None);
    }
    if shard.is_some_and(|s| s.count > 1) {
        return Err(ConfigError::Conflict(
            "--find-capacity cannot run sharded (HUBLOAD_SHARD_COUNT > 1): run it in one process"
                .into(),
        ));
    }
    let slo = opt(&a.slo).ok_or_else(|| {
        ConfigError::Conflict(
            "--find-capacity needs --slo, e.g. --slo 'p99<300ms,errors<1%'".into(),
        )
    })?;
    Ok(Some(CapacityConfig {
        slo: list("slo", slo, threshold(Flag::Slo))?,
        max,
        budget,
    }))
}

/// Thresholds, capacity search and what-if timeouts. `shard` is this process's part of a
/// sharded run (`None` when not sharded): the capacity search cannot be split.
pub(super) fn resolve(a: &RunArgs, shard: Option<&ShardSpec>) -> Result<Judging, ConfigError> {
    Ok(Judging {
        thresholds: a
            .threshold
            .iter()
            .map(|t| threshold(Flag::Threshold)("threshold", t))
            .collect::<Result<_, _>>()?,
        capacity: capacity(a, shard)?,
        what_if: opt(&a.what_if_timeouts).map_or(Ok(DEFAULT_WHAT_IF.to_vec()), |s| {
            list("what-if-timeouts", s, positive_duration)
        })?,
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_flags::{args, err};
    use super::*;

    fn shards(count: u32) -> ShardSpec {
        ShardSpec {
            index: 0,
            count,
            run_id: "r".into(),
            start_at: None,
        }
    }

    #[test]
    fn defaults_and_values() {
        let j = resolve(&args(&[]), None).unwrap();
        assert!(j.thresholds.is_empty() && j.capacity.is_none());
        assert_eq!(j.what_if, DEFAULT_WHAT_IF);
        let j = resolve(
            &args(&[
                "--threshold",
                "p99<300ms",
                "--threshold",
                "total:errors<1%",
                "--find-capacity",
                "--slo",
                "p99<1s, errors<2%",
                "--capacity-max",
                "64",
                "--what-if-timeouts",
                "50ms,2s",
            ]),
            Some(&shards(1)),
        )
        .unwrap();
        let texts: Vec<&str> = j.thresholds.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(texts, ["p99<300ms", "total:errors<1%"]);
        let c = j.capacity.unwrap();
        let slo: Vec<&str> = c.slo.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(slo, ["p99<1s", "errors<2%"]);
        assert_eq!((c.max, c.budget), (64.0, Duration::from_secs(600)));
        assert_eq!(
            j.what_if,
            [Duration::from_millis(50), Duration::from_secs(2)]
        );
    }

    #[test]
    fn rules_and_messages() {
        let two = shards(2);
        for (argv, shard, want) in [
            (
                &["--threshold", "p99<soon"][..],
                None,
                r#"invalid --threshold "p99<soon": the bound must be a duration"#,
            ),
            (
                &["--threshold", "p99<+10%"],
                None,
                r#"invalid --threshold "p99<+10%": +10% is relative to a baseline"#,
            ),
            (
                &["--find-capacity", "--slo", "p99<1s,p42<1s"],
                None,
                r#"invalid --slo "p42<1s": unknown metric"#,
            ),
            (
                &["--slo", "p99<1s"],
                None,
                "--slo is used by --find-capacity",
            ),
            (&["--find-capacity"], None, "--find-capacity needs --slo"),
            (
                &["--find-capacity", "--slo", "p99<1s"],
                Some(&two),
                "--find-capacity cannot run sharded (HUBLOAD_SHARD_COUNT > 1)",
            ),
            (
                &["--find-capacity", "--slo", "p99<1s,,errors<1%"],
                None,
                "invalid --slo `p99<1s,,errors<1%`: has an empty item",
            ),
            (
                &["--find-capacity", "--slo", "p99<1s", "--capacity-max", "0"],
                None,
                "invalid --capacity-max `0`",
            ),
            (
                &[
                    "--find-capacity",
                    "--slo",
                    "p99<1s",
                    "--capacity-budget",
                    "0s",
                ],
                None,
                "invalid --capacity-budget `0s`",
            ),
            (
                &["--what-if-timeouts", "1s,0s"],
                None,
                "invalid --what-if-timeouts `0s`",
            ),
        ] {
            err(resolve(&args(argv), shard), want);
        }
    }
}
