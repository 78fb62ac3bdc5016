//! `--threshold` bounds such as `p99<300ms`, `errors<1%`, `rate>=500`, judged per level or on TOTAL.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;

use crate::report::LevelReport;

/// What a threshold measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Mean latency.
    Avg,
    /// A latency percentile (50, 90, 95, 99, 99.9 as 999).
    P(u16),
    /// Largest latency.
    Max,
    /// Attempts not accepted (percent, or a count).
    Errors,
    /// Client-side timeouts (percent, or a count).
    Timeouts,
    /// Achieved throughput, attempts per second.
    Rate,
}

/// Comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Op {
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
}

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
        }
    }
    fn as_str(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }
}

/// Which rows a threshold judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Every level row.
    EachLevel,
    /// The TOTAL row only.
    Total,
}

/// One bound. `value` is in ms for latency, percent when `percent`, else a count or a rate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Threshold {
    /// The text as given.
    pub text: String,
    pub scope: Scope,
    pub metric: Metric,
    pub op: Op,
    pub value: f64,
    /// Errors/timeouts given as a percentage of attempts.
    pub percent: bool,
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for Threshold {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim().to_string();
        let (scope, rest) = match text.strip_prefix("total:") {
            Some(r) => (Scope::Total, r.trim()),
            None => (Scope::EachLevel, text.as_str()),
        };
        let pos = rest
            .find(['<', '>'])
            .ok_or_else(|| format!("`{text}` has no < or > (e.g. p99<300ms)"))?;
        let (name, tail) = rest.split_at(pos);
        let (op, value) = if let Some(v) = tail.strip_prefix("<=") {
            (Op::Le, v)
        } else if let Some(v) = tail.strip_prefix(">=") {
            (Op::Ge, v)
        } else if let Some(v) = tail.strip_prefix('<') {
            (Op::Lt, v)
        } else {
            (Op::Gt, &tail[1..])
        };
        let (name, value) = (name.trim(), value.trim());
        let metric = match name {
            "avg" | "mean" => Metric::Avg,
            "median" | "p50" => Metric::P(50),
            "p90" => Metric::P(90),
            "p95" => Metric::P(95),
            "p99" => Metric::P(99),
            "p999" | "p99.9" => Metric::P(999),
            "max" => Metric::Max,
            "errors" | "error" => Metric::Errors,
            "timeouts" => Metric::Timeouts,
            "rate" | "throughput" => Metric::Rate,
            _ => {
                return Err(format!(
                    "`{text}`: unknown metric `{name}` (avg, median, p90, p95, p99, p999, max, errors, timeouts, rate)"
                ))
            }
        };
        let bad = |why: &str| format!("`{text}`: {why}");
        let (value, percent) = match metric {
            Metric::Avg | Metric::P(_) | Metric::Max => {
                let d: Duration = humantime::parse_duration(value)
                    .map_err(|_| bad("the bound must be a duration like 300ms"))?;
                (d.as_secs_f64() * 1000.0, false)
            }
            Metric::Errors | Metric::Timeouts => match value.strip_suffix('%') {
                Some(p) => (p.trim().parse().map_err(|_| bad("bad percentage"))?, true),
                None => (
                    value
                        .parse()
                        .map_err(|_| bad("the bound must be N or N%"))?,
                    false,
                ),
            },
            Metric::Rate => (
                value
                    .strip_suffix("/s")
                    .unwrap_or(value)
                    .parse()
                    .map_err(|_| bad("the bound must be a number (per second)"))?,
                false,
            ),
        };
        if !f64::is_finite(value) || value < 0.0 {
            return Err(bad("the bound must be a non-negative number"));
        }
        Ok(Threshold {
            text,
            scope,
            metric,
            op,
            value,
            percent,
        })
    }
}

