//! The timeout what-if table: from a run with a long client timeout, the share of attempts that
//! would have exceeded each shorter timeout T, and the expected share of failed events with
//! retries ([`event_failure`]), read off the latency histograms.
//!
//! Columns at or above the run's own timeout are flagged (its timed-out attempts were cut
//! off); an attempt in T's own histogram bucket exceeds T only when its whole bucket lies
//! above T (docs/gates.md, "Timeout what-if").

use std::time::Duration;

pub use crate::report::judge::verdict::{WhatIfRow, WhatIfTable};
use crate::stats::{Histogram, LevelStats};

/// Attempts in `h` whose whole histogram bucket lies above `t_us`.
fn count_above(h: &Histogram, t_us: u64) -> u64 {
    h.iter_recorded()
        .filter(|v| h.lowest_equivalent(v.value_iterated_to()) > t_us)
        .map(|v| v.count_at_value())
        .sum()
}

/// Expected share of failed events under the independent-attempts model.
///
/// Each attempt independently ends in one of three ways: a *retryable* failure with probability
/// `r` (slower than the timeout, a 5xx, a connection error: the client tries again, up to
/// `retries` more times), a *terminal* failure with probability `t` (denied, 4xx: never
/// retried), or success with probability `1 − r − t`. An event fails when its attempts run out
/// on retryable failures, or when some attempt fails terminally:
///
/// `P(fail) = r^(R+1) + t · (1 + r + r² + … + r^R)`
///
/// When every failure is retryable (`t = 0`, `r = p`) this is exactly `p^(R+1)`.
pub fn event_failure(r: f64, t: f64, retries: u32) -> f64 {
    let geometric: f64 = (0..=retries).map(|k| r.powi(k as i32)).sum();
    (r.powi(retries as i32 + 1) + t * geometric).clamp(0.0, 1.0)
}

/// One row from one level's statistics.
fn row(level: &str, s: &LevelStats, timeouts_us: &[u64], retries: u32) -> WhatIfRow {
    let n = s.attempts();
    let share = |k: u64| if n == 0 { 0.0 } else { k as f64 / n as f64 };
    // Failures the client would not retry, whatever the timeout. (Their latency is not kept
    // apart, so one that was slower than T is still counted here rather than as a timeout.)
    let terminal = s.counts.sum_where(|c| c.is_error() && !c.is_retryable());
    let mut exceed_share = Vec::with_capacity(timeouts_us.len());
    let mut failed_event_share = Vec::with_capacity(timeouts_us.len());
    for &t in timeouts_us {
        exceed_share.push(share(count_above(&s.latency, t)));
        // Success under T: accepted in the run, and no slower than T.
        let ok = s.accepted_latency.len() - count_above(&s.accepted_latency, t);
        // Everything else that is not terminal would have been retried.
        let retryable = n.saturating_sub(ok).saturating_sub(terminal);
        failed_event_share.push(if n == 0 {
            0.0
        } else {
            event_failure(share(retryable), share(terminal), retries)
        });
    }
    WhatIfRow {
        level: level.to_string(),
        attempts: n,
        exceed_share,
        failed_event_share,
    }
}

