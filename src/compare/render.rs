//! Text (terminal) and CSV (`compare.csv`) renderings of a [`Comparison`].

use std::fmt::{self, Write};

use super::format::{
    delta_abs, delta_pct, plain_delta, plain_pct, plain_value, share, share_delta, value,
};
use crate::report::judge::comparison::{Comparison, LevelComparison, Metrics, Presence};
use crate::report::judge::fail_if::{FailIf, Violation};
use crate::report::judge::metric::Metric;

/// One line of the text table.
enum Line {
    Cells([String; 6]),
    Note(String, String),
    Rule,
}

/// A side's value for people, or "—" where the level has no delivery section.
fn cell(m: Metric, side: &Metrics) -> String {
    side.get(m).map_or_else(|| "—".to_string(), |v| value(m, v))
}

fn level_lines(row: &LevelComparison, metrics: &[Metric], out: &mut Vec<Line>) {
    match (row.presence(), &row.baseline, &row.candidate) {
        (Presence::Both, Some(b), Some(c)) => {
            for (i, m) in metrics.iter().enumerate() {
                let (abs, pct) = row.delta(*m).map_or_else(
                    || ("—".to_string(), "—".to_string()),
                    |d| (delta_abs(*m, d.abs), delta_pct(d.pct)),
                );
                out.push(Line::Cells([
                    if i == 0 {
                        row.label.clone()
                    } else {
                        String::new()
                    },
                    m.name().to_string(),
                    cell(*m, b),
                    cell(*m, c),
                    abs,
                    pct,
                ]));
            }
        }
        (p, b, c) => {
            let samples = b.or(*c).map_or(0, |m| m.samples);
            out.push(Line::Note(
                row.label.clone(),
                format!("only in the {} run ({samples} samples)", side(p)),
            ));
        }
    }
    out.push(Line::Rule);
}

fn side(p: Presence) -> &'static str {
    match p {
        Presence::CandidateOnly => "candidate",
        _ => "baseline",
    }
}

/// The comparison as an aligned table for the terminal (each level's delivery rows after its
/// publish rows, when both runs have deliveries), then the threshold verdict (when `rules`
/// is not empty).
pub fn render_text(cmp: &Comparison, rules: &[FailIf], violations: &[Violation]) -> String {
    let mut lines = vec![
        Line::Cells([
            cmp.level_title.clone(),
            "Metric".into(),
            "Baseline".into(),
            "Candidate".into(),
            "Δ".into(),
            "Δ %".into(),
        ]),
        Line::Rule,
    ];
    let metrics = cmp.metrics();
    for row in cmp.rows() {
        level_lines(row, &metrics, &mut lines);
    }
    let mut widths = [0usize; 6];
    for l in &lines {
        if let Line::Cells(cells) = l {
            for (w, c) in widths.iter_mut().zip(cells) {
                *w = (*w).max(c.chars().count());
            }
        }
    }
    let total_w = widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
    let mut out = String::new();
    let _ = writeln!(out, "Baseline:  {}", cmp.baseline_name);
    let _ = writeln!(out, "Candidate: {}", cmp.candidate_name);
    out.push('\n');
    for l in &lines {
        match l {
            Line::Cells(cells) => {
                let mut s = String::new();
                for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
                    if i > 0 {
                        s.push_str("  ");
                    }
                    let pad = w - c.chars().count();
                    if i < 2 {
                        s.push_str(c);
                        s.push_str(&" ".repeat(pad));
                    } else {
                        s.push_str(&" ".repeat(pad));
                        s.push_str(c);
                    }
                }
                let _ = writeln!(out, "{}", s.trim_end());
            }
            Line::Note(label, text) => {
                let _ = writeln!(out, "{label:<w$}  {text}", w = widths[0]);
            }
            Line::Rule => {
                let _ = writeln!(out, "{}", "-".repeat(total_w));
            }
        }
    }
    if !rules.is_empty() {
        out.push('\n');
        if violations.is_empty() {
            let names: Vec<String> = rules.iter().map(ToString::to_string).collect();
            let _ = writeln!(out, "PASS: no level breaks {}", names.join(", "));
        } else {
            let _ = writeln!(out, "FAIL: {} threshold violation(s):", violations.len());
            for v in violations {
                let _ = writeln!(out, "  {v}");
            }
        }
    }
    out
}

