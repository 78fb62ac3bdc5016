//! `latency.csv`: per level, the publish latency's percentiles in µs (and, in the open model,
//! the latency corrected for coordinated omission, as a second row).
//!
//! Columns: `Level`, `Latency` (`publish`: actual start → end; `corrected`: intended start →
//! end, open model only), `Samples`, `p50_us`, `p90_us`, `p95_us`, `p99_us`, `p99.9_us`,
//! `p99.99_us`, `max_us`. Percentiles are nearest-rank from the level's HdrHistogram (1 µs,
//! 3 significant digits), clamped to the exact max; the TOTAL row ends the file.

use super::Format;
use crate::report::document::Report;
use crate::report::model::LatencyUs;

/// Writes `latency.csv`.
#[derive(Debug, Default)]
pub struct LatencyCsvFormat;

/// The header row.
pub const LATENCY_HEADER: [&str; 10] = [
    "Level",
    "Latency",
    "Samples",
    "p50_us",
    "p90_us",
    "p95_us",
    "p99_us",
    "p99.9_us",
    "p99.99_us",
    "max_us",
];

fn row(label: &str, kind: &str, samples: u64, l: &LatencyUs) -> Vec<String> {
    let mut r = vec![label.to_string(), kind.to_string(), samples.to_string()];
    r.extend(
        [l.p50, l.p90, l.p95, l.p99, l.p999, l.p9999, l.max]
            .iter()
            .map(u64::to_string),
    );
    r
}

/// Render `latency.csv`.
pub fn render_latency_csv(report: &Report) -> anyhow::Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(LATENCY_HEADER)?;
    for l in report.levels.iter().chain(report.total.as_ref()) {
        w.write_record(row(
            &l.label,
            "publish",
            l.derived.samples,
            &l.derived.latency_us,
        ))?;
        if let Some(c) = &l.derived.corrected_latency_us {
            w.write_record(row(&l.label, "corrected", l.derived.samples, c))?;
        }
    }
    Ok(w.into_inner()?)
}

impl Format for LatencyCsvFormat {
    fn file_name(&self) -> &'static str {
        "latency.csv"
    }
    fn render(&self, report: &Report) -> anyhow::Result<Vec<u8>> {
        render_latency_csv(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::build::level_report;
    use crate::result::{Attempt, Outcome};
    use crate::stats::{AttemptTimes, Clock, LevelStats};
    use std::time::Duration;

    #[test]
    fn percentiles_in_microseconds_with_the_corrected_row_in_the_open_model() {
        let clock = Clock::new();
        let t0 = clock.anchor();
        let mut s = LevelStats::default();
        // 10,000 attempts of 1..=10,000 µs; each intended 1 ms before its start.
        for i in 1..=10_000u64 {
            let start = t0 + Duration::from_millis(1) + Duration::from_micros(i);
            let a = Attempt {
                server_timing: crate::result::ServerTimings::NONE,
                retry_after: crate::result::RetryAfter::NONE,
                outcome: Outcome::Accepted,
                status: 200,
                bytes_sent: 1,
                bytes_received: 1,
            };
            let t = AttemptTimes {
                level_start: t0,
                intended: Some(start - Duration::from_millis(1)),
                start,
                end: start + Duration::from_micros(i),
            };
            s.record_attempt(&clock, t, &a, 0);
        }
        let mut r = Report::new_empty(crate::kind::Model::Open, serde_json::Value::Null, vec![]);
        r.levels
            .push(level_report("100/s", None, Some(100.0), &s, true));
        let csv = String::from_utf8(render_latency_csv(&r).unwrap()).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "Level,Latency,Samples,p50_us,p90_us,p95_us,p99_us,p99.9_us,p99.99_us,max_us"
        );
        // Values ≤ 2048 are exact at 3 significant digits; above, buckets are 2 µs wide (up to
        // 4096) and 4 µs (up to 8192), 8 µs beyond: the bucket's highest value is reported.
        assert_eq!(
            lines[1],
            "100/s,publish,10000,5003,9007,9503,9903,9991,9999,10000"
        );
        // The corrected max has no exact counter: the histogram's highest equivalent value.
        assert_eq!(
            lines[2],
            "100/s,corrected,10000,6003,10007,10503,10903,10991,10999,11007"
        );
        assert_eq!(lines.len(), 3);
    }
}
