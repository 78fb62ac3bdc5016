//! Turns `LevelStats` into a `LevelReport` row: JMeter's aggregate numbers plus what the JSON adds.

use crate::result::Class;
use crate::stats::{Histogram, LevelStats, TopicStats};

use super::latency::latency;
use super::rows::{EventSummary, LevelReport, ReportHistograms, TimeoutSplit, TopicReport};

/// The interchange encoding of a histogram (see [`ReportHistograms`]).
fn encode(h: &Histogram) -> String {
    // Serializing into memory fails only for a histogram too large for the V2 header; hubload's
    // (1 µs to at most u64::MAX, 3 digits) is never that.
    crate::stats::to_base64(h).expect("hubload histograms serialize")
}

/// One topic's row: counts, percentiles and the sparse histogram.
pub fn topic_report(topic: usize, t: &TopicStats) -> TopicReport {
    TopicReport {
        topic,
        attempts: t.counts.total(),
        counts: t.counts,
        p50_us: t.quantile(0.50),
        p99_us: t.quantile(0.99),
        max_us: t.max_us,
        buckets: t.sparse_buckets(),
    }
}

/// Build one row. `concurrency`/`rate` describe the level; `open` adds corrected latency.
pub fn level_report(
    label: &str,
    concurrency: Option<u64>,
    rate: Option<f64>,
    s: &LevelStats,
    open: bool,
) -> LevelReport {
    let samples = s.attempts();
    let exact = s.min_us.zip(s.max_us).map(|(a, b)| (a, b, s.sum_us));
    let lat = latency(&s.latency, exact);
    let span = s.span_secs();
    let per_sec = |x: f64| if span > 0.0 { x / span } else { 0.0 };
    let ms = |us: u64| us / 1000;
    LevelReport {
        label: label.to_string(),
        concurrency,
        rate,
        samples,
        average_ms: s.sum_us.checked_div(samples).unwrap_or(0) / 1000,
        median_ms: ms(lat.p50),
        p90_ms: ms(lat.p90),
        p95_ms: ms(lat.p95),
        p99_ms: ms(lat.p99),
        min_ms: ms(lat.min),
        max_ms: ms(lat.max),
        error_pct: if samples == 0 {
            0.0
        } else {
            // Not `samples - accepted`: an expected refusal (topic churn) is no error.
            s.counts.sum_where(Class::is_error) as f64 * 100.0 / samples as f64
        },
        throughput: per_sec(samples as f64),
        received_kb_per_sec: per_sec(s.bytes_received as f64 / 1024.0),
        sent_kb_per_sec: per_sec(s.bytes_sent as f64 / 1024.0),
        counts: s.counts,
        reasons: s.reasons,
        timeouts: TimeoutSplit {
            connect: s.counts.get(Class::TimeoutConnect),
            pool_wait: s.counts.get(Class::TimeoutPoolWait),
            response: s.counts.get(Class::TimeoutResponse),
        },
        connection_errors: s.counts.sum_where(Class::is_conn_error),
        status_codes: s
            .status_codes
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
        events: EventSummary {
            total: s.events,
            succeeded: s.events - s.events_failed,
            failed: s.events_failed,
            retries: s.retries,
        },
        dropped: s.dropped,
        span_s: span,
        first_start_us: s.first_start_us,
        bytes_sent: s.bytes_sent,
        bytes_received: s.bytes_received,
        latency_us: lat,
        corrected_latency_us: open.then(|| latency(&s.corrected, None)),
        accepted_latency_us: latency(&s.accepted_latency, None),
        timeline: s.timeline.clone(),
        topics: s
            .topics
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.is_empty())
            .map(|(i, t)| topic_report(i, t))
            .collect(),
        topics_with_attempts: None,
        histograms: (!s.latency.is_empty()).then(|| ReportHistograms {
            latency: encode(&s.latency),
            corrected: (open && !s.corrected.is_empty()).then(|| encode(&s.corrected)),
            per_second: s.seconds.clone(),
        }),
        first_failures: Default::default(),
        topic_server: None,
        topic_churn: None,
        paused_s: None,
        delivery: None,
        server: None,
        generator: None,
        generator_bound: None,
        server_timing: super::server_timing::server_timing_report(&s.server_timing),
        server_timing_malformed: s.server_timing.malformed,
        fairness: None,
        isolation: None,
        delivery_isolation: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{Attempt, Outcome};
    use crate::stats::{AttemptTimes, Clock};
    use std::time::Duration;

    #[test]
    fn jmeter_numbers_from_known_samples() {
        let clock = Clock::new();
        let t0 = clock.anchor();
        let mut s = LevelStats::default();
        // 1000 attempts of 1..=1000 ms, one every ms; every 500th is a 503.
        for i in 1..=1000u64 {
            let start = t0 + Duration::from_millis(i - 1);
            let end = start + Duration::from_millis(i);
            let outcome = if i % 500 == 0 {
                Outcome::Http503
            } else {
                Outcome::Accepted
            };
            let a = Attempt {
                server_timing: crate::result::ServerTimings::NONE,
                retry_after: crate::result::RetryAfter::NONE,
                outcome,
                status: 200,
                bytes_sent: 1024,
                bytes_received: 512,
            };
            s.record_attempt(
                &clock,
                AttemptTimes {
                    level_start: t0,
                    intended: Some(start),
                    start,
                    end,
                },
                &a,
                0,
            );
        }
        let r = level_report("50", Some(50), None, &s, false);
        assert_eq!(r.samples, 1000);
        assert_eq!(r.average_ms, 500); // mean 500.5 truncated
        assert_eq!(r.min_ms, 1);
        assert_eq!(r.max_ms, 1000);
        assert_eq!(r.median_ms, 500);
        assert_eq!(r.p90_ms, 900);
        assert_eq!(r.p99_ms, 990);
        assert!((r.error_pct - 0.2).abs() < 1e-9);
        // span: first start t0 → last end t0 + 999 + 1000 ms = 1.999 s
        assert!(
            (r.throughput - 1000.0 / 1.999).abs() < 0.01,
            "{}",
            r.throughput
        );
        assert!((r.sent_kb_per_sec - 1000.0 / 1.999).abs() < 0.01);
        assert_eq!(r.counts.get(Class::Http503), 2);
        assert_eq!(r.status_codes["503"], 2);
    }
}