/// The header of `compare.csv`: the level, where it exists, then per metric the baseline,
/// the candidate, the absolute delta and the relative delta (units in brackets; a count has
/// none).
pub fn csv_header(metrics: &[Metric]) -> Vec<String> {
    let mut h = vec!["Level".to_string(), "Present in".to_string()];
    for &m in metrics {
        let (name, unit) = (m.name(), m.unit());
        let delta_unit = m.delta_unit();
        if m == Metric::Errors || unit.is_empty() {
            h.push(format!("{name} baseline"));
            h.push(format!("{name} candidate"));
        } else {
            h.push(format!("{name} baseline ({unit})"));
            h.push(format!("{name} candidate ({unit})"));
        }
        match delta_unit {
            "" => h.push(format!("{name} delta")),
            u => h.push(format!("{name} delta ({u})")),
        }
        h.push(format!("{name} delta %"));
    }
    h
}

/// `compare.csv`: one row per level and TOTAL, wide, ready for a spreadsheet; the delivery
/// columns follow when both runs have deliveries, then per `Server-Timing` stage either run
/// declared its p50 and p99 columns. Cells of a missing side (or section) are
/// empty; a relative delta from a zero baseline is empty.
pub fn render_csv(cmp: &Comparison) -> anyhow::Result<Vec<u8>> {
    let metrics = cmp.metrics();
    let stages = super::server_timing_deltas::csv_names(&cmp.server_timing);
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = csv_header(&metrics);
    for name in &stages {
        header.extend(super::server_timing_deltas::csv_header(name));
    }
    w.write_record(header)?;
    for row in cmp.rows() {
        let mut rec = vec![row.label.clone(), row.presence().as_str().to_string()];
        for &m in &metrics {
            let side = |s: Option<Metrics>| {
                s.and_then(|s| s.get(m))
                    .map_or(String::new(), |v| plain_value(m, v))
            };
            rec.push(side(row.baseline));
            rec.push(side(row.candidate));
            match row.delta(m) {
                Some(d) => {
                    rec.push(plain_delta(m, d.abs));
                    rec.push(d.pct.map_or(String::new(), plain_pct));
                }
                None => rec.extend([String::new(), String::new()]),
            }
        }
        for name in &stages {
            rec.extend(super::server_timing_deltas::csv_cells(
                &cmp.server_timing,
                &row.label,
                name,
            ));
        }
        w.write_record(&rec)?;
    }
    Ok(w.into_inner()?)
}

impl fmt::Display for Violation {
    /// One line, e.g. `p99>+10%: level 50: 100.0 ms → 130.0 ms (+30.0 ms, +30.00%)`; a `%`
    /// count rule shows shares, `lost>+0.1%: level 4: 0.000% → 0.500% (+0.500 pp)`; a figure
    /// rule the candidate's figure, `tenant_fairness<0.95: level 4: candidate 0.750
    /// (baseline 1.000)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.rule.metric();
        let (rule, label) = (&self.rule, &self.label);
        let (Some(base), Some(delta)) = (self.baseline, self.delta) else {
            return write!(
                f,
                "{rule}: level {label}: candidate {}",
                value(m, self.candidate)
            );
        };
        if !self.rule.gate.is_delta() {
            return write!(
                f,
                "{rule}: level {label}: candidate {} (baseline {})",
                value(m, self.candidate),
                value(m, base),
            );
        }
        if self.rule.on_share() {
            return write!(
                f,
                "{rule}: level {label}: {} → {} ({})",
                share(base),
                share(self.candidate),
                share_delta(delta.abs),
            );
        }
        write!(
            f,
            "{rule}: level {label}: {} → {} ({}, {})",
            value(m, base),
            value(m, self.candidate),
            delta_abs(m, delta.abs),
            delta_pct(delta.pct),
        )
    }
}
