//! Turns `LevelStats` into a `LevelReport` row: the statistics, their derived figures and the topics' rows.

use crate::stats::LevelStats;

use super::derived::Derived;
use super::rows::LevelReport;
use super::topic_row::TopicReport;

/// Build one row. `concurrency`/`rate` describe the level; `open` adds corrected latency.
/// The row holds `s` without its per-topic vectors, and the rows of its topics.
pub fn level_report(
    label: &str,
    concurrency: Option<u64>,
    rate: Option<f64>,
    s: &LevelStats,
    open: bool,
) -> LevelReport {
    level_row(label, concurrency, rate, s.clone(), open)
}

/// [`level_report`] from statistics it may keep.
pub fn level_row(
    label: &str,
    concurrency: Option<u64>,
    rate: Option<f64>,
    mut stats: LevelStats,
    open: bool,
) -> LevelReport {
    let topics = stats.take_topics();
    LevelReport {
        label: label.to_string(),
        concurrency,
        rate,
        derived: Derived::of(&stats, open),
        stats,
        v4: Default::default(),
        topics: TopicReport::rows(topics),
        topics_with_attempts: None,
        first_failures: Default::default(),
        topic_server: None,
        topic_churn: None,
        paused_s: None,
        delivery: None,
        server: None,
        generator: None,
        generator_bound: None,
        fairness: None,
        isolation: None,
        delivery_isolation: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{Attempt, Class, Outcome};
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
        assert_eq!(r.derived.samples, 1000);
        assert_eq!(r.derived.average_ms, 500); // mean 500.5 truncated
        assert_eq!(r.derived.min_ms, 1);
        assert_eq!(r.derived.max_ms, 1000);
        assert_eq!(r.derived.median_ms, 500);
        assert_eq!(r.derived.p90_ms, 900);
        assert_eq!(r.derived.p99_ms, 990);
        assert!((r.derived.error_pct - 0.2).abs() < 1e-9);
        // span: first start t0 → last end t0 + 999 + 1000 ms = 1.999 s
        assert!(
            (r.derived.throughput - 1000.0 / 1.999).abs() < 0.01,
            "{}",
            r.derived.throughput
        );
        assert!((r.derived.sent_kb_per_sec - 1000.0 / 1.999).abs() < 0.01);
        assert_eq!(r.stats.counts.get(Class::Http503), 2);
        assert_eq!(r.derived.status_codes["503"], 2);
    }
}
