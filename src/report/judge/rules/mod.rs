//! The one gate language: `--threshold`, `--slo` and `compare --fail-if` rules such as
//! `p99<300ms`, `total:errors<1%`, `tenant_fairness>0.95`, `p99>+10%`, parsed by one parser
//! against one metric type (`judge::metric`) into one `Gate`. Plain data: `threshold` judges
//! absolute bounds on a run's rows, `fail_if` a comparison of two runs.
//!
//! Grammar `[total:]METRIC OP VALUE` (docs/gates.md): an absolute bound is a value in the
//! metric's unit; a `--fail-if` delta is a signed number and a unit, states the failure (`<`,
//! `>`) and has no `total:`.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;

pub use super::metric::{InCompare, Metric, METRICS};

#[cfg(test)]
mod foregone_tests;
#[cfg(test)]
mod tests;

/// Which flag a rule came from: it decides what the value may be, and errors name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Flag {
    /// `--threshold`: judged on the run's rows; failing → exit 1.
    Threshold,
    /// `--slo`: the capacity finder's bounds.
    Slo,
    /// `compare --fail-if`: judged on the deltas between two runs.
    FailIf,
}

impl Flag {
    /// The flag as typed: `--threshold`, `--slo`, `--fail-if`.
    pub fn name(self) -> &'static str {
        match self {
            Flag::Threshold => "--threshold",
            Flag::Slo => "--slo",
            Flag::FailIf => "--fail-if",
        }
    }

    fn relative(self) -> bool {
        self == Flag::FailIf
    }

    fn example(self) -> &'static str {
        if self.relative() {
            "p99>+10%"
        } else {
            "p99<300ms"
        }
    }

    fn ops(self) -> &'static [(&'static str, Op)] {
        if self.relative() {
            &[("<", Op::Lt), (">", Op::Gt)]
        } else {
            &[
                ("<=", Op::Le),
                (">=", Op::Ge),
                ("<", Op::Lt),
                (">", Op::Gt),
                ("=", Op::Eq),
            ]
        }
    }

    /// The metrics the flag takes, for an error message: compare's by their keyword, a run's
    /// by their first spelling.
    fn metrics(self) -> String {
        let names: Vec<&str> = METRICS
            .iter()
            .filter(|(_, _, c)| !self.relative() || *c != InCompare::No)
            .map(|(names, m, _)| match self.relative() {
                true => m.keyword(),
                false => names[0],
            })
            .collect();
        let (last, rest) = names.split_last().expect("the table is not empty");
        format!("{} or {last}", rest.join(", "))
    }
}

/// Comparison operator: the rule's side of the bound.
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
    /// `=`: exactly (e.g. `lost=0`).
    #[serde(rename = "=")]
    Eq,
}

impl Op {
    /// `a OP b`.
    pub fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Eq => a == b,
        }
    }

    /// `<`, `<=`, `>`, `>=`.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Eq => "=",
        }
    }
}

/// Which rows a rule judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Every level row.
    EachLevel,
    /// The TOTAL row only (`total:`).
    Total,
}

/// The bound a rule compares with, in its unit: under `--fail-if`, a delta rule's is signed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// A latency, ms.
    Ms(f64),
    /// A share of attempts, % (errors, timeouts); under `--fail-if`, percentage points.
    Percent(f64),
    /// A count of attempts (errors, timeouts), or attempts per second (rate).
    Number(f64),
    /// Relative to the baseline's value, % (`--fail-if` only).
    Relative(f64),
}

impl Bound {
    /// The number, in the bound's unit.
    pub fn value(self) -> f64 {
        match self {
            Bound::Ms(v) | Bound::Percent(v) | Bound::Number(v) | Bound::Relative(v) => v,
        }
    }
}

/// One parsed rule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gate {
    /// The text as given (trimmed).
    pub text: String,
    pub flag: Flag,
    pub scope: Scope,
    pub metric: Metric,
    pub op: Op,
    pub bound: Bound,
}

/// A `--threshold` or `--slo` rule: a gate with an absolute bound.
pub type Threshold = Gate;

/// A rule that does not parse: one line naming the flag, the rule and the bad part.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} {rule:?}: {message}", flag.name())]
pub struct GateError {
    pub flag: Flag,
    pub rule: String,
    pub message: String,
}

