//! What one level asks for (load, stop condition), and `--plan` strings parsed into steps.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The load of one level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    /// Closed model: this many virtual publishers, each sending as soon as its previous event completes.
    Closed {
        /// Concurrent publishers.
        concurrency: u32,
    },
    /// Open model: events arrive at this rate whatever the hub does.
    Open {
        /// Events per second.
        rate: f64,
        /// Most events in flight; a scheduled send beyond it is dropped and counted.
        max_inflight: u32,
    },
}

impl Load {
    /// The row label: "200" for a concurrency, "500/s" for a rate.
    pub fn label(&self) -> String {
        match self {
            Load::Closed { concurrency } => concurrency.to_string(),
            Load::Open { rate, .. } => format!("{}/s", fmt_num(*rate)),
        }
    }
}

fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

/// When a level stops issuing new events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stop {
    /// After this long (measured time, warm-up excluded).
    pub duration: Option<Duration>,
    /// After exactly this many measured events.
    pub requests: Option<u64>,
}

/// One level of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelSpec {
    /// The load.
    pub load: Load,
    /// When to stop.
    pub stop: Stop,
    /// Unmeasured time before the level (excluded from statistics).
    pub warmup: Duration,
    /// Linear ramp from zero to the full load at the start of the measured time.
    pub ramp_up: Duration,
}

/// One step of a `--plan` string: a load value held for a duration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlanStep {
    /// Concurrency (closed) or rate (open), per the run's model.
    pub value: f64,
    /// How long the step lasts.
    pub duration: Duration,
}

impl PlanStep {
    /// Parse `"20,30s;50,1m;100,1m"`.
    pub fn parse_plan(s: &str) -> Result<Vec<PlanStep>, String> {
        let steps: Vec<PlanStep> = s
            .split(';')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::parse)
            .collect::<Result<_, _>>()?;
        if steps.is_empty() {
            return Err("a plan needs at least one step like `20,30s`".into());
        }
        Ok(steps)
    }
}

impl FromStr for PlanStep {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (v, d) = s
            .split_once(',')
            .ok_or_else(|| format!("step `{s}` is not `LOAD,DURATION` (e.g. `50,1m`)"))?;
        let value: f64 = v
            .trim()
            .parse()
            .map_err(|_| format!("step `{s}`: `{}` is not a number", v.trim()))?;
        if !(value.is_finite() && value > 0.0) {
            return Err(format!("step `{s}`: the load must be positive"));
        }
        let duration = humantime::parse_duration(d.trim())
            .map_err(|e| format!("step `{s}`: `{}` is not a duration ({e})", d.trim()))?;
        if duration.is_zero() {
            return Err(format!("step `{s}`: the duration must be positive"));
        }
        Ok(PlanStep { value, duration })
    }
}

impl fmt::Display for PlanStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{},{}",
            fmt_num(self.value),
            humantime::format_duration(self.duration)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_table() {
        let ok: &[(&str, &[(f64, u64)])] = &[
            ("20,30s", &[(20.0, 30)]),
            (
                "20,30s;50,1m;100,1m",
                &[(20.0, 30), (50.0, 60), (100.0, 60)],
            ),
            (" 5 , 2s ; 7.5,1m30s ;", &[(5.0, 2), (7.5, 90)]),
        ];
        for (s, want) in ok {
            let got = PlanStep::parse_plan(s).unwrap();
            let got: Vec<(f64, u64)> = got
                .iter()
                .map(|p| (p.value, p.duration.as_secs()))
                .collect();
            assert_eq!(&got, want, "{s}");
        }
        let bad = [
            ("", "at least one step"),
            ("20", "not `LOAD,DURATION`"),
            ("x,30s", "`x` is not a number"),
            ("20,soon", "`soon` is not a duration"),
            ("0,30s", "must be positive"),
            ("-5,30s", "must be positive"),
            ("20,0s", "duration must be positive"),
        ];
        for (s, msg) in bad {
            let e = PlanStep::parse_plan(s).unwrap_err();
            assert!(e.contains(msg), "{s}: {e}");
        }
    }

    #[test]
    fn labels() {
        assert_eq!(Load::Closed { concurrency: 200 }.label(), "200");
        assert_eq!(
            Load::Open {
                rate: 500.0,
                max_inflight: 1
            }
            .label(),
            "500/s"
        );
        assert_eq!(
            Load::Open {
                rate: 2.5,
                max_inflight: 1
            }
            .label(),
            "2.5/s"
        );
    }
}
