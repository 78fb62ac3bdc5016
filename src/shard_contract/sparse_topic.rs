//! One topic of one level as shards write it and reports show it: counts and the non-empty
//! buckets of its latency layout, sparsely.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::stats::TopicStats;

/// One topic of one level: what [`TopicStats`] holds, sparsely.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopicArtifact {
    /// Attempts per class name (non-zero classes only).
    pub counts: BTreeMap<String, u64>,
    /// `[bucket, count]` for every non-empty bucket of the 200-bucket layout.
    pub buckets: Vec<(usize, u32)>,
    /// Exact largest latency, µs.
    pub max_us: u64,
}

impl From<&TopicStats> for TopicArtifact {
    fn from(t: &TopicStats) -> Self {
        TopicArtifact {
            counts: t
                .counts
                .to_map()
                .into_iter()
                .filter(|(_, v)| *v > 0)
                .collect(),
            buckets: t
                .buckets
                .iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(i, c)| (i, *c))
                .collect(),
            max_us: t.max_us,
        }
    }
}
