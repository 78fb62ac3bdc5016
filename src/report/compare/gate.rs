//! `--fail-if` rules (parsed by `gate`, the one rule language) judged on a comparison: find
//! the levels whose delta breaks them.
//!
//! A rule fails when the delta is strictly beyond its bound: `%` is relative to the baseline
//! for latencies and throughput and **percentage points** for errors (`errors>+1%` fails when
//! the error rate grows from 0.5 % to more than 1.5 %); `ms` and `/s` are absolute deltas.
//! Every level both runs have is checked, and TOTAL.

use std::fmt;
use std::str::FromStr;

use super::format::{delta_abs, delta_pct, value};
use super::model::{Comparison, Delta, Metric};
use crate::gate::{self, Bound, Flag, Gate, GateError};

/// One `--fail-if` rule: the parsed gate and the compare column it reads.
#[derive(Debug, Clone, PartialEq)]
pub struct FailIf {
    pub gate: Gate,
    /// The column of the comparison the rule reads.
    pub metric: Metric,
}

/// A `--fail-if` rule that does not parse; the message names the flag and the bad part.
pub type FailIfError = GateError;

/// The compare column of a gate metric (`gate` only lets `--fail-if` name these).
fn column(m: gate::Metric) -> Metric {
    match m {
        gate::Metric::Avg => Metric::Average,
        gate::Metric::P(50) => Metric::Median,
        gate::Metric::P(95) => Metric::P95,
        gate::Metric::P(99) => Metric::P99,
        gate::Metric::Errors => Metric::ErrorPct,
        gate::Metric::Rate => Metric::Throughput,
        other => unreachable!("--fail-if does not accept {other:?}"),
    }
}

impl FromStr for FailIf {
    type Err = FailIfError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let gate = Gate::parse(Flag::FailIf, s)?;
        Ok(FailIf {
            metric: column(gate.metric),
            gate,
        })
    }
}

impl fmt::Display for FailIf {
    /// The canonical form, e.g. `p99>+10%`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.gate.fmt(f)
    }
}

impl FailIf {
    /// The quantity this rule compares: relative % or absolute (points for errors).
    /// A relative delta from a zero baseline counts as infinitely large.
    fn measure(&self, d: Delta) -> f64 {
        if !matches!(self.gate.bound, Bound::Relative(_)) {
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
        self.gate.op.holds(self.measure(d), self.gate.bound.value())
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
            value(m, self.baseline),
            value(m, self.candidate),
            delta_abs(m, self.delta.abs),
            delta_pct(self.delta.pct),
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
                    rule: rule.clone(),
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
