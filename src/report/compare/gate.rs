//! `--fail-if` thresholds: parse rules like `p99>+10%` and find the levels that break them.
//!
//! Grammar: `METRIC OP [SIGN]NUMBER UNIT`, spaces allowed around the parts.
//! - METRIC: `avg` (`average`, `mean`), `median` (`p50`), `p95`, `p99`, `errors` (`error`),
//!   `throughput` (`tps`, `rps`).
//! - OP: `>` or `<`; the rule fails when the delta is strictly beyond the threshold.
//! - UNIT: `%` is relative to the baseline for latencies and throughput; `ms` is an absolute
//!   latency delta; `/s` an absolute throughput delta. For `errors`, `%` (or `pp`) means
//!   **percentage points** of error rate: `errors>+1%` fails when the error rate grows from
//!   0.5 % to more than 1.5 %.
//!
//! Every level both runs have is checked, and TOTAL.

use std::fmt;
use std::str::FromStr;

use super::{Comparison, Delta, Metric};

/// Which side of the threshold fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `>`: fails when the delta is greater than the threshold.
    Greater,
    /// `<`: fails when the delta is less than the threshold.
    Less,
}

/// How the threshold is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Relative to the baseline, % (percentage points for `errors`).
    Percent,
    /// Absolute milliseconds (latency metrics).
    Ms,
    /// Absolute attempts per second (throughput).
    PerSec,
}

/// One `--fail-if` rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FailIf {
    pub metric: Metric,
    pub op: Op,
    /// Signed threshold in `unit`.
    pub threshold: f64,
    pub unit: Unit,
}

/// A `--fail-if` rule that does not parse; the message names the bad part.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FailIfError {
    #[error("--fail-if {rule:?}: missing '>' or '<' (expected e.g. p99>+10%)")]
    NoOperator { rule: String },
    #[error(
        "--fail-if {rule:?}: unknown metric {metric:?} (expected avg, median, p95, p99, errors or throughput)"
    )]
    UnknownMetric { rule: String, metric: String },
    #[error("--fail-if {rule:?}: bad threshold {value:?} (expected a signed number and a unit, e.g. +10% or +5ms)")]
    BadNumber { rule: String, value: String },
    #[error("--fail-if {rule:?}: missing unit after the threshold (use {allowed})")]
    MissingUnit { rule: String, allowed: &'static str },
    #[error("--fail-if {rule:?}: unit {unit:?} does not apply to {metric} (use {allowed})")]
    BadUnit {
        rule: String,
        unit: String,
        metric: &'static str,
        allowed: &'static str,
    },
}

fn metric_keyword(m: Metric) -> &'static str {
    match m {
        Metric::Average => "avg",
        Metric::Median => "median",
        Metric::P95 => "p95",
        Metric::P99 => "p99",
        Metric::ErrorPct => "errors",
        Metric::Throughput => "throughput",
    }
}

fn allowed_units(m: Metric) -> &'static str {
    match m {
        Metric::ErrorPct => "% or pp, percentage points",
        Metric::Throughput => "% or /s",
        _ => "% or ms",
    }
}

