//! `latency.hlog`: the levels' latency histograms as an HdrHistogram interval log (format
//! version 1.3), readable by HistogramLogAnalyzer, hdr-plot and the HdrHistogram libraries.
//!
//! One tagged interval per level (`c200`, `r500`, `r500-corrected`), then one per second with
//! attempts (`…-per-second`). The histograms are summary.json's, so `hubload report` rewrites
//! the same log; docs/reports.md gives tags, units and timestamps.

use std::fmt::Write;

use super::jtl::level_tag;
use super::Format;
use crate::report::document::Report;

/// Writes `latency.hlog`.
#[derive(Debug, Default)]
pub struct HlogFormat;

/// Whether the report holds any histogram to log (summaries before 0.1 have none).
pub fn has_histograms(report: &Report) -> bool {
    report.levels.iter().any(|l| !l.stats.latency.is_empty())
}

/// The interchange encoding of `h`, an interval's payload.
fn encoded(h: &crate::stats::Histogram) -> String {
    // Serializing into memory fails only for a histogram too large for the V2 header;
    // hubload's (1 µs to at most u64::MAX, 3 digits) is never that.
    crate::stats::to_base64(h).expect("hubload histograms serialize")
}

/// Render the interval log.
pub fn render_hlog(report: &Report) -> String {
    let base_us = report
        .levels
        .iter()
        .filter_map(|l| l.stats.first_start_us)
        .min()
        .unwrap_or(0);
    let base_s = base_us as f64 / 1e6;
    let mut out = String::new();
    let _ = writeln!(out, "#[Logged with {} {}]", report.tool, report.version);
    out.push_str("#[Histogram log format version 1.3]\n");
    let _ = writeln!(
        out,
        "#[StartTime: {base_s:.3} (seconds since epoch), {}]",
        humantime::format_rfc3339_millis(
            std::time::UNIX_EPOCH + std::time::Duration::from_micros(base_us)
        )
    );
    let _ = writeln!(out, "#[BaseTime: {base_s:.3} (seconds since epoch)]");
    out.push_str("\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n");
    for l in &report.levels {
        let Some(start) = l
            .stats
            .first_start_us
            .filter(|_| !l.stats.latency.is_empty())
        else {
            continue;
        };
        let tag = level_tag(l.concurrency, l.rate);
        let end = start + (l.derived.span_s * 1e6).round() as u64;
        let mut line = |tag: &str, (from, to): (u64, u64), max_us: u64, payload: &str| {
            let _ = writeln!(
                out,
                "Tag={tag},{:.3},{:.3},{:.3},{payload}",
                from.saturating_sub(base_us) as f64 / 1e6,
                to.saturating_sub(from) as f64 / 1e6,
                max_us as f64 / 1000.0
            );
        };
        line(
            &tag,
            (start, end),
            l.derived.latency_us.max,
            &encoded(&l.stats.latency),
        );
        let corrected = &l.stats.corrected;
        if let Some(cl) = l
            .derived
            .corrected_latency_us
            .as_ref()
            .filter(|_| !corrected.is_empty())
        {
            line(
                &format!("{tag}-corrected"),
                (start, end),
                cl.max,
                &encoded(corrected),
            );
        }
        let ps = &l.stats.seconds;
        let Some(origin) = ps.origin_us else {
            continue;
        };
        let (raw_tag, corrected_tag) = (
            format!("{tag}-per-second"),
            format!("{tag}-corrected-per-second"),
        );
        let hist_max = |b64: &str| crate::stats::from_base64(b64).map_or(0, |h| h.max());
        for (s, raw) in ps.latency.iter().enumerate() {
            if raw.is_empty() {
                continue;
            }
            // Second s is [origin + s, origin + s + 1), cut to the level's first start → last end.
            let from = (origin + s as u64 * 1_000_000).max(start);
            let span = (
                from,
                (origin + (s as u64 + 1) * 1_000_000).min(end).max(from),
            );
            // The timeline's exact max of the second, else the histogram's.
            let max = l
                .stats
                .timeline
                .get(s)
                .map(|b| b.max_us)
                .filter(|m| *m > 0)
                .unwrap_or_else(|| hist_max(raw));
            line(&raw_tag, span, max, raw);
            if let Some(c) = ps.corrected.get(s).filter(|c| !c.is_empty()) {
                line(&corrected_tag, span, hist_max(c), c);
            }
        }
    }
    out
}

impl Format for HlogFormat {
    fn file_name(&self) -> &'static str {
        "latency.hlog"
    }
    fn render(&self, report: &Report) -> anyhow::Result<Vec<u8>> {
        Ok(render_hlog(report).into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::build::level_report;
    use crate::result::{Attempt, Outcome};
    use crate::stats::{AttemptTimes, Clock, LevelStats};
    use std::time::Duration;

    fn level(n: u64, us: u64) -> LevelStats {
        let clock = Clock::new();
        let t0 = clock.anchor();
        let mut s = LevelStats::default();
        for i in 0..n {
            let start = t0 + Duration::from_millis(i);
            let t = AttemptTimes {
                level_start: t0,
                intended: None,
                start,
                end: start + Duration::from_micros(us + i),
            };
            let a = Attempt {
                server_timing: crate::result::ServerTimings::NONE,
                retry_after: crate::result::RetryAfter::NONE,
                outcome: Outcome::Accepted,
                status: 200,
                bytes_sent: 1,
                bytes_received: 1,
            };
            s.record_attempt(&clock, t, &a, 0);
        }
        s
    }

    #[test]
    fn one_tagged_interval_per_level_whose_payload_decodes_to_the_level() {
        let mut r = Report::new_empty(crate::kind::Model::Closed, serde_json::Value::Null, vec![]);
        let (a, b) = (level(100, 200), level(50, 5000));
        r.levels.push(level_report("1", Some(1), None, &a, false));
        r.levels.push(level_report("8", Some(8), None, &b, false));
        r.total = Some(level_report("TOTAL", None, None, &a, false));
        let log = render_hlog(&r);
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines[1], "#[Histogram log format version 1.3]");
        assert!(lines[2].starts_with("#[StartTime: "), "{}", lines[2]);
        assert_eq!(
            lines[4],
            "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
        );
        assert_eq!(lines.len(), 7, "two levels, no TOTAL line:\n{log}");
        for (line, (tag, stats)) in lines[5..].iter().zip([("c1", &a), ("c8", &b)]) {
            let f: Vec<&str> = line.split(',').collect();
            assert_eq!(f[0], format!("Tag={tag}"));
            assert_eq!(
                f[3],
                format!("{:.3}", stats.max_us.unwrap() as f64 / 1000.0)
            );
            assert!(f[4].starts_with("HISTF"), "{}", f[4]);
            let h = crate::stats::from_base64(f[4]).unwrap_or_else(|e| panic!("{tag}: {e}"));
            assert_eq!(h, stats.latency);
        }
    }

    #[test]
    fn a_summary_without_histograms_has_nothing_to_log() {
        let mut r = Report::new_empty(crate::kind::Model::Closed, serde_json::Value::Null, vec![]);
        r.levels.push(level_report(
            "1",
            Some(1),
            None,
            &LevelStats::default(),
            false,
        ));
        assert!(!has_histograms(&r));
        r.levels
            .push(level_report("2", Some(2), None, &level(3, 10), false));
        assert!(has_histograms(&r));
    }
}
