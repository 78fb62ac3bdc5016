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

/// A level longer than this without a duration (`--requests` alone) is worth a warning.
const LONG_LEVEL: Duration = Duration::from_secs(24 * 3600);

impl LevelSpec {
    /// A warning when the level's rate is so low that it cannot be meant: its events are
    /// further apart than the level lasts (it sends its first event and nothing more), or,
    /// with `--requests` alone, the level would last longer than a day. `None` otherwise,
    /// and always for the closed model.
    pub fn sparse_rate(&self) -> Option<String> {
        let Load::Open { rate, .. } = self.load else {
            return None;
        };
        let secs = |s: f64| Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX);
        let gap = secs(1.0 / rate);
        let label = self.load.label();
        match (self.stop.duration, self.stop.requests) {
            (Some(d), _) if gap > d => Some(format!(
                "--rate {label}: one event every {}, longer than the level's {} (it sends one event)",
                shown(gap),
                humantime::format_duration(d)
            )),
            (None, Some(n)) if secs(n as f64 / rate) > LONG_LEVEL => Some(format!(
                "--rate {label}: {n} events at this rate take {} (more than a day)",
                shown(secs(n as f64 / rate))
            )),
            _ => None,
        }
    }
}

/// `d` readably: whole days beyond two days (humantime would say months of 30.44 days),
/// whole seconds beyond a second.
fn shown(d: Duration) -> String {
    const DAY: u64 = 24 * 3600;
    match d.as_secs() {
        s if s >= 2 * DAY => format!("{:.1} days", d.as_secs_f64() / DAY as f64),
        s if s >= 1 => humantime::format_duration(Duration::from_secs(s)).to_string(),
        _ => humantime::format_duration(d).to_string(),
    }
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

    fn open(rate: f64, duration: Option<u64>, requests: Option<u64>) -> LevelSpec {
        LevelSpec {
            load: Load::Open {
                rate,
                max_inflight: 64,
            },
            stop: Stop {
                duration: duration.map(Duration::from_secs),
                requests,
            },
            warmup: Duration::ZERO,
            ramp_up: Duration::ZERO,
        }
    }

    #[test]
    fn sparse_rates_are_warned_of() {
        let w = open(0.0000001, Some(30), None).sparse_rate().unwrap();
        assert_eq!(
            w,
            "--rate 0.0000001/s: one event every 115.7 days, longer than the level's 30s (it sends one event)"
        );
        // Exactly one event per level's length is still a rate the level can show.
        assert_eq!(open(0.1, Some(10), None).sparse_rate(), None);
        assert!(open(0.05, Some(10), None).sparse_rate().is_some());
        let long = open(0.001, None, Some(100)).sparse_rate().unwrap();
        assert!(
            long.contains("100 events at this rate take 1day 3h 46m 40s"),
            "{long}"
        );
        assert_eq!(open(0.01, None, Some(100)).sparse_rate(), None);
        let closed = LevelSpec {
            load: Load::Closed { concurrency: 1 },
            ..open(1.0, Some(1), None)
        };
        assert_eq!(closed.sparse_rate(), None);
    }

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
