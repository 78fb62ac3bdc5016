//! `--fail-if` rules (parsed by `judge::rules`, the one rule language) judged on a
//! comparison: find the levels whose delta breaks them.
//!
//! A rule fails when the delta is strictly beyond its bound: `%` is relative to the baseline
//! for latencies, throughput and the delivered rate, and **percentage points** for errors
//! (`errors>+1%` fails when the error rate grows from 0.5 % to more than 1.5 %) and for the
//! delivery counts, whose share of the expected deliveries is compared (`lost>+0.1%`); `ms`,
//! `/s` and a bare count (`lost>0`: more lost than the baseline) are absolute deltas.
//! Every level both runs have is checked, and TOTAL. A delivery rule needs both runs to have
//! deliveries (`--subscribers`): otherwise checking is an error naming the rule and the run.

use std::fmt;
use std::str::FromStr;

use crate::judge::rules::{self as gate, Bound, Flag, Gate, GateError};
use crate::summary::comparison::{Comparison, Delta, Metric, Metrics};

/// One `--fail-if` rule: the parsed gate and the compare column it reads.
#[derive(Debug, Clone, PartialEq)]
pub struct FailIf {
    pub gate: Gate,
    /// The column of the comparison the rule reads.
    pub metric: Metric,
}

/// A `--fail-if` rule that does not parse; the message names the flag and the bad part.
pub type FailIfError = GateError;

/// The compare column of a gate metric (`judge::rules` only lets `--fail-if` name these).
fn column(m: gate::Metric) -> Metric {
    match m {
        gate::Metric::Avg => Metric::Average,
        gate::Metric::P(50) => Metric::Median,
        gate::Metric::P(95) => Metric::P95,
        gate::Metric::P(99) => Metric::P99,
        gate::Metric::Errors => Metric::ErrorPct,
        gate::Metric::Rate => Metric::Throughput,
        gate::Metric::E2eAvg => Metric::E2eAverage,
        gate::Metric::E2eP(50) => Metric::E2eMedian,
        gate::Metric::E2eP(90) => Metric::E2eP90,
        gate::Metric::E2eP(95) => Metric::E2eP95,
        gate::Metric::E2eP(99) => Metric::E2eP99,
        gate::Metric::E2eMax => Metric::E2eMax,
        gate::Metric::Lost => Metric::Lost,
        gate::Metric::Duplicates => Metric::Duplicates,
        gate::Metric::Redeliveries => Metric::Redeliveries,
        gate::Metric::OutOfOrder => Metric::OutOfOrder,
        gate::Metric::BadSignature => Metric::BadSignature,
        gate::Metric::BodyMismatch => Metric::BodyMismatch,
        gate::Metric::Unexpected => Metric::Unexpected,
        gate::Metric::Backlog => Metric::Backlog,
        gate::Metric::DeliveredRate => Metric::DeliveredRate,
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
    /// Whether the rule compares a delivery count's share of the expected deliveries (`%`).
    pub fn on_share(&self) -> bool {
        self.metric.is_count() && matches!(self.gate.bound, Bound::Percent(_))
    }

    /// One side's value in the rule's unit: the count's share for a `%` count rule.
    fn side(&self, m: &Metrics) -> Option<f64> {
        match self.on_share() {
            true => m.share(self.metric),
            false => m.get(self.metric),
        }
    }

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

/// A `--fail-if` rule that cannot be checked: one line naming the rule, the run and why.
fn unmeasured(rule: &FailIf, message: String) -> FailIfError {
    GateError {
        flag: Flag::FailIf,
        rule: rule.gate.text.clone(),
        message,
    }
}

/// A delivery rule needs deliveries in both runs, and at every level both runs have.
fn measurable(cmp: &Comparison, rule: &FailIf) -> Result<(), FailIfError> {
    let name = rule.gate.metric.keyword();
    let sides = [
        ("baseline", &cmp.baseline_name, cmp.baseline_delivery),
        ("candidate", &cmp.candidate_name, cmp.candidate_delivery),
    ];
    for (side, run, any) in sides {
        if !any {
            return Err(unmeasured(
                rule,
                format!(
                    "{name} needs deliveries, and the {side} run ({run}) has none \
                     (run both with --subscribers)"
                ),
            ));
        }
    }
    for row in cmp.rows() {
        let (Some(b), Some(c)) = (row.baseline, row.candidate) else {
            continue;
        };
        let missing = [
            ("baseline", &cmp.baseline_name, b),
            ("candidate", &cmp.candidate_name, c),
        ]
        .into_iter()
        .find(|(_, _, m)| m.delivery.is_none());
        if let Some((side, run, _)) = missing {
            return Err(unmeasured(
                rule,
                format!(
                    "{name} needs deliveries, and level {} of the {side} run ({run}) has no \
                     delivery section",
                    row.label
                ),
            ));
        }
    }
    Ok(())
}

/// A rule broken at one level (shown as one line by `compare::render`, with compare's
/// number formats).
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub rule: FailIf,
    /// The level label ("200", "TOTAL").
    pub label: String,
    /// The baseline's value, in the rule's unit (a count's share, %, for a `%` count rule).
    pub baseline: f64,
    pub candidate: f64,
    pub delta: Delta,
}

/// Every (rule, level) pair that fails, rules in the given order, levels in row order; an
/// error when a delivery rule meets a run (or a level both runs have) without deliveries.
pub fn check(cmp: &Comparison, rules: &[FailIf]) -> Result<Vec<Violation>, FailIfError> {
    let mut out = Vec::new();
    for rule in rules {
        if rule.metric.is_delivery() {
            measurable(cmp, rule)?;
        }
        for row in cmp.rows() {
            let (Some(b), Some(c)) = (row.baseline, row.candidate) else {
                continue;
            };
            let (Some(base), Some(cand)) = (rule.side(&b), rule.side(&c)) else {
                continue;
            };
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
    Ok(out)
}
