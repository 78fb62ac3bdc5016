//! The knee, explained by correlation: at the first level that broke (the first failing
//! threshold, or the capacity finder's first failing level), the server series that changed
//! most against the level before it (pure: report in, at most three changes out).

use crate::report::document::Report;
use crate::report::model::observations::{KneeChange, KneeSeries};
use crate::report::model::LevelReport;

/// How many series are named.
const TOP: usize = 3;

/// The knee of `r`, when a level broke, the level before it exists, and both have server series.
pub fn knee(r: &Report) -> Option<KneeSeries> {
    if let Some(cap) = &r.capacity {
        let (failed, _) = cap.first_fail.as_ref()?;
        let passed = cap.best.as_ref()?;
        return explain(passed, failed, "the capacity finder's first failing level");
    }
    let broke = r
        .levels
        .iter()
        .position(|l| r.verdicts.iter().any(|v| !v.passed && v.level == l.label))?;
    let because = r
        .verdicts
        .iter()
        .find(|v| !v.passed && v.level == r.levels[broke].label)
        .map(|v| format!("first failing threshold {}", v.threshold))?;
    explain(
        r.levels.get(broke.checked_sub(1)?)?,
        &r.levels[broke],
        &because,
    )
}

/// The top changes from `before` to `after`.
fn explain(before: &LevelReport, after: &LevelReport, because: &str) -> Option<KneeSeries> {
    let (b, a) = (before.server.as_ref()?, after.server.as_ref()?);
    let mut changes: Vec<KneeChange> =
        a.series
            .iter()
            .filter_map(|s| {
                let prev = b.series.iter().find(|p| {
                    p.source == s.source && p.series == s.series && p.labels == s.labels
                })?;
                let (x, y) = (prev.headline()?, s.headline()?);
                if !x.is_finite() || !y.is_finite() || x == y {
                    return None;
                }
                let rel = if x == 0.0 {
                    f64::INFINITY
                } else {
                    (y - x).abs() / x.abs()
                };
                Some(KneeChange {
                    source: s.source.clone(),
                    series: s.series.clone(),
                    labels: s.labels.clone(),
                    figure: s.headline_name().to_string(),
                    before: x,
                    after: y,
                    relative_change: rel,
                })
            })
            .collect();
    if changes.is_empty() {
        return None;
    }
    // Largest change first; equal changes by the larger absolute move, then by name.
    changes.sort_by(|p, q| {
        q.relative_change
            .total_cmp(&p.relative_change)
            .then(
                (q.after - q.before)
                    .abs()
                    .total_cmp(&(p.after - p.before).abs()),
            )
            .then_with(|| (&p.series, &p.labels).cmp(&(&q.series, &q.labels)))
    });
    changes.truncate(TOP);
    Some(KneeSeries {
        level: after.label.clone(),
        previous: before.label.clone(),
        broke_because: because.to_string(),
        series: changes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::build::level_report;
    use crate::report::model::observations::{ServerLevel, ServerSeries};
    use crate::stats::LevelStats;

    fn gauge(name: &str, max: f64) -> ServerSeries {
        ServerSeries {
            source: "hub".into(),
            series: name.into(),
            kind: "gauge".into(),
            max: Some(max),
            ..ServerSeries::default()
        }
    }

    fn counter(name: &str, rate: f64) -> ServerSeries {
        ServerSeries {
            source: "hub".into(),
            series: name.into(),
            kind: "counter".into(),
            rate: Some(rate),
            ..ServerSeries::default()
        }
    }

    fn level(label: &str, series: Vec<ServerSeries>) -> LevelReport {
        let mut l = level_report(label, Some(1), None, &LevelStats::default(), false);
        l.server = Some(ServerLevel {
            sources: Vec::new(),
            series,
        });
        l
    }

    #[test]
    fn top_three_by_relative_change() {
        let a = level(
            "100",
            vec![
                gauge("inflight", 12.0),
                gauge("cpu", 1.1),
                counter("req", 100.0),
                gauge("mem", 5.0),
                gauge("same", 1.0),
            ],
        );
        let b = level(
            "200",
            vec![
                gauge("inflight", 480.0),
                gauge("cpu", 1.98),
                counter("req", 150.0),
                gauge("mem", 5.5),
                gauge("same", 1.0),
            ],
        );
        let k = explain(&a, &b, "first failing threshold p99<300ms").unwrap();
        let names: Vec<_> = k.series.iter().map(|c| c.series.as_str()).collect();
        assert_eq!(names, ["inflight", "cpu", "req"]);
        assert_eq!(k.series[0].relative_change, 39.0);
        assert_eq!(
            k.line(),
            "at 200 (first failing threshold p99<300ms), the server series that changed most against 100 \
(a correlation, not a proven cause): inflight max 12 → 480; cpu max 1.1 → 1.98; req rate 100 → 150"
        );
    }
}