impl Threshold {
    /// The measured value this threshold compares, from one row.
    pub fn actual(&self, row: &LevelReport) -> f64 {
        let ms = |us: u64| us as f64 / 1000.0;
        let share = |n: u64| {
            if self.percent {
                if row.samples == 0 {
                    0.0
                } else {
                    n as f64 * 100.0 / row.samples as f64
                }
            } else {
                n as f64
            }
        };
        match self.metric {
            Metric::Avg => row.latency_us.mean / 1000.0,
            Metric::P(50) => ms(row.latency_us.p50),
            Metric::P(90) => ms(row.latency_us.p90),
            Metric::P(95) => ms(row.latency_us.p95),
            Metric::P(99) => ms(row.latency_us.p99),
            Metric::P(_) => ms(row.latency_us.p999),
            Metric::Max => ms(row.latency_us.max),
            Metric::Errors => share(row.samples - row.counts.get("accepted").copied().unwrap_or(0)),
            Metric::Timeouts => {
                share(row.timeouts.connect + row.timeouts.pool_wait + row.timeouts.response)
            }
            Metric::Rate => row.throughput,
        }
    }

    fn unit(&self) -> &'static str {
        match self.metric {
            Metric::Avg | Metric::P(_) | Metric::Max => "ms",
            Metric::Errors | Metric::Timeouts if self.percent => "%",
            Metric::Rate => "/s",
            _ => "",
        }
    }

    /// Judge one row.
    pub fn check(&self, row: &LevelReport) -> Verdict {
        let actual = self.actual(row);
        Verdict {
            threshold: self.text.clone(),
            level: row.label.clone(),
            actual: format!("{actual:.3}{}", self.unit()),
            bound: format!("{} {}{}", self.op.as_str(), self.value, self.unit()),
            passed: self.op.holds(actual, self.value),
        }
    }
}

/// One threshold judged on one row.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Verdict {
    pub threshold: String,
    pub level: String,
    pub actual: String,
    pub bound: String,
    pub passed: bool,
}

/// Judge every threshold on the rows it applies to.
pub fn judge(
    thresholds: &[Threshold],
    levels: &[LevelReport],
    total: Option<&LevelReport>,
) -> Vec<Verdict> {
    let mut out = Vec::new();
    for t in thresholds {
        match t.scope {
            Scope::EachLevel => out.extend(levels.iter().map(|l| t.check(l))),
            Scope::Total => out.extend(total.map(|l| t.check(l))),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_table() {
        let ok: &[(&str, Scope, Metric, Op, f64, bool)] = &[
            (
                "p99<300ms",
                Scope::EachLevel,
                Metric::P(99),
                Op::Lt,
                300.0,
                false,
            ),
            (
                "total:p95<=1s",
                Scope::Total,
                Metric::P(95),
                Op::Le,
                1000.0,
                false,
            ),
            (
                "errors<1%",
                Scope::EachLevel,
                Metric::Errors,
                Op::Lt,
                1.0,
                true,
            ),
            (
                "errors<=0",
                Scope::EachLevel,
                Metric::Errors,
                Op::Le,
                0.0,
                false,
            ),
            (
                "rate>=500",
                Scope::EachLevel,
                Metric::Rate,
                Op::Ge,
                500.0,
                false,
            ),
            (
                "throughput > 99.5/s",
                Scope::EachLevel,
                Metric::Rate,
                Op::Gt,
                99.5,
                false,
            ),
            (
                "timeouts<0.5%",
                Scope::EachLevel,
                Metric::Timeouts,
                Op::Lt,
                0.5,
                true,
            ),
            (
                "avg<50ms",
                Scope::EachLevel,
                Metric::Avg,
                Op::Lt,
                50.0,
                false,
            ),
            (
                "p99.9<2s",
                Scope::EachLevel,
                Metric::P(999),
                Op::Lt,
                2000.0,
                false,
            ),
        ];
        for (s, scope, metric, op, value, percent) in ok {
            let t: Threshold = s.parse().unwrap();
            assert_eq!(
                (t.scope, t.metric, t.op, t.value, t.percent),
                (*scope, *metric, *op, *value, *percent),
                "{s}"
            );
        }
        for (s, msg) in [
            ("p99", "has no < or >"),
            ("p42<1s", "unknown metric `p42`"),
            ("p99<fast", "must be a duration"),
            ("errors<lots%", "bad percentage"),
            ("rate>=-1", "non-negative"),
        ] {
            let e = s.parse::<Threshold>().unwrap_err();
            assert!(e.contains(msg), "{s}: {e}");
        }
    }
}
