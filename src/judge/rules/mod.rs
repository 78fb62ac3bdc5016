//! The one gate language: `--threshold`, `--slo` and `compare --fail-if` rules such as
//! `p99<300ms`, `total:errors<1%`, `rate>=500`, `p99>+10%`, parsed by one parser against one
//! table of metrics into one `Op` and one `Bound`. Plain data: judging a rule is `judge`'s job
//! (absolute bounds on one run) and compare's (deltas between two runs).
//!
//! Grammar: `[total:]METRIC OP VALUE`, spaces allowed around the parts, metric names in any
//! case. What VALUE may be depends on the flag:
//! - `--threshold` / `--slo` (absolute): a latency is a duration (`300ms`, `1.5s`); errors and
//!   timeouts are a share (`1%`) or a count (`3`); rate is attempts per second (`500`, `500/s`).
//!   Ops `<`, `<=`, `>`, `>=`, `=`. A relative bound (`+10%`) is an error: it needs a baseline.
//!   Delivery metrics (`--subscribers`): e2e latencies are durations; delivery counts are a
//!   count or a share of the level's expected deliveries; `delivered_rate` is per second.
//! - `--fail-if` (a delta between two runs): a signed number and a unit: `%` relative to the
//!   baseline (for errors: percentage points, also spelled `pp`), `ms` for latencies, `/s` for
//!   throughput and the delivered rate. A delivery count takes a bare number (a change in the
//!   count: `lost>0`) or `%`/`pp` (percentage points of its share of the expected
//!   deliveries). Ops `<`, `>` (strict: the rule fails when the delta is beyond the bound).
//!   No `total:` (every level both runs have is checked, and TOTAL).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;

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

    fn metrics(self) -> &'static str {
        if self.relative() {
            "avg, median, p95, p99, errors, throughput, e2e_avg, e2e_p50, e2e_p90, e2e_p95, e2e_p99, e2e_max, lost, duplicates, redeliveries, out_of_order, bad_signature, body_mismatch, unexpected, backlog or delivered_rate"
        } else {
            "avg, median, p90, p95, p99, p999, max, errors, timeouts, rate, e2e_avg, e2e_p50, e2e_p90, e2e_p95, e2e_p99, e2e_max, lost, duplicates, redeliveries, out_of_order, bad_signature, body_mismatch, unexpected, backlog, delivered_rate, time_to_first_delivery_p99, tenant_fairness, tenant_p99_spread, quiet_p99_increase or quiet_errors"
        }
    }
}

/// What a rule measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Mean latency.
    Avg,
    /// A latency percentile (50, 90, 95, 99; 99.9 as 999).
    P(u16),
    /// Largest latency.
    Max,
    /// Attempts not accepted.
    Errors,
    /// Client-side timeouts.
    Timeouts,
    /// Achieved throughput, attempts per second.
    Rate,
    /// End-to-end latency (publish start → delivery received): mean.
    E2eAvg,
    /// End-to-end latency percentile (50, 90, 95, 99).
    E2eP(u16),
    /// End-to-end latency: largest.
    E2eMax,
    /// Accepted events not delivered within the grace. Like every delivery count, a count
    /// or a share of the level's expected deliveries.
    Lost,
    /// Deliveries of an event already acknowledged.
    Duplicates,
    /// Deliveries again after the subscriber answered an error (the hub retrying).
    Redeliveries,
    /// First deliveries out of publish order.
    OutOfOrder,
    /// Deliveries with a bad `X-Hub-Signature`.
    BadSignature,
    /// Deliveries naming one of our events but not byte-identical to it.
    BodyMismatch,
    /// Deliveries of nothing hubload published (to that subscriber's topic).
    Unexpected,
    /// Deliveries still missing when the level's last publish returned.
    Backlog,
    /// Delivered per second over the level's span plus the wait for its deliveries.
    DeliveredRate,
    /// Subscription churn: re-verification → first delivery after it, 99th percentile.
    TimeToFirstDeliveryP99,
    /// Jain's index between tenants on goodput normalised by offered share, 1/n..=1
    /// (docs/fairness.md).
    TenantFairness,
    /// The largest tenant p99 ÷ the median tenant p99.
    TenantP99Spread,
    /// `--surge`: the quiet tenants' p99 during the surge ÷ before it, − 1, % (the
    /// isolation verdict's point estimate).
    QuietP99Increase,
    /// `--surge`: the quiet tenants' error % during the surge.
    QuietErrors,
}

