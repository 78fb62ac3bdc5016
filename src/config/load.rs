//! The load flags (concurrency, rate, plan, arrivals, duration, requests, warm-up, ramp-up,
//! in-flight bound) → the model and its levels.

use std::time::Duration;

use super::error::ConfigError;
use super::parse::{count, count32, duration, list, opt, positive_duration, rate, value};
use crate::cli::RunArgs;
use crate::engine::{Arrivals, LevelSpec, Load, PlanStep, Stop};
use crate::kind::Model;

/// Most closed-model concurrency.
const MAX_CONCURRENCY: u32 = 100_000;
/// Default measured time per level when neither `--duration` nor `--requests` is given.
const DEFAULT_DURATION: Duration = Duration::from_secs(30);

/// The levels of a run, and how they offer load.
#[derive(Debug, Clone)]
pub(super) struct LoadPlan {
    pub model: Model,
    pub levels: Vec<LevelSpec>,
    pub arrivals: Arrivals,
}

fn conflict(s: &str) -> ConfigError {
    ConfigError::Conflict(s.into())
}

/// The load model and levels. `timeout` (the client's) sizes the default in-flight bound of
/// an open level: enough for `rate × timeout` sends, within 64..=20000.
pub(super) fn resolve(a: &RunArgs, timeout: Duration) -> Result<LoadPlan, ConfigError> {
    // Which flags may go together, before any value is read.
    if a.rate.is_some() && a.concurrency.is_some() {
        return Err(conflict(
            "give --concurrency (closed model) or --rate (open model), not both",
        ));
    }
    if a.plan.is_some() && (a.rate.is_some() || a.concurrency.is_some()) {
        return Err(conflict(
            "--plan replaces --concurrency and --rate; give only one",
        ));
    }
    if a.open && a.plan.is_none() {
        return Err(conflict(
            "--open applies to --plan; for open-model levels without a plan use --rate",
        ));
    }
    let open = a.rate.is_some() || a.open;
    if a.arrivals.is_some() && !open {
        return Err(conflict(
            "--arrivals applies to the open model: add --rate (or --plan with --open)",
        ));
    }
    if a.max_inflight.is_some() && !open {
        return Err(conflict(
            "--max-inflight applies to the open model (--rate)",
        ));
    }

    let requests = opt(&a.requests)
        .map(|s| count("requests", s, 1))
        .transpose()?;
    let duration_flag = opt(&a.duration)
        .map(|s| positive_duration("duration", s))
        .transpose()?;
    let level_duration = match (duration_flag, requests) {
        (Some(d), _) => Some(d),
        (None, Some(_)) => None,
        (None, None) => Some(DEFAULT_DURATION),
    };
    let warmup = opt(&a.warmup).map_or(Ok(Duration::ZERO), |s| duration("warmup", s))?;
    let ramp_up = opt(&a.ramp_up).map_or(Ok(Duration::ZERO), |s| duration("ramp-up", s))?;
    if level_duration.is_some_and(|d| ramp_up > d) {
        return Err(conflict("--ramp-up must not be longer than --duration"));
    }
    let arrivals = opt(&a.arrivals).map_or(Ok(Arrivals::Constant), |s| value("arrivals", s))?;
    let max_inflight = opt(&a.max_inflight)
        .map(|s| count32("max-inflight", s, 1))
        .transpose()?;
    let open_load = |rate: f64| Load::Open {
        rate,
        max_inflight: max_inflight
            .unwrap_or_else(|| ((rate * timeout.as_secs_f64()).ceil() as u32).clamp(64, 20_000)),
    };
    let level = |load, duration| LevelSpec {
        load,
        stop: Stop { duration, requests },
        warmup,
        ramp_up,
    };

    let (model, levels) = if let Some(plan) = opt(&a.plan) {
        let steps =
            PlanStep::parse_plan(plan).map_err(|e| ConfigError::invalid("plan", plan, e))?;
        let levels = steps
            .iter()
            .map(|s| {
                let load = if a.open {
                    open_load(s.value)
                } else {
                    Load::Closed {
                        concurrency: s.value.round().max(1.0) as u32,
                    }
                };
                level(load, Some(s.duration))
            })
            .collect();
        (if a.open { Model::Open } else { Model::Closed }, levels)
    } else if let Some(r) = opt(&a.rate) {
        let rates = list("rate", r, rate)?;
        let levels = rates
            .into_iter()
            .map(|r| level(open_load(r), level_duration))
            .collect();
        (Model::Open, levels)
    } else {
        let cs = opt(&a.concurrency).map_or(Ok(vec![20]), |s| {
            list("concurrency", s, |f, v| count32(f, v, 1))
        })?;
        if let Some(c) = cs.iter().find(|c| **c > MAX_CONCURRENCY) {
            return Err(ConfigError::invalid(
                "concurrency",
                &c.to_string(),
                "must be at most 100000",
            ));
        }
        let levels = cs
            .into_iter()
            .map(|c| level(Load::Closed { concurrency: c }, level_duration))
            .collect();
        (Model::Closed, levels)
    };
    Ok(LoadPlan {
        model,
        levels,
        arrivals,
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_flags::{args, err};
    use super::*;

    const T: Duration = Duration::from_secs(5);

    fn loads(argv: &[&str]) -> (Model, Vec<Load>) {
        let p = resolve(&args(argv), T).unwrap();
        (p.model, p.levels.iter().map(|l| l.load).collect())
    }

    #[test]
    fn models_and_levels() {
        let closed = |c| Load::Closed { concurrency: c };
        let open = |rate, max_inflight| Load::Open { rate, max_inflight };
        let table: &[(&[&str], Model, Vec<Load>)] = &[
            (&[], Model::Closed, vec![closed(20)]),
            (
                &["--concurrency", "1, 4"],
                Model::Closed,
                vec![closed(1), closed(4)],
            ),
            // Default in-flight bound: rate × timeout, at least 64.
            (
                &["--rate", "10,100"],
                Model::Open,
                vec![open(10.0, 64), open(100.0, 500)],
            ),
            (
                &["--rate", "10", "--max-inflight", "7"],
                Model::Open,
                vec![open(10.0, 7)],
            ),
            (
                &["--plan", "2.4,1s;5,2s"],
                Model::Closed,
                vec![closed(2), closed(5)],
            ),
            (
                &["--plan", "50,1s", "--open"],
                Model::Open,
                vec![open(50.0, 250)],
            ),
        ];
        for (argv, model, want) in table {
            assert_eq!(loads(argv), (*model, want.clone()), "{argv:?}");
        }
        let p = resolve(&args(&["--requests", "5", "--warmup", "1s"]), T).unwrap();
        let l = &p.levels[0];
        assert_eq!((l.stop.duration, l.stop.requests), (None, Some(5)));
        assert_eq!(l.warmup, Duration::from_secs(1));
        let p = resolve(&args(&["--plan", "3,2s", "--requests", "9"]), T).unwrap();
        let s = p.levels[0].stop;
        assert_eq!(
            (s.duration, s.requests),
            (Some(Duration::from_secs(2)), Some(9))
        );
        let p = resolve(&args(&["--rate", "5", "--arrivals", "poisson"]), T).unwrap();
        assert_eq!(p.arrivals, Arrivals::Poisson);
    }

    #[test]
    fn rules_and_messages() {
        for (argv, want) in [
            (
                &["--rate", "10", "--concurrency", "5"][..],
                "give --concurrency (closed model) or --rate (open model), not both",
            ),
            (
                &["--plan", "5,1s", "--rate", "5"],
                "--plan replaces --concurrency and --rate",
            ),
            (
                &["--plan", "5,1s", "--concurrency", "5"],
                "--plan replaces --concurrency and --rate",
            ),
            (&["--open"], "--open applies to --plan"),
            (&["--open", "--rate", "5"], "--open applies to --plan"),
            (
                &["--arrivals", "poisson"],
                "--arrivals applies to the open model",
            ),
            (
                &["--arrivals", "poisson", "--plan", "5,1s"],
                "--arrivals applies to the open model",
            ),
            (
                &["--max-inflight", "5"],
                "--max-inflight applies to the open model",
            ),
            (
                &["--concurrency", "1,,4"],
                "invalid --concurrency `1,,4`: has an empty item",
            ),
            (
                &["--concurrency", "1,4,"],
                "invalid --concurrency `1,4,`: has an empty item",
            ),
            (
                &["--rate", "5,,6"],
                "invalid --rate `5,,6`: has an empty item",
            ),
            (
                &["--concurrency", "10,0"],
                "invalid --concurrency `0`: must be at least 1",
            ),
            (
                &["--concurrency", "100001"],
                "invalid --concurrency `100001`: must be at most 100000",
            ),
            (
                &["--rate", "0"],
                "invalid --rate `0`: must be a positive number",
            ),
            (
                &["--duration", "1s", "--ramp-up", "2s"],
                "--ramp-up must not be longer than --duration",
            ),
            (
                &["--duration", "0s"],
                "invalid --duration `0s`: must be longer than zero",
            ),
            (
                &["--requests", "0"],
                "invalid --requests `0`: must be at least 1",
            ),
            (
                &["--rate", "5", "--arrivals", "bursty"],
                "invalid --arrivals `bursty`",
            ),
            (&["--plan", "nonsense"], "invalid --plan `nonsense`"),
        ] {
            err(resolve(&args(argv), T), want);
        }
    }
}
