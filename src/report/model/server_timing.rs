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