/// The one table of metric names: every spelling either flag has accepted, and whether
/// `--fail-if` compares it (compare's columns are avg, median, p95, p99, errors, throughput,
/// and every delivery metric).
const METRICS: &[(&[&str], Metric, bool)] = &[
    (&["avg", "average", "mean"], Metric::Avg, true),
    (&["median", "p50"], Metric::P(50), true),
    (&["p90"], Metric::P(90), false),
    (&["p95"], Metric::P(95), true),
    (&["p99"], Metric::P(99), true),
    (&["p999", "p99.9"], Metric::P(999), false),
    (&["max"], Metric::Max, false),
    (&["errors", "error", "error%", "err"], Metric::Errors, true),
    (&["timeouts"], Metric::Timeouts, false),
    (&["rate", "throughput", "tps", "rps"], Metric::Rate, true),
    (&["e2e_avg", "e2e_mean"], Metric::E2eAvg, true),
    (&["e2e_p50", "e2e_median"], Metric::E2eP(50), true),
    (&["e2e_p90"], Metric::E2eP(90), true),
    (&["e2e_p95"], Metric::E2eP(95), true),
    (&["e2e_p99"], Metric::E2eP(99), true),
    (&["e2e_max"], Metric::E2eMax, true),
    (&["lost"], Metric::Lost, true),
    (&["duplicates", "dups"], Metric::Duplicates, true),
    (&["redeliveries"], Metric::Redeliveries, true),
    (&["out_of_order"], Metric::OutOfOrder, true),
    (
        &["bad_signature", "bad_signatures"],
        Metric::BadSignature,
        true,
    ),
    (&["body_mismatch"], Metric::BodyMismatch, true),
    (&["unexpected"], Metric::Unexpected, true),
    (&["backlog"], Metric::Backlog, true),
    (
        &["delivered_rate", "delivered/s", "delivery_rate"],
        Metric::DeliveredRate,
        true,
    ),
    (
        &["time_to_first_delivery_p99", "ttfd_p99"],
        Metric::TimeToFirstDeliveryP99,
        false,
    ),
    (
        &["tenant_fairness", "fairness", "jain"],
        Metric::TenantFairness,
        false,
    ),
    (&["tenant_p99_spread"], Metric::TenantP99Spread, false),
    (&["quiet_p99_increase"], Metric::QuietP99Increase, false),
    (&["quiet_errors", "quiet_error"], Metric::QuietErrors, false),
];

impl Metric {
    /// Whether the metric is a latency (ms).
    pub fn is_latency(self) -> bool {
        matches!(
            self,
            Metric::Avg
                | Metric::P(_)
                | Metric::Max
                | Metric::E2eAvg
                | Metric::E2eP(_)
                | Metric::E2eMax
                | Metric::TimeToFirstDeliveryP99
        )
    }

    /// Whether the metric is a count that may also be given as a share (`N` or `N%`).
    fn is_count(self) -> bool {
        matches!(
            self,
            Metric::Errors
                | Metric::Timeouts
                | Metric::Lost
                | Metric::Duplicates
                | Metric::Redeliveries
                | Metric::OutOfOrder
                | Metric::BadSignature
                | Metric::BodyMismatch
                | Metric::Unexpected
                | Metric::Backlog
        )
    }

    /// Whether the metric is judged on a level's `fairness` section (two tenants or more).
    pub fn is_fairness(self) -> bool {
        matches!(self, Metric::TenantFairness | Metric::TenantP99Spread)
    }

    /// Whether the metric is judged on a level's `isolation` section (`--surge`).
    pub fn is_isolation(self) -> bool {
        matches!(self, Metric::QuietP99Increase | Metric::QuietErrors)
    }