/// Build the table for `levels` (label, statistics) and the candidate `timeouts`.
///
/// `retries` is the run's `--retries`; `run_timeout` its `--timeout`, used to flag the columns
/// at or above it. Pure: reads the histograms and counters only.
pub fn what_if(
    levels: &[(String, &LevelStats)],
    timeouts: &[Duration],
    retries: u32,
    run_timeout: Duration,
) -> WhatIfTable {
    let timeouts_us: Vec<u64> = timeouts.iter().map(|t| t.as_micros() as u64).collect();
    WhatIfTable {
        timeouts_ms: timeouts.iter().map(|t| t.as_millis() as u64).collect(),
        retries,
        run_timeout_ms: run_timeout.as_millis() as u64,
        beyond_run_timeout: timeouts.iter().map(|t| *t >= run_timeout).collect(),
        rows: levels
            .iter()
            .map(|(label, s)| row(label, s, &timeouts_us, retries))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::judge::text::render_what_if;
    use crate::result::{Outcome, TimeoutKind};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Statistics from (latency ms, outcome, count) triples.
    fn stats(samples: &[(u64, Outcome, u64)]) -> LevelStats {
        let v: Vec<_> = samples.iter().map(|&(l, o, n)| (ms(l), o, n)).collect();
        crate::report::judge::known_latencies::stats(&v)
    }

    #[test]
    fn exact_shares_from_known_latencies() {
        // 100 attempts: 50 at 20 ms, 30 at 150 ms, 15 at 700 ms (all accepted), 5 cut off by the
        // run's 2 s timeout (recorded a little after it, as a timer fires).
        let s = stats(&[
            (20, Outcome::Accepted, 50),
            (150, Outcome::Accepted, 30),
            (700, Outcome::Accepted, 15),
            (2100, Outcome::Timeout(TimeoutKind::Response), 5),
        ]);
        let t = what_if(
            &[("50".to_string(), &s)],
            &[ms(100), ms(300), ms(1000), ms(2000), ms(5000)],
            0,
            ms(2000),
        );
        assert_eq!(t.timeouts_ms, vec![100, 300, 1000, 2000, 5000]);
        assert_eq!(t.beyond_run_timeout, vec![false, false, false, true, true]);
        let r = &t.rows[0];
        assert_eq!(r.attempts, 100);
        assert_eq!(r.exceed_share, vec![0.50, 0.20, 0.05, 0.05, 0.0]);
        // No retries: an event fails exactly when its one attempt does.
        assert_eq!(r.failed_event_share, vec![0.50, 0.20, 0.05, 0.05, 0.05]);
        let text = render_what_if(&t);
        assert!(text.contains(">2s*"), "{text}");
        assert!(text.contains("50.000%"), "{text}");
    }

    #[test]
    fn retries_give_p_to_the_r_plus_one_when_every_failure_is_retryable() {
        // 10 attempts: 6 fast accepted, 2 slow accepted (400 ms), 2 answered 503 quickly.
        let s = stats(&[
            (10, Outcome::Accepted, 6),
            (400, Outcome::Accepted, 2),
            (10, Outcome::Http503, 2),
        ]);
        let t = what_if(&[("8".into(), &s)], &[ms(300), ms(500)], 2, ms(1000));
        let r = &t.rows[0];
        assert_eq!(r.exceed_share, vec![0.2, 0.0]);
        // p = 0.2 slower + 0.2 503 = 0.4 at 300 ms; 0.2 at 500 ms; events fail with p³.
        let want = [0.4f64.powi(3), 0.2f64.powi(3)];
        for (got, want) in r.failed_event_share.iter().zip(want) {
            assert!((got - want).abs() < 1e-12, "{got} vs {want}");
        }
        assert!(render_what_if(&t).contains("events >300ms"));
    }

    #[test]
    fn terminal_failures_are_not_retried() {
        // Half denied (never retried), half accepted fast: with any retries half the events fail.
        let s = stats(&[(5, Outcome::Accepted, 4), (5, Outcome::Denied, 4)]);
        let t = what_if(&[("1".into(), &s)], &[ms(100)], 3, ms(5000));
        assert_eq!(t.rows[0].exceed_share, vec![0.0]);
        assert!((t.rows[0].failed_event_share[0] - 0.5).abs() < 1e-12);
    }

    #[test]
    fn empty_level_has_zero_shares() {
        let s = LevelStats::default();
        let t = what_if(&[("1".into(), &s)], &[ms(100)], 1, ms(5000));
        assert_eq!(t.rows[0].attempts, 0);
        assert_eq!(t.rows[0].exceed_share, vec![0.0]);
        assert_eq!(t.rows[0].failed_event_share, vec![0.0]);
    }

    #[test]
    fn event_failure_model() {
        assert_eq!(event_failure(0.5, 0.0, 0), 0.5);
        assert!((event_failure(0.5, 0.0, 2) - 0.125).abs() < 1e-12);
        assert_eq!(event_failure(0.0, 0.0, 5), 0.0);
        assert_eq!(event_failure(1.0, 0.0, 5), 1.0);
        assert_eq!(event_failure(0.0, 1.0, 5), 1.0);
        // r = 0.5, t = 0.25, one retry: 0.25 + 0.25·1.5 = 0.625
        assert!((event_failure(0.5, 0.25, 1) - 0.625).abs() < 1e-12);
    }
}
