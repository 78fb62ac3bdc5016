//! The server's series as last scraped (`--server-metrics`, `--server-query`), the shape the
//! scraper hands the live page: each series' value and, for a counter, its rate since the
//! round before.

use serde::Serialize;

/// Series a round hands on at most: as many as report.html charts per level.
pub const MAX_LIVE_SERIES: usize = 24;

/// One scrape round, every source's.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ServerNow {
    /// Rounds taken so far in the run (0: none yet).
    pub round: u64,
    /// The round's series, sorted by source, name and labels; the first
    /// [`MAX_LIVE_SERIES`] only (choose them with `--server-metrics-match`).
    pub series: Vec<ServerPoint>,
    /// Series the round had beyond those.
    pub more: usize,
    /// Sources that failed in the round.
    pub failed_sources: usize,
}

/// One series in one round.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerPoint {
    /// Where it came from: `host:port/path` (never credentials), or `promql`.
    pub source: String,
    /// The metric name (`--server-query`: the NAME given).
    pub series: String,
    /// `{k="v",…}`, sorted by label name; empty without labels.
    pub labels: String,
    /// `counter`, `gauge` or `untyped`.
    pub kind: String,
    /// The value scraped.
    pub value: f64,
    /// Counters: the increase per second since the series' sample in the round before (a
    /// reset counted as a restart from zero); `None` for other kinds and a first sample.
    pub rate: Option<f64>,
}
