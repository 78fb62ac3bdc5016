//! `hubload compare`'s `Server-Timing` block: per level both runs have and per declared stage,
//! the baseline's and the candidate's p50 and p99 and the p50's delta (ms).

use crate::align::align;
use crate::report::precision::ms3;
use crate::run_report::Report;

/// The block, or `None` when neither run's responses declared a stage.
pub fn render_server_timing(baseline: &Report, candidate: &Report) -> Option<String> {
    let head = [
        "Level", "Stage", "Base p50", "Cand p50", "Δ p50", "Base p99", "Cand p99",
    ];
    let mut grid: Vec<Vec<String>> = vec![head.iter().map(|h| h.to_string()).collect()];
    let rows = |r: &Report| {
        r.levels
            .iter()
            .chain(r.total.as_ref())
            .map(|l| (l.label.clone(), l.server_timing.clone()))
            .collect::<Vec<_>>()
    };
    let (b_rows, c_rows) = (rows(baseline), rows(candidate));
    for (label, b) in &b_rows {
        let Some((_, c)) = c_rows.iter().find(|(l, _)| l == label) else {
            continue;
        };
        let names: std::collections::BTreeSet<&String> = b.keys().chain(c.keys()).collect();
        for name in names {
            let (bs, cs) = (b.get(name), c.get(name));
            let p =
                |s: Option<&crate::summary::server_timing::ServerTimingReport>,
                 f: fn(&crate::summary::server_timing::ServerTimingReport) -> u64| {
                    s.map_or("-".to_string(), |s| ms3(f(s) as f64))
                };
            let delta = match (bs, cs) {
                (Some(b), Some(c)) => {
                    let d = c.p50_us as f64 - b.p50_us as f64;
                    let sign = if d < 0.0 { "-" } else { "+" };
                    format!("{sign}{}", ms3(d.abs()))
                }
                _ => "-".into(),
            };
            grid.push(vec![
                label.clone(),
                name.clone(),
                p(bs, |s| s.p50_us),
                p(cs, |s| s.p50_us),
                delta,
                p(bs, |s| s.p99_us),
                p(cs, |s| s.p99_us),
            ]);
        }
    }
    (grid.len() > 1).then(|| format!("\nServer-Timing stages (ms)\n{}", align(&grid)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::server_timing::ServerTimingReport;

    fn run(hub_p50_us: Option<u64>) -> Report {
        let mut r = Report::new_empty(crate::kind::Model::Closed, serde_json::Value::Null, vec![]);
        let stats = crate::stats::LevelStats::default();
        let mut level = crate::summary::build::level_report("8", Some(8), None, &stats, false);
        if let Some(p50_us) = hub_p50_us {
            level.server_timing.insert(
                "hub".into(),
                ServerTimingReport {
                    count: 3,
                    p50_us,
                    p99_us: 2 * p50_us,
                    max_us: 2 * p50_us,
                },
            );
        }
        r.levels.push(level);
        r
    }

    #[test]
    fn delta_per_stage_and_level() {
        assert_eq!(render_server_timing(&run(None), &run(None)), None);
        let t = render_server_timing(&run(Some(400)), &run(Some(1_500))).unwrap();
        let last: Vec<&str> = t.lines().last().unwrap().split_whitespace().collect();
        assert_eq!(
            last,
            ["8", "hub", "0.400", "1.50", "+1.10", "0.800", "3.00"]
        );
        // A stage only one run declared: its other side is "-".
        let t = render_server_timing(&run(None), &run(Some(1_000))).unwrap();
        let last: Vec<&str> = t.lines().last().unwrap().split_whitespace().collect();
        assert_eq!(last, ["8", "hub", "-", "1.00", "-", "-", "2.00"]);
    }
}