impl FromStr for FailIf {
    type Err = FailIfError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let rule = s.to_string();
        let Some(at) = s.find(['>', '<']) else {
            return Err(FailIfError::NoOperator { rule });
        };
        let op = if s.as_bytes()[at] == b'>' {
            Op::Greater
        } else {
            Op::Less
        };
        let name = s[..at].trim().to_ascii_lowercase();
        let metric = match name.as_str() {
            "avg" | "average" | "mean" => Metric::Average,
            "median" | "p50" => Metric::Median,
            "p95" => Metric::P95,
            "p99" => Metric::P99,
            "errors" | "error" | "error%" | "err" => Metric::ErrorPct,
            "throughput" | "tps" | "rps" => Metric::Throughput,
            _ => {
                return Err(FailIfError::UnknownMetric {
                    rule,
                    metric: s[..at].trim().to_string(),
                })
            }
        };
        let rest = s[at + 1..].trim();
        let num_end = rest
            .char_indices()
            .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || (i == 0 && (c == '+' || c == '-'))))
            .map_or(rest.len(), |(i, _)| i);
        let (num, unit) = rest.split_at(num_end);
        let threshold: f64 = match num.parse() {
            Ok(v) if f64::is_finite(v) => v,
            _ => {
                return Err(FailIfError::BadNumber {
                    rule,
                    value: rest.to_string(),
                })
            }
        };
        let unit_text = unit.trim().to_ascii_lowercase();
        let unit = match (metric, unit_text.as_str()) {
            (_, "%") => Unit::Percent,
            (Metric::ErrorPct, "pp") => Unit::Percent,
            (Metric::Throughput, "/s") => Unit::PerSec,
            (m, "ms") if m.is_latency() => Unit::Ms,
            (_, "") => {
                return Err(FailIfError::MissingUnit {
                    rule,
                    allowed: allowed_units(metric),
                })
            }
            _ => {
                return Err(FailIfError::BadUnit {
                    rule,
                    unit: unit.trim().to_string(),
                    metric: metric_keyword(metric),
                    allowed: allowed_units(metric),
                })
            }
        };
        Ok(FailIf {
            metric,
            op,
            threshold,
            unit,
        })
    }
}

impl fmt::Display for FailIf {
    /// The canonical form, e.g. `p99>+10%`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.op {
            Op::Greater => '>',
            Op::Less => '<',
        };
        let unit = match self.unit {
            Unit::Percent => "%",
            Unit::Ms => "ms",
            Unit::PerSec => "/s",
        };
        write!(
            f,
            "{}{op}{:+}{unit}",
            metric_keyword(self.metric),
            self.threshold
        )
    }
}

impl FailIf {
    /// The quantity this rule compares: relative % (or points for errors) or absolute.
    /// A relative delta from a zero baseline counts as infinitely large.
    fn measure(&self, d: Delta) -> f64 {
        let relative = self.unit == Unit::Percent && self.metric != Metric::ErrorPct;
        if !relative {
            return d.abs;
        }
        d.pct.unwrap_or(if d.abs > 0.0 {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        })
    }

    /// Whether a delta breaks this rule.
    pub fn fails(&self, d: Delta) -> bool {
        let v = self.measure(d);
        match self.op {
            Op::Greater => v > self.threshold,
            Op::Less => v < self.threshold,
        }
    }
}

/// A rule broken at one level.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub rule: FailIf,
    /// The level label ("200", "TOTAL").
    pub label: String,
    pub baseline: f64,
    pub candidate: f64,
    pub delta: Delta,
}

impl fmt::Display for Violation {
    /// One line, e.g. `p99>+10%: level 50: 100.0 ms → 130.0 ms (+30.0 ms, +30.00%)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.rule.metric;
        write!(
            f,
            "{}: level {}: {} → {} ({}, {})",
            self.rule,
            self.label,
            super::render::value(m, self.baseline),
            super::render::value(m, self.candidate),
            super::render::delta_abs(m, self.delta.abs),
            super::render::delta_pct(self.delta.pct),
        )
    }
}

/// Every (rule, level) pair that fails, rules in the given order, levels in row order.
pub fn check(cmp: &Comparison, rules: &[FailIf]) -> Vec<Violation> {
    let mut out = Vec::new();
    for rule in rules {
        for row in cmp.rows() {
            let (Some(b), Some(c)) = (row.baseline, row.candidate) else {
                continue;
            };
            let (base, cand) = (b.get(rule.metric), c.get(rule.metric));
            let delta = Delta::between(base, cand);
            if rule.fails(delta) {
                out.push(Violation {
                    rule: *rule,
                    label: row.label.clone(),
                    baseline: base,
                    candidate: cand,
                    delta,
                });
            }
        }
    }
    out
}
