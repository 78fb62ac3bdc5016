//! `--surge` (the noisy neighbour) → a validated `Surge`: open model only, tenants that exist,
//! levels long enough to hold a baseline and a surge, and no ramp-up (the baseline runs at the
//! level's full rate). `@levelN` doubles the surged levels' durations: a baseline pass, then
//! the surged pass.

use super::error::ConfigError;
use super::parse::opt;
use crate::cli::RunArgs;
use crate::engine::LevelSpec;
use crate::kind::Model;
use crate::report::judge::rules::Threshold;
use crate::workload::{Surge, SurgeStart, WorkloadConfig};

/// The surge, checked against the model, the tenants and the levels; with `@levelN`, level N
/// and every later one get twice their duration (their baseline pass, then the surged pass).
pub(super) fn resolve(
    a: &RunArgs,
    model: Model,
    levels: &mut [LevelSpec],
    workload: &WorkloadConfig,
) -> Result<Option<Surge>, ConfigError> {
    let Some(raw) = opt(&a.surge) else {
        return Ok(None);
    };
    let bad = |why: String| ConfigError::invalid("surge", raw, why);
    if model == Model::Closed {
        return Err(bad("needs the open model (--rate): a closed loop cannot raise one tenant's rate without taking it from the others".into()));
    }
    let s: Surge = raw.parse().map_err(bad)?;
    if let Some(t) = s.tenants.iter().find(|t| **t >= workload.tenants) {
        return Err(bad(format!(
            "there is no tenant {t}: --tenants {} makes tenant0000..tenant{:04}",
            workload.tenants,
            workload.tenants - 1
        )));
    }
    if s.tenants.len() as u32 >= workload.tenants {
        return Err(bad(
            "every tenant would surge: leave at least one quiet tenant to compare".into(),
        ));
    }
    for l in levels.iter() {
        let Some(d) = l.stop.duration else {
            return Err(bad(
                "needs levels with a duration (--duration), not --requests".into(),
            ));
        };
        match s.start {
            SurgeStart::At(from) if d < from + std::time::Duration::from_secs(1) => {
                return Err(bad(format!(
                    "START must leave at least 1s of surge in every level (--duration {})",
                    humantime::format_duration(d)
                )));
            }
            // The baseline pass and the surged pass split at a whole second of the level.
            SurgeStart::Level(_) if d.subsec_nanos() != 0 => {
                return Err(bad(format!(
                    "@levelN needs levels of whole seconds (--duration {}): the baseline pass and the surged pass meet at a second",
                    humantime::format_duration(d)
                )));
            }
            _ => {}
        }
    }
    if let SurgeStart::Level(n) = s.start {
        if n as usize > levels.len() {
            return Err(bad(format!(
                "there is no level {n}: the run has {} level(s), numbered from 1",
                levels.len()
            )));
        }
        if a.find_capacity {
            return Err(bad(
                "@levelN needs a sweep, not --find-capacity (its probes are not numbered levels): give a time, e.g. @30s".into(),
            ));
        }
    }
    if levels.iter().any(|l| !l.ramp_up.is_zero()) {
        return Err(bad(
            "cannot be combined with --ramp-up: the baseline seconds would run below the level's rate, so the comparison with the surge would not hold".into(),
        ));
    }
    if a.web.is_some() {
        return Err(bad(
            "cannot be steered: leave out --web (a paused level would keep surging)".into(),
        ));
    }
    if let SurgeStart::Level(n) = s.start {
        for l in &mut levels[n as usize - 1..] {
            l.stop.duration = l.stop.duration.map(|d| d * 2);
        }
    }
    Ok(Some(s))
}

/// The delivery verdict's noise floor when `--noise-floor` is not given.
pub const NOISE_FLOOR: std::time::Duration = std::time::Duration::from_millis(100);

/// `--noise-floor`: a duration, and only with a surge (there is no verdict to read it).
pub(super) fn noise_floor(
    a: &RunArgs,
    surge: Option<&Surge>,
) -> Result<std::time::Duration, ConfigError> {
    let Some(raw) = opt(&a.noise_floor) else {
        return Ok(NOISE_FLOOR);
    };
    let d = super::parse::duration("noise-floor", raw)?;
    if surge.is_none() {
        return Err(ConfigError::invalid(
            "noise-floor",
            raw,
            "reads the delivery isolation verdict of a surge: add --surge (e.g. tenant0007x10@30s)",
        ));
    }
    Ok(d)
}