    /// Whether the metric is judged on a level's `delivery` section (`--subscribers`).
    /// That is the e2e latencies, the delivered rate, and every count but the publish side's.
    pub fn is_delivery(self) -> bool {
        match self {
            Metric::E2eAvg | Metric::E2eP(_) | Metric::E2eMax | Metric::DeliveredRate => true,
            Metric::TimeToFirstDeliveryP99 => true,
            Metric::Errors | Metric::Timeouts => false,
            other => other.is_count(),
        }
    }

    /// The canonical name: `avg`, `median`, `p95`, `p99.9`, `errors`, `throughput`, ….
    pub fn keyword(self) -> &'static str {
        match self {
            Metric::Avg => "avg",
            Metric::P(50) => "median",
            Metric::P(90) => "p90",
            Metric::P(95) => "p95",
            Metric::P(99) => "p99",
            Metric::P(_) => "p99.9",
            Metric::Max => "max",
            Metric::Errors => "errors",
            Metric::Timeouts => "timeouts",
            Metric::Rate => "throughput",
            Metric::E2eAvg => "e2e_avg",
            Metric::E2eP(50) => "e2e_p50",
            Metric::E2eP(90) => "e2e_p90",
            Metric::E2eP(95) => "e2e_p95",
            Metric::E2eP(_) => "e2e_p99",
            Metric::E2eMax => "e2e_max",
            Metric::Lost => "lost",
            Metric::Duplicates => "duplicates",
            Metric::Redeliveries => "redeliveries",
            Metric::OutOfOrder => "out_of_order",
            Metric::BadSignature => "bad_signature",
            Metric::BodyMismatch => "body_mismatch",
            Metric::Unexpected => "unexpected",
            Metric::Backlog => "backlog",
            Metric::DeliveredRate => "delivered_rate",
            Metric::TimeToFirstDeliveryP99 => "time_to_first_delivery_p99",
            Metric::TenantFairness => "tenant_fairness",
            Metric::TenantP99Spread => "tenant_p99_spread",
            Metric::QuietP99Increase => "quiet_p99_increase",
            Metric::QuietErrors => "quiet_errors",
        }
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

/// The bound a rule compares with, in its unit. Under `--fail-if` each is a signed delta.
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
        let &(_, metric, _) = METRICS
            .iter()
            .find(|(names, _, _)| names.contains(&name.to_ascii_lowercase().as_str()))
            .filter(|(_, _, compared)| *compared || !flag.relative())
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
        let bound = if flag.relative() {
            delta_bound(metric, value).map_err(err)?
        } else {
            let bound = absolute_bound(metric, value).map_err(err)?;
            if let Some(why) = foregone(metric, op, bound) {
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

/// `--threshold` / `--slo`: a non-negative value in the metric's unit.
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
/// measured, or holds for nothing; `None` when a measurement can go either way.
///
/// What a measurement can be: every metric is at least 0, a share of attempts (errors,
/// timeouts as `%`, the quiet tenants' errors) at most 100 %, and Jain's index at most 1.
/// Delivery shares are not capped: duplicates, redeliveries and unexpected deliveries may
/// outnumber the expected ones (docs/gates.md). A p99 increase is at least −100 %, below any
/// bound given (never negative): no rule on it is foregone.
fn foregone(metric: Metric, op: Op, bound: Bound) -> Option<String> {
    if metric == Metric::QuietP99Increase {
        return None;
    }
    let b = bound.value();
    let share = matches!(
        (metric, bound),
        (Metric::Errors | Metric::Timeouts, Bound::Percent(_))
    ) || metric == Metric::QuietErrors;
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
    if always {
        Some(format!(
            "can never fail: {range}, so it always holds (give a bound a run can cross)"
        ))
    } else if never {
        Some(format!(
            "can never pass: {range}, so it never holds (give a bound a run can meet)"
        ))
    } else {
        None
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
    let counted = metric.is_count() && metric != Metric::Errors && metric != Metric::Timeouts;
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
