//! One topic in one level as the report holds it: the topic's index and its `TopicStats`, the
//! type the workers record and shard artifacts carry, plus the figures read off them
//! (`TopicFigures`, computed here only). A row of `topics.jsonl`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize};

use crate::result::Class;
use crate::stats::topic_serde::{BucketText, NonZeroCounts, TopicParts};
use crate::stats::TopicStats;

/// One topic in one level (a row of `topics.jsonl`; `levels[].topics[]` in older summaries).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TopicReport {
    /// Index into `Report::topics`.
    pub topic: usize,
    /// Its statistics, as recorded.
    pub stats: TopicStats,
}

/// What a topic's row shows, read off its statistics by [`TopicFigures::of`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TopicFigures {
    /// Attempts.
    pub attempts: u64,
    /// Attempts of an error class, % of the attempts (0 without attempts).
    pub error_pct: f64,
    /// Nearest-rank percentiles from the compact histogram (≤ 12.5 % high), µs.
    pub p50_us: u64,
    pub p99_us: u64,
    /// Exact largest latency, µs.
    pub max_us: u64,
}

impl TopicFigures {
    /// The figures of `s`.
    pub fn of(s: &TopicStats) -> Self {
        let attempts = s.counts.total();
        let error_pct = match attempts {
            0 => 0.0,
            n => s.counts.sum_where(Class::is_error) as f64 * 100.0 / n as f64,
        };
        TopicFigures {
            attempts,
            error_pct,
            p50_us: s.quantile(0.50),
            p99_us: s.quantile(0.99),
            max_us: s.max_us,
        }
    }
}

impl TopicReport {
    /// The rows of the topics that saw an attempt, `topics` indexed by topic (moved, not copied).
    pub fn rows(topics: Vec<TopicStats>) -> Vec<TopicReport> {
        (topics.into_iter().enumerate())
            .filter(|(_, t)| !t.is_empty())
            .map(|(topic, stats)| TopicReport { topic, stats })
            .collect()
    }

    /// Its figures.
    pub fn figures(&self) -> TopicFigures {
        TopicFigures::of(&self.stats)
    }
}

/// `topic`, `attempts`, `counts`, `p50_us`, `p99_us`, `max_us`, `buckets`: the statistics as
/// `TopicStats` writes them, with the index and the figures between.
impl Serialize for TopicReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let f = self.figures();
        let mut m = s.serialize_struct("TopicReport", 7)?;
        m.serialize_field("topic", &self.topic)?;
        m.serialize_field("attempts", &f.attempts)?;
        m.serialize_field("counts", &NonZeroCounts(&self.stats.counts))?;
        m.serialize_field("p50_us", &f.p50_us)?;
        m.serialize_field("p99_us", &f.p99_us)?;
        m.serialize_field("max_us", &f.max_us)?;
        m.serialize_field("buckets", &BucketText(&self.stats))?;
        m.end()
    }
}

/// The index and the statistics; the figures are read off them again.
impl<'de> Deserialize<'de> for TopicReport {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let parts = TopicParts::deserialize(d)?;
        let topic = parts.topic;
        let stats = parts.try_into().map_err(serde::de::Error::custom)?;
        Ok(TopicReport { topic, stats })
    }
}

// The shape `TopicReport` is written in, for the JSON schema.
/// One topic in one level (a row of `topics.jsonl`; `levels[].topics[]` in older summaries).
#[derive(JsonSchema)]
#[schemars(rename = "TopicReport")]
#[allow(dead_code)]
pub(super) struct TopicRowSchema {
    /// Index into `Report::topics`.
    topic: usize,
    /// Attempts.
    attempts: u64,
    /// Attempts per class name (non-zero classes only).
    counts: BTreeMap<String, u64>,
    /// Nearest-rank percentiles from the topic's compact histogram (≤ 12.5% high), µs.
    p50_us: u64,
    p99_us: u64,
    /// Exact largest latency, µs.
    max_us: u64,
    /// Every non-empty bucket of the 200-bucket layout (README: "Per-topic statistics") as
    /// `bucket:count` pairs separated by spaces (`"3:12 17:40"`), so tenants roll up exactly.
    buckets: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_is_written_as_before_and_read_back_from_its_statistics() {
        let mut stats = TopicStats::default();
        for _ in 0..52 {
            stats.record(Class::Accepted, 180);
        }
        stats.record(Class::Http503, 601);
        let t = TopicReport { topic: 3, stats };
        let f = t.figures();
        let j = serde_json::to_string(&t).unwrap();
        let b = |us| crate::stats::bucket_of(us);
        let want = format!(
            r#"{{"topic":3,"attempts":53,"counts":{{"accepted":52,"http_503":1}},"p50_us":{},"p99_us":601,"max_us":601,"buckets":"{}:52 {}:1"}}"#,
            f.p50_us,
            b(180),
            b(601)
        );
        assert_eq!(j, want);
        assert_eq!((f.attempts, f.max_us), (53, 601));
        assert!((f.error_pct - 100.0 / 53.0).abs() < 1e-12);
        assert_eq!(f.p50_us, crate::stats::bucket_high(b(180)));
        assert_eq!(serde_json::from_str::<TopicReport>(&j).unwrap(), t);
    }
}