fn number(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

impl Gate {
    /// Parse `text` as a rule of `flag`.
    pub fn parse(flag: Flag, text: &str) -> Result<Gate, GateError> {
        let err = |message: String| GateError {
            flag,
            rule: text.to_string(),
            message,
        };
        let trimmed = text.trim();
        let (scope, rest) = match trimmed.strip_prefix("total:") {
            Some(r) if !flag.relative() => (Scope::Total, r),
            _ => (Scope::EachLevel, trimmed),
        };
        let (marks, missing): (&[char], _) = match flag.relative() {
            true => (&['<', '>'], "'>' or '<'"),
            false => (&['<', '>', '='], "'>', '<' or '='"),
        };
        let Some(at) = rest.find(marks) else {
            return Err(err(format!(
                "missing {missing} (expected e.g. {})",
                flag.example()
            )));
        };
        let name = rest[..at].trim();
        let metric = Metric::named(name)
            .filter(|m| m.in_compare() != InCompare::No || !flag.relative())
            .ok_or_else(|| {
                err(format!(
                    "unknown metric {name:?} (expected {})",
                    flag.metrics()
                ))
            })?;
        let tail = &rest[at..];
        let &(op_text, op) = flag
            .ops()
            .iter()
            .find(|(o, _)| tail.starts_with(o))
            .expect("every flag accepts what `marks` finds");
        let value = tail[op_text.len()..].trim();
        let bound = if flag.relative() && metric.in_compare() == InCompare::Delta {
            delta_bound(metric, value).map_err(err)?
        } else {
            let bound = absolute_bound(metric, value).map_err(err)?;
            if let Some(why) = foregone(flag, metric, op, bound) {
                return Err(err(why));
            }
            bound
        };
        Ok(Gate {
            text: trimmed.to_string(),
            flag,
            scope,
            metric,
            op,
            bound,
        })
    }
}

impl Gate {
    /// Whether the rule bounds a delta between two runs (`--fail-if` on a compared column);
    /// otherwise it bounds one run's value (`--threshold`, `--slo`, and `--fail-if` on the
    /// candidate's fairness and isolation figures).
    pub fn is_delta(&self) -> bool {
        self.flag.relative() && self.metric.in_compare() == InCompare::Delta
    }
}

/// An absolute bound: a non-negative value in the metric's unit.
fn absolute_bound(metric: Metric, value: &str) -> Result<Bound, String> {
    let signed = value.starts_with(['+', '-']);
    if signed && value.ends_with('%') && !metric.is_count() && !metric.is_isolation() {
        return Err(format!(
            "{value} is relative to a baseline; only compare --fail-if has one (give e.g. p99<300ms)"
        ));
    }
    let bound = match metric {
        m if m.is_isolation() => Bound::Percent(
            number(value.strip_suffix('%').unwrap_or(value))
                .ok_or("the bound must be a percentage (e.g. 20%)")?,
        ),
        m if m.is_latency() => {
            let d: Duration = humantime::parse_duration(value)
                .map_err(|_| "the bound must be a duration like 300ms".to_string())?;
            Bound::Ms(d.as_secs_f64() * 1000.0)
        }
        m if m.is_count() => match value.strip_suffix('%') {
            Some(p) => Bound::Percent(number(p).ok_or("bad percentage")?),
            None => Bound::Number(number(value).ok_or("the bound must be N or N%")?),
        },
        m if m.is_fairness() => {
            Bound::Number(number(value).ok_or("the bound must be a number (e.g. 0.95)")?)
        }
        _ => Bound::Number(
            number(value.strip_suffix("/s").unwrap_or(value))
                .ok_or("the bound must be a number (per second)")?,
        ),
    };
    if bound.value() < 0.0 {
        return Err("the bound must be a non-negative number".into());
    }
    Ok(bound)
}

/// Why the rule `metric OP bound` (an absolute bound, never negative) holds whatever is
/// measured, or holds for nothing, said for `flag` (a `--fail-if` rule fails when it holds);
/// `None` when a measurement can go either way.
///
/// What a measurement can be: every metric is at least 0, a share of attempts (errors,
/// timeouts as `%`, the quiet tenants' errors) at most 100 %, and Jain's index at most 1.
/// Delivery shares are not capped: duplicates, redeliveries and unexpected deliveries may
/// outnumber the expected ones (docs/gates.md). A p99 increase is at least −100 %, below any
/// bound given (never negative): no rule on it is foregone.
fn foregone(flag: Flag, metric: Metric, op: Op, bound: Bound) -> Option<String> {
    if matches!(
        metric,
        Metric::QuietP99Increase | Metric::QuietDeliveryP99Increase
    ) {
        return None;
    }
    let b = bound.value();
    let share = matches!(
        (metric, bound),
        (Metric::Errors | Metric::Timeouts, Bound::Percent(_))
    ) || matches!(metric, Metric::QuietErrors | Metric::QuietDeliveryLoss);
    let index = metric == Metric::TenantFairness;
    let cap = share.then_some(100.0).or(index.then_some(1.0));
    let range = if share {
        "a share of attempts is between 0% and 100%"
    } else if index {
        "Jain's index is between 0 and 1"
    } else {
        "no measurement is below zero"
    };
    let always = match op {
        Op::Ge => b <= 0.0,
        Op::Lt => cap.is_some_and(|c| b > c),
        Op::Le => cap.is_some_and(|c| b >= c),
        Op::Gt | Op::Eq => false,
    };
    let never = match op {
        Op::Lt => b <= 0.0,
        Op::Gt => cap.is_some_and(|c| b >= c),
        Op::Ge | Op::Eq => cap.is_some_and(|c| b > c),
        Op::Le => false,
    };
    match (always, never, flag.relative()) {
        (true, _, false) => Some(format!(
            "can never fail: {range}, so it always holds (give a bound a run can cross)"
        )),
        (_, true, false) => Some(format!(
            "can never pass: {range}, so it never holds (give a bound a run can meet)"
        )),
        (true, _, true) => Some(format!(
            "can never pass: {range}, so it always holds and fails every comparison \
             (give a bound a run can stay within)"
        )),
        (_, true, true) => Some(format!(
            "can never fail: {range}, so it never holds (give a bound a run can cross)"
        )),
        _ => None,
    }
}

/// `--fail-if`: a signed number and a unit.
fn delta_bound(metric: Metric, value: &str) -> Result<Bound, String> {
    let end = value
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || (i == 0 && (c == '+' || c == '-'))))
        .map_or(value.len(), |(i, _)| i);
    let (num, unit) = value.split_at(end);
    let v = number(num).ok_or_else(|| {
        format!("bad threshold {value:?} (expected a signed number and a unit, e.g. +10% or +5ms)")
    })?;
    let counted = metric.is_delivery_count();
    let rate = matches!(metric, Metric::Rate | Metric::DeliveredRate);
    let allowed = match metric {
        Metric::Errors => "% or pp, percentage points",
        _ if rate => "% or /s",
        _ if counted => {
            "a count, or % or pp, percentage points of the expected deliveries; e.g. lost>0"
        }
        _ => "% or ms",
    };
    let unit = unit.trim();
    match (metric, unit.to_ascii_lowercase().as_str()) {
        (Metric::Errors, "%" | "pp") => Ok(Bound::Percent(v)),
        (_, "%" | "pp") if counted => Ok(Bound::Percent(v)),
        (_, "") if counted => Ok(Bound::Number(v)),
        (_, "%") => Ok(Bound::Relative(v)),
        (_, "/s") if rate => Ok(Bound::Number(v)),
        (m, "ms") if m.is_latency() => Ok(Bound::Ms(v)),
        (_, "") => Err(format!("missing unit after the threshold (use {allowed})")),
        (m, _) => Err(format!(
            "unit {unit:?} does not apply to {} (use {allowed})",
            m.keyword()
        )),
    }
}

impl FromStr for Gate {
    type Err = GateError;
    /// A `--threshold` rule.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Gate::parse(Flag::Threshold, s)
    }
}

impl fmt::Display for Gate {
    /// A `--threshold`/`--slo` rule as given; a `--fail-if` rule in its canonical form,
    /// e.g. `p99>+10%`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.flag.relative() {
            return f.write_str(&self.text);
        }
        if !self.is_delta() {
            let unit = if let Bound::Percent(_) = self.bound {
                "%"
            } else {
                ""
            };
            let (name, op, v) = (self.metric.keyword(), self.op.as_str(), self.bound.value());
            return write!(f, "{name}{op}{v}{unit}");
        }
        let unit = match self.bound {
            Bound::Relative(_) | Bound::Percent(_) => "%",
            Bound::Ms(_) => "ms",
            Bound::Number(_) if self.metric.is_count() => "",
            Bound::Number(_) => "/s",
        };
        write!(
            f,
            "{}{}{:+}{unit}",
            self.metric.keyword(),
            self.op.as_str(),
            self.bound.value()
        )
    }
}
