//! Where a level's time went: the stages a server declared in `Server-Timing` and the rest of
//! the client's median, read off a level row (for the table and the HTML).

use super::LevelReport;

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
pub fn time_split(row: &LevelReport) -> Option<TimeSplit> {
    if row.derived.server_timing.is_empty() {
        return None;
    }
    let stages: Vec<(String, u64)> = row
        .derived
        .server_timing
        .iter()
        .map(|(n, r)| (n.clone(), r.p50_us))
        .collect();
    let declared: u64 = stages.iter().map(|(_, us)| us).sum();
    let client = row.derived.accepted_latency_us.p50;
    Some(TimeSplit {
        stages,
        client_p50_us: client,
        rest_us: client.saturating_sub(declared),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::server_timing::ServerTimingReport;

    #[test]
    fn stages_and_the_rest_floored_at_zero() {
        let stage = |p50_us| ServerTimingReport {
            count: 1,
            p50_us,
            p99_us: p50_us,
            max_us: p50_us,
        };
        let mut row = crate::report::model::build::level_report(
            "1",
            Some(1),
            None,
            &crate::stats::LevelStats::default(),
            false,
        );
        assert_eq!(time_split(&row), None);
        row.derived
            .server_timing
            .insert("broker".into(), stage(500));
        row.derived.server_timing.insert("hub".into(), stage(2_000));
        row.derived.accepted_latency_us.p50 = 60_000;
        let split = time_split(&row).unwrap();
        assert_eq!(
            split.stages,
            [("broker".to_string(), 500), ("hub".to_string(), 2_000)]
        );
        assert_eq!(split.rest_us, 57_500);
        row.derived.accepted_latency_us.p50 = 100;
        assert_eq!(time_split(&row).unwrap().rest_us, 0);
    }
}
