//! `hubload compare`'s server section: per level both runs have, each server series both
//! observed, its headline figure (a counter's delta, else its max) baseline → candidate.

use std::fmt::Write;

use crate::report::document::Report;
use crate::report::model::observations::ServerSeries;

/// The figure compared: a counter's delta in the level, else its max.
fn figure(s: &ServerSeries) -> Option<(&'static str, f64)> {
    match s.kind.as_str() {
        "counter" => s.delta.map(|d| ("delta", d)),
        _ => s.max.map(|m| ("max", m)),
    }
}

/// The text section (empty when the runs share no observed series).
pub fn render_server(baseline: &Report, candidate: &Report) -> String {
    let mut out = String::new();
    for b in &baseline.levels {
        let Some(c) = candidate.levels.iter().find(|c| c.label == b.label) else {
            continue;
        };
        let (Some(bs), Some(cs)) = (&b.server, &c.server) else {
            continue;
        };
        for s in &bs.series {
            let Some(t) = cs
                .series
                .iter()
                .find(|t| (&t.source, &t.series, &t.labels) == (&s.source, &s.series, &s.labels))
            else {
                continue;
            };
            let (Some((name, x)), Some((_, y))) = (figure(s), figure(t)) else {
                continue;
            };
            if out.is_empty() {
                out.push_str("server series (baseline → candidate, per level):\n");
            }
            let rel = if x != 0.0 {
                format!(" ({:+.1}%)", (y - x) * 100.0 / x.abs())
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "  {} {}{} {name} {} → {}{rel}",
                b.label,
                s.series,
                s.labels,
                crate::report::server_csv::figure(Some(x)),
                crate::report::server_csv::figure(Some(y)),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::build::level_report;
    use crate::report::model::observations::ServerLevel;
    use crate::stats::LevelStats;

    fn run(delta: f64) -> Report {
        let mut r = crate::report::html::tests::sample();
        let mut l = level_report("50", Some(50), None, &LevelStats::default(), false);
        l.server = Some(ServerLevel {
            sources: Vec::new(),
            series: vec![ServerSeries {
                source: "hub:8080/metrics".into(),
                series: "hub_answers_total".into(),
                labels: "{outcome=\"accepted\"}".into(),
                kind: "counter".into(),
                delta: Some(delta),
                ..ServerSeries::default()
            }],
        });
        r.levels = vec![l];
        r
    }

    #[test]
    fn counter_deltas_side_by_side() {
        assert_eq!(
            render_server(&run(1000.0), &run(1250.0)),
            "server series (baseline → candidate, per level):\n  50 hub_answers_total{outcome=\"accepted\"} delta 1000 → 1250 (+25.0%)\n"
        );
        let mut none = run(1.0);
        none.levels[0].server = None;
        assert_eq!(render_server(&none, &run(1.0)), "");
    }
}
