//! `--surge` (the noisy neighbour) → a validated `Surge`: open model only, tenants that exist,
//! levels long enough to hold a baseline and a surge, and no ramp-up (the baseline runs at the
//! level's full rate).

use super::error::ConfigError;
use super::parse::opt;
use crate::cli::RunArgs;
use crate::engine::LevelSpec;
use crate::kind::Model;
use crate::report::judge::rules::Threshold;
use crate::workload::{Surge, WorkloadConfig};

/// The surge, checked against the model, the tenants and the levels.
pub(super) fn resolve(
    a: &RunArgs,
    model: Model,
    levels: &[LevelSpec],
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
    for l in levels {
        let Some(d) = l.stop.duration else {
            return Err(bad(
                "needs levels with a duration (--duration), not --requests".into(),
            ));
        };
        if d < s.from + std::time::Duration::from_secs(1) {
            return Err(bad(format!(
                "START must leave at least 1s of surge in every level (--duration {})",
                humantime::format_duration(d)
            )));
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
        ] {
            err(run(argv), want);
        }
    }
}
