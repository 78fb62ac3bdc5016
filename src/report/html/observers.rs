//! The report page's observer section: the generator's health per level (bound levels
//! marked), the knee's correlated server series, and the charted server series on the same
//! time axis as the latency timeline (seconds of measured load, levels end to end).

use std::fmt::Write;

use super::charts::level_prefix;
use super::markup::kv_table;
use super::svg::{escape, LineChart, Separator, Series, XAxis};
use crate::report::document::Report;

/// At most this many server series get a chart.
const MAX_CHARTS: usize = 6;

/// The section, empty when no level was observed.
pub fn section(report: &Report) -> String {
    let mut b = String::new();
    if report.levels.iter().any(|l| l.generator.is_some()) {
        b.push_str("<h2 id=\"generator\">Generator health</h2>");
        let rows: Vec<(String, String)> = report
            .levels
            .iter()
            .filter_map(|l| {
                let g = l.generator.as_ref()?;
                let mark = if l.generator_bound == Some(true) {
                    format!("GENERATOR-BOUND: {}", g.bound_because.join("; "))
                } else {
                    "ok".to_string()
                };
                Some((
                    l.label.clone(),
                    format!(
                        "CPU {:.0} % of {:.2} cores ({}); scheduling delay p99 {} µs; {mark}",
                        g.cpu_ratio * 100.0,
                        g.allowance_cores,
                        g.allowance_source,
                        g.sched_delay_p99_us
                    ),
                ))
            })
            .collect();
        b.push_str(&kv_table(&rows));
    }
    if let Some(k) = &report.knee {
        let _ = write!(
            b,
            "<h2 id=\"knee\">The knee (correlation)</h2><p>{}</p>",
            escape(&k.line())
        );
    }
    let charts = server_charts(report);
    if !charts.is_empty() {
        b.push_str("<h2 id=\"server\">Server series</h2><div class=\"charts\">");
        for c in charts {
            let _ = write!(b, "<figure class=\"wide\">{c}</figure>");
        }
        b.push_str("</div>");
    }
    b
}

/// One chart per charted series (those whose points were kept), x = seconds of measured load
/// as in the latency timeline: each level starts where the previous level's seconds end.
fn server_charts(report: &Report) -> Vec<String> {
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for l in &report.levels {
        for s in l.server.iter().flat_map(|s| &s.series) {
            let k = (s.source.clone(), s.series.clone(), s.labels.clone());
            if !s.points.is_empty() && !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    keys.truncate(MAX_CHARTS);
    keys.iter()
        .enumerate()
        .map(|(i, (source, name, labels))| {
            let mut points = Vec::new();
            let mut separators = Vec::new();
            let mut offset = 0.0;
            for l in &report.levels {
                separators.push(Separator {
                    x: offset,
                    label: format!("{}={}", level_prefix(report), l.label),
                });
                let found = l
                    .server
                    .iter()
                    .flat_map(|s| &s.series)
                    .find(|s| (&s.source, &s.series, &s.labels) == (source, name, labels));
                for (t, v) in found.iter().flat_map(|s| &s.points) {
                    if v.is_finite() {
                        points.push(Some((offset + t, *v)));
                    }
                }
                points.push(None);
                offset += l.stats.timeline.len() as f64;
            }
            LineChart {
                id: format!("chart-server-{i}"),
                title: format!("{name}{labels} ({source})"),
                x_label: "Seconds of measured load".into(),
                y_label: name.clone(),
                unit: String::new(),
                x: XAxis::Linear {
                    max: offset.max(1.0),
                },
                series: vec![Series {
                    name: name.clone(),
                    color: "#7f3fbf",
                    points,
                    markers: false,
                    dashed: false,
                }],
                separators,
                width: Some(1280.0),
                log_y: false,
            }
            .render()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::observations::{
        GeneratorLevel, KneeChange, KneeSeries, ServerLevel, ServerSeries,
    };

    #[test]
    fn the_section_is_well_formed_and_charts_on_the_timeline_axis() {
        let mut r = crate::report::html::tests::sample();
        assert_eq!(section(&r), "");
        for (i, l) in r.levels.iter_mut().enumerate() {
            l.generator = Some(GeneratorLevel {
                cpu_ratio: 0.95,
                allowance_cores: 0.2,
                allowance_source: "cgroup v1".into(),
                bound_because: vec!["CPU 95 % of 0.20 cores (cgroup v1)".into()],
                ..GeneratorLevel::default()
            });
            l.generator_bound = Some(i == 1);
            l.server = Some(ServerLevel {
                sources: Vec::new(),
                series: vec![ServerSeries {
                    source: "hub:9000/metrics".into(),
                    series: "hub_inflight".into(),
                    kind: "gauge".into(),
                    max: Some(4.0),
                    points: vec![(0.0, 1.0), (1.0, 4.0)],
                    ..ServerSeries::default()
                }],
            });
        }
        r.knee = Some(KneeSeries {
            level: "<8>".into(),
            previous: "1".into(),
            broke_because: "first failing threshold p99<300ms".into(),
            series: vec![KneeChange {
                series: "hub_inflight".into(),
                figure: "max".into(),
                before: 1.0,
                after: 4.0,
                relative_change: 3.0,
                ..KneeChange::default()
            }],
        });
        let html = crate::report::html::render(&r);
        let doc = crate::report::html::tests::parse(&html);
        let text: String = doc
            .descendants()
            .filter(|n| n.is_text())
            .filter_map(|n| n.text())
            .collect();
        assert!(text.contains("GENERATOR-BOUND: CPU 95 % of 0.20 cores (cgroup v1)"));
        assert_eq!(text.matches("GENERATOR-BOUND").count(), 1, "{text}");
        assert!(text.contains("at <8> (first failing threshold p99<300ms)"));
        assert!(doc
            .descendants()
            .any(|n| n.attribute("id") == Some("chart-server-0")));
    }
}
