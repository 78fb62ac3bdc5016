//! `--fail-if` rules (parsed by `judge::rules`, the one gate language) judged on a
//! comparison: find the levels whose delta, or whose candidate figure, breaks them.
//!
//! Every level both runs have is checked, and TOTAL. A delta fails when strictly beyond its
//! bound (`%` relative, or percentage points for errors and delivery counts); a fairness or
//! isolation rule is read on the candidate as `--threshold` reads it. A rule that needs what
//! a run lacks is an error naming the rule and the run (docs/gates.md).

use std::fmt;
use std::str::FromStr;

use crate::report::judge::comparison::{Comparison, Delta, Metrics};
use crate::report::judge::metric::Metric;
use crate::report::judge::rules::{Bound, Flag, Gate, GateError};

/// One `--fail-if` rule: a gate of the one language, parsed for `--fail-if`.
#[derive(Debug, Clone, PartialEq)]
pub struct FailIf {
    pub gate: Gate,
}

/// A `--fail-if` rule that does not parse; the message names the flag and the bad part.
pub type FailIfError = GateError;

impl FromStr for FailIf {
    type Err = FailIfError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(FailIf {
            gate: Gate::parse(Flag::FailIf, s)?,
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
        self.gate.metric.is_delivery_count() && matches!(self.gate.bound, Bound::Percent(_))
    }

    /// The metric the rule reads.
    pub fn metric(&self) -> Metric {
        self.gate.metric
    }

    /// One side's value in the rule's unit: the count's share for a `%` count rule.
    fn side(&self, m: &Metrics) -> Option<f64> {
        match self.on_share() {
            true => m.share(self.gate.metric),
            false => m.get(self.gate.metric),
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

    /// Whether a delta breaks this (delta) rule.
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

/// A figure rule judges the candidate at every level both runs have, and TOTAL (but an
/// isolation figure, which TOTAL never has): each must have the figure, except an isolation
/// figure at a level where neither run has a verdict (a level before `--surge …@levelN`'s),
/// as long as some level has one.
fn figure_rows<'a>(
    cmp: &'a Comparison,
    rule: &FailIf,
) -> Result<Vec<(&'a str, Metrics, Metrics)>, FailIfError> {
    let m = rule.gate.metric;
    let mut out = Vec::new();
    let mut unsurged = None;
    for row in cmp.rows() {
        let (Some(b), Some(c)) = (row.baseline, row.candidate) else {
            continue;
        };
        if m.is_isolation() && cmp.total.as_ref() == Some(row) {
            continue;
        }
        if m.is_isolation() && b.get(m).is_none() && c.get(m).is_none() {
            unsurged = unsurged.or(Some(row.label.as_str()));
            continue;
        }
        if c.get(m).is_none() {
            return Err(missing(cmp, rule, &row.label));
        }
        out.push((row.label.as_str(), b, c));
    }
    match (out.is_empty(), unsurged) {
        (true, Some(label)) => Err(missing(cmp, rule, label)),
        _ => Ok(out),
    }
}

/// The error of a figure rule whose figure the candidate's level `label` lacks.
fn missing(cmp: &Comparison, rule: &FailIf, label: &str) -> FailIfError {
    let m = rule.gate.metric;
    let needs = match m.is_isolation() {
        true if m.is_delivery_isolation() => "a delivery isolation verdict (it needs --surge, --subscribers, and quiet deliveries before and during the surge)",
        true => "an isolation verdict (it needs --surge, and quiet attempts before and during the surge)",
        false => "a fairness figure (it needs two tenants with attempts, and goodput)",
    };
    unmeasured(
        rule,
        format!(
            "{} needs {needs}, and level {label} of the candidate run ({}) has none",
            m.keyword(),
            cmp.candidate_name
        ),
    )
}

/// A rule broken at one level (shown as one line by `compare::render`, with compare's
/// number formats).
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub rule: FailIf,
    /// The level label ("200", "TOTAL").
    pub label: String,
    /// The baseline's value, in the rule's unit (a count's share, %, for a `%` count rule);
    /// `None` for a figure rule on a baseline without the figure.
    pub baseline: Option<f64>,
    pub candidate: f64,
    /// Candidate − baseline, when both have a value.
    pub delta: Option<Delta>,
}

/// Every (rule, level) pair that fails, rules in the given order, levels in row order; an
/// error when a delivery rule meets a run (or a level both runs have) without deliveries.
pub fn check(cmp: &Comparison, rules: &[FailIf]) -> Result<Vec<Violation>, FailIfError> {
    let mut out = Vec::new();
    for rule in rules {
        if rule.gate.metric.is_delivery() {
            measurable(cmp, rule)?;
        }
        if !rule.gate.is_delta() {
            for (label, b, c) in figure_rows(cmp, rule)? {
                let m = rule.gate.metric;
                let cand = c
                    .get(m)
                    .expect("figure_rows keeps the rows with the figure");
                if rule.gate.op.holds(cand, rule.gate.bound.value()) {
                    let base = b.get(m);
                    out.push(Violation {
                        rule: rule.clone(),
                        label: label.to_string(),
                        baseline: base,
                        candidate: cand,
                        delta: base.map(|base| Delta::between(base, cand)),
                    });
                }
            }
            continue;
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
                    baseline: Some(base),
                    candidate: cand,
                    delta: Some(delta),
                });
            }
        }
    }
    Ok(out)
}
