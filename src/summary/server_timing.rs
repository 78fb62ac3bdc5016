//! A level's `Server-Timing` metrics as `summary.json` holds them: per name, count and
//! percentiles (`levels[].server_timing.<name>`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::stats::ServerTimingStats;

/// One metric name's durations in a level, µs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ServerTimingReport {
    /// Responses that declared the metric with a duration.
    pub count: u64,
    /// Median duration, µs.
    pub p50_us: u64,
    /// 99th percentile, µs.
    pub p99_us: u64,
    /// Largest duration, µs.
    pub max_us: u64,
}

/// The rows of `s`, by metric name.
pub fn server_timing_report(s: &ServerTimingStats) -> BTreeMap<String, ServerTimingReport> {
    s.by_name
        .iter()
        .map(|(name, h)| {
            // Nearest rank, clamped to the max, as the level's latency percentiles are read.
            let max = h.max();
            let q = |p: f64| h.value_at_quantile(p).min(max);
            let row = ServerTimingReport {
                count: h.len(),
                p50_us: q(0.50),
                p99_us: q(0.99),
                max_us: max,
            };
            (name.clone(), row)
        })
        .collect()
}

/// Where a level's time went, at the median: each declared stage's p50 and the rest of the
/// client-measured median of accepted attempts (network, queueing, the client), µs.
///
/// Medians do not add exactly (each is its own distribution's), so the rest is the client's
/// median less the stages' medians, floored at zero: a reading, not an identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeSplit {
    /// Each stage (metric name) and its p50, µs, in name order.
    pub stages: Vec<(String, u64)>,
    /// The client-measured median of accepted attempts, µs.
    pub client_p50_us: u64,
    /// `client_p50_us` less the stages' p50s, at least 0, µs.
    pub rest_us: u64,
}

/// The split of one level row; `None` when no response declared a stage.
pub fn time_split(row: &super::LevelReport) -> Option<TimeSplit> {
    if row.server_timing.is_empty() {
        return None;
    }
    let stages: Vec<(String, u64)> = row
        .server_timing
        .iter()
        .map(|(n, r)| (n.clone(), r.p50_us))
        .collect();
    let declared: u64 = stages.iter().map(|(_, us)| us).sum();
    let client = row.accepted_latency_us.p50;
    Some(TimeSplit {
        stages,
        client_p50_us: client,
        rest_us: client.saturating_sub(declared),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::ServerTimings;

    #[test]
    fn counts_and_percentiles_per_name() {
        let mut s = ServerTimingStats::default();
        for ms in 1..=100 {
            let mut t = ServerTimings::NONE;
            t.add_header(format!("hub;dur={ms}, broker;dur=0.5").as_bytes());
            s.record(&t);
        }
        let r = server_timing_report(&s);
        let hub = &r["hub"];
        assert_eq!(hub.count, 100);
        // Three significant digits: within 0.1 % of the exact rank.
        assert!((50_000..=50_050).contains(&hub.p50_us), "{hub:?}");
        assert!((99_000..=99_100).contains(&hub.p99_us), "{hub:?}");
        assert!((100_000..=100_100).contains(&hub.max_us), "{hub:?}");
        let mut row = crate::summary::build::level_report(
            "1",
            Some(1),
            None,
            &crate::stats::LevelStats::default(),
            false,
        );
        assert_eq!(time_split(&row), None);
        row.server_timing = r.clone();
        row.accepted_latency_us.p50 = 60_000;
        let split = time_split(&row).unwrap();
        assert_eq!(split.stages[0], ("broker".to_string(), 500));
        assert_eq!(split.rest_us, 60_000 - 500 - hub.p50_us);
        row.accepted_latency_us.p50 = 100;
        assert_eq!(time_split(&row).unwrap().rest_us, 0);
        assert_eq!(
            r["broker"],
            ServerTimingReport {
                count: 100,
                p50_us: 500,
                p99_us: 500,
                max_us: 500
            }
        );
    }
}
