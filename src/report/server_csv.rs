//! `server.csv`: one row per level and server series (`--server-metrics`, `--server-query`),
//! `Level,Source,Series,Labels,Kind,Delta,Rate,Min,Mean,Max,Last`; empty without server series.

use super::Format;
use crate::report::document::Report;

/// Writes `server.csv`.
#[derive(Debug, Default)]
pub struct ServerCsvFormat;

/// The header, as the issue and the docs name it.
pub const HEADER: [&str; 11] = [
    "Level", "Source", "Series", "Labels", "Kind", "Delta", "Rate", "Min", "Mean", "Max", "Last",
];

/// A figure as written: whole numbers without a fraction (a counter's delta compares exactly
/// with hubload's counts), others in Rust's shortest round-trip form; empty when absent.
pub fn figure(x: Option<f64>) -> String {
    match x {
        None => String::new(),
        Some(v) if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 => format!("{}", v as i64),
        Some(v) => format!("{v}"),
    }
}

impl Format for ServerCsvFormat {
    fn file_name(&self) -> &'static str {
        "server.csv"
    }

    fn render(&self, report: &Report) -> anyhow::Result<Vec<u8>> {
        if report.levels.iter().all(|l| l.server.is_none()) {
            return Ok(Vec::new());
        }
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(HEADER)?;
        for l in &report.levels {
            for s in l.server.iter().flat_map(|s| &s.series) {
                w.write_record([
                    l.label.clone(),
                    s.source.clone(),
                    s.series.clone(),
                    s.labels.clone(),
                    s.kind.clone(),
                    figure(s.delta),
                    figure(s.rate),
                    figure(s.min),
                    figure(s.mean),
                    figure(s.max),
                    figure(s.last),
                ])?;
            }
        }
        Ok(w.into_inner()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::build::level_report;
    use crate::report::model::observations::{ServerLevel, ServerSeries};
    use crate::stats::LevelStats;

    #[test]
    fn one_row_per_level_and_series() {
        let mut r = crate::report::html::tests::sample();
        assert!(ServerCsvFormat.render(&r).unwrap().is_empty());
        let mut l = level_report("50", Some(50), None, &LevelStats::default(), false);
        l.server = Some(ServerLevel {
            sources: Vec::new(),
            series: vec![
                ServerSeries {
                    source: "127.0.0.1:8080/metrics".into(),
                    series: "hub_answers_total".into(),
                    labels: "{mode=\"publish\",outcome=\"accepted\"}".into(),
                    kind: "counter".into(),
                    delta: Some(1200.0),
                    rate: Some(400.5),
                    ..ServerSeries::default()
                },
                ServerSeries {
                    source: "127.0.0.1:8080/metrics".into(),
                    series: "hub_inflight".into(),
                    kind: "gauge".into(),
                    min: Some(0.0),
                    mean: Some(2.25),
                    max: Some(7.0),
                    last: Some(1.0),
                    ..ServerSeries::default()
                },
            ],
        });
        r.levels = vec![l];
        let text = String::from_utf8(ServerCsvFormat.render(&r).unwrap()).unwrap();
        assert_eq!(
            text,
            "Level,Source,Series,Labels,Kind,Delta,Rate,Min,Mean,Max,Last\n\
50,127.0.0.1:8080/metrics,hub_answers_total,\"{mode=\"\"publish\"\",outcome=\"\"accepted\"\"}\",counter,1200,400.5,,,,\n\
50,127.0.0.1:8080/metrics,hub_inflight,,gauge,,,0,2.25,7,1\n"
        );
    }
}