/// A `quiet_*` rule needs a surge to judge: without one it could only fail, so it is refused
/// before any load is sent.
pub(super) fn check_gates<'a>(
    rules: impl IntoIterator<Item = &'a Threshold>,
    surge: Option<&Surge>,
) -> Result<(), ConfigError> {
    match rules.into_iter().find(|r| r.metric.is_isolation()) {
        Some(r) if surge.is_none() => Err(ConfigError::Conflict(format!(
            "{} {:?} judges the isolation verdict of a surge: add --surge (e.g. tenant0007x10@30s)",
            r.flag.name(),
            r.text
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_flags::{args, err};
    use super::super::{resolve, RunConfig};

    fn run(argv: &[&str]) -> Result<RunConfig, super::ConfigError> {
        resolve(&args(argv))
    }

    #[test]
    fn an_open_run_takes_it() {
        let c = run(&[
            "--rate",
            "100",
            "--duration",
            "10s",
            "--surge",
            "tenant0003x10@4s",
        ])
        .unwrap();
        let s = c.surge.unwrap();
        assert_eq!((s.tenants, s.factor), (vec![3], 10.0));
        assert!(run(&["--rate", "100"]).unwrap().surge.is_none());
    }

    #[test]
    fn refusals_name_the_field() {
        for (argv, want) in [
            (
                &["--concurrency", "5", "--surge", "tenant0003x10@4s"][..],
                "invalid --surge `tenant0003x10@4s`: needs the open model (--rate): a closed loop cannot raise one tenant's rate",
            ),
            (
                &["--rate", "5", "--surge", "tenant0003x1@4s"],
                "invalid --surge `tenant0003x1@4s`: K must be above 1",
            ),
            (
                &["--rate", "5", "--surge", "tenant0010x2@4s"],
                "invalid --surge `tenant0010x2@4s`: there is no tenant 10: --tenants 10 makes tenant0000..tenant0009",
            ),
            (
                &["--rate", "5", "--tenants", "1", "--surge", "0x2@4s"],
                "invalid --surge `0x2@4s`: every tenant would surge",
            ),
            (
                &["--rate", "5", "--requests", "100", "--surge", "0x2@4s"],
                "invalid --surge `0x2@4s`: needs levels with a duration",
            ),
            (
                &["--rate", "5", "--noise-floor", "50"],
                "invalid --noise-floor `50`: is not a duration",
            ),
            (
                &["--rate", "5", "--noise-floor", "50ms"],
                "invalid --noise-floor `50ms`: reads the delivery isolation verdict of a surge: add --surge",
            ),
            (
                &["--rate", "5", "--threshold", "quiet_errors<1%"],
                "--threshold \"quiet_errors<1%\" judges the isolation verdict of a surge: add --surge",
            ),
            (
                &["--rate", "5", "--duration", "4s", "--surge", "0x2@4s"],
                "invalid --surge `0x2@4s`: START must leave at least 1s of surge in every level (--duration 4s)",
            ),
            (
                &["--rate", "5", "--duration", "10s", "--ramp-up", "2s", "--surge", "0x2@4s"],
                "invalid --surge `0x2@4s`: cannot be combined with --ramp-up",
            ),
            (
                &["--rate", "5,10", "--surge", "0x2@level3"],
                "invalid --surge `0x2@level3`: there is no level 3: the run has 2 level(s), numbered from 1",
            ),
            (
                &["--rate", "5", "--surge", "0x2@level0"],
                "invalid --surge `0x2@level0`: `level0` is not a level",
            ),
            (
                &["--rate", "5", "--surge", "0x2@leveltwo"],
                "invalid --surge `0x2@leveltwo`: `leveltwo` is not a level",
            ),
            (
                &["--concurrency", "5,10", "--surge", "0x2@level2"],
                "invalid --surge `0x2@level2`: needs the open model (--rate)",
            ),
            (
                &["--rate", "5,10", "--requests", "100", "--surge", "0x2@level2"],
                "invalid --surge `0x2@level2`: needs levels with a duration",
            ),
            (
                &["--rate", "5,10", "--duration", "2500ms", "--surge", "0x2@level2"],
                "invalid --surge `0x2@level2`: @levelN needs levels of whole seconds (--duration 2s 500ms)",
            ),
            (
                &["--rate", "5,10", "--ramp-up", "1s", "--surge", "0x2@level2"],
                "invalid --surge `0x2@level2`: cannot be combined with --ramp-up",
            ),
            (
                &["--rate", "5", "--find-capacity", "--slo", "p99<1s", "--surge", "0x2@level1"],
                "invalid --surge `0x2@level1`: @levelN needs a sweep, not --find-capacity",
            ),
        ] {
            err(run(argv), want);
        }
    }

    #[test]
    fn a_level_start_doubles_that_level_and_the_later_ones() {
        let c = run(&[
            "--rate",
            "5,10,20",
            "--duration",
            "3s",
            "--surge",
            "0x2@level2",
        ])
        .unwrap();
        let secs: Vec<u64> = (c.levels.iter())
            .map(|l| l.stop.duration.unwrap().as_secs())
            .collect();
        assert_eq!(secs, [3, 6, 6]);
        assert_eq!(c.shown["surge"], "0x2@level2");
        assert_eq!(c.shown["surge_from_s"], serde_json::json!([null, 3, 3]));
        // The time form keeps every level's duration and writes no starts.
        let t = run(&["--rate", "5,10", "--duration", "3s", "--surge", "0x2@1s"]).unwrap();
        assert!(t
            .levels
            .iter()
            .all(|l| l.stop.duration.unwrap().as_secs() == 3));
        assert!(t.shown.get("surge_from_s").is_none());
    }
}
