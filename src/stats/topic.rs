//! Per-topic statistics: outcome counts and a compact, mergeable latency histogram per topic.
//!
//! The histogram is a fixed array of 200 `u32` buckets (800 bytes): values below 16 µs exactly,
//! then 8 buckets per power of two up to 2²⁷ µs (134 s); larger values land in the last bucket
//! (the exact max is kept beside it). A bucket spans at most 1/8 of its lower bound, so a
//! percentile read as the bucket's highest value is at most 12.5% above the true one. With the
//! counts (27 × u64) and the max, one topic costs 1,024 bytes per level, whatever the
//! number of requests. Merging is `+=` on every bucket: shards and stripes add exactly.
//!
//! While a level runs, every worker records into one shared [`TopicTable`] of the same layout
//! in atomics (one table per level, not one per recording stripe), so a level's per-topic
//! memory is [`TopicTable::bytes`] of its topic count, e.g. 5.1 MB for 5,000 topics.

use std::ops::AddAssign;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use serde::{Deserialize, Serialize};

use super::Counts;
use crate::result::Class;

/// Buckets per topic histogram.
pub const TOPIC_BUCKETS: usize = 200;
/// Buckets per power of two (above the 16 exact ones).
const SUB: u32 = 8;

/// The bucket of a value in µs.
pub fn bucket_of(us: u64) -> usize {
    if us < 16 {
        return us as usize;
    }
    let k = 63 - us.leading_zeros(); // floor(log2 us) ≥ 4
    let sub = ((us >> (k - 3)) & u64::from(SUB - 1)) as usize;
    (16 + (k as usize - 4) * SUB as usize + sub).min(TOPIC_BUCKETS - 1)
}

/// The highest value (µs) a bucket holds.
pub fn bucket_high(i: usize) -> u64 {
    if i < 16 {
        return i as u64;
    }
    let k = (i - 16) as u32 / SUB + 4;
    let sub = (i - 16) as u64 % u64::from(SUB);
    ((8 + sub) << (k - 3)) + (1 << (k - 3)) - 1
}

/// One topic in one level. Serialized sparsely: the non-zero class counts and
/// `[bucket, count]` for every non-empty bucket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "SparseTopic", try_from = "SparseTopic")]
pub struct TopicStats {
    /// Attempts per outcome class.
    pub counts: Counts,
    /// Latency histogram (see the module docs).
    pub buckets: [u32; TOPIC_BUCKETS],
    /// Exact largest latency, µs.
    pub max_us: u64,
}

impl Default for TopicStats {
    fn default() -> Self {
        TopicStats {
            counts: Counts::default(),
            buckets: [0; TOPIC_BUCKETS],
            max_us: 0,
        }
    }
}

impl TopicStats {
    /// Record one attempt.
    pub fn record(&mut self, class: Class, us: u64) {
        self.counts.bump(class);
        let b = &mut self.buckets[bucket_of(us)];
        *b = b.saturating_add(1);
        self.max_us = self.max_us.max(us);
    }

    /// Attempts recorded in the histogram.
    pub fn len(&self) -> u64 {
        self.buckets.iter().map(|c| u64::from(*c)).sum()
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The nearest-rank `q` quantile (rank ⌈q·N⌉, at least 1): the highest value of its bucket,
    /// clamped to the exact max. 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        let n = self.len();
        if n == 0 {
            return 0;
        }
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        let mut seen = 0u64;
        for (i, c) in self.buckets.iter().enumerate() {
            seen += u64::from(*c);
            if seen >= rank {
                return bucket_high(i).min(self.max_us);
            }
        }
        self.max_us
    }
}

/// How a [`TopicStats`] is written: what it holds, sparsely.
#[derive(Serialize, Deserialize)]
struct SparseTopic {
    /// Attempts per class name (non-zero classes only).
    counts: std::collections::BTreeMap<String, u64>,
    /// `[bucket, count]` for every non-empty bucket of the layout.
    buckets: Vec<(usize, u32)>,
    /// Exact largest latency, µs.
    max_us: u64,
}

impl From<TopicStats> for SparseTopic {
    fn from(t: TopicStats) -> Self {
        SparseTopic {
            counts: t.counts.nonzero_map(),
            buckets: t.sparse_buckets(),
            max_us: t.max_us,
        }
    }
}

impl TryFrom<SparseTopic> for TopicStats {
    type Error = String;
    fn try_from(a: SparseTopic) -> Result<Self, String> {
        let mut t = TopicStats {
            counts: Counts::from_map(&a.counts)?,
            max_us: a.max_us,
            ..TopicStats::default()
        };
        for (i, c) in a.buckets {
            *t.buckets.get_mut(i).ok_or_else(|| {
                format!("bucket {i} is beyond the {TOPIC_BUCKETS}-bucket layout")
            })? = c;
        }
        Ok(t)
    }
}

impl TopicStats {
    /// `(bucket, count)` for every non-empty bucket, in order.
    pub fn sparse_buckets(&self) -> Vec<(usize, u32)> {
        self.buckets
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| (i, *c))
            .collect()
    }
}

impl AddAssign<&TopicStats> for TopicStats {
    fn add_assign(&mut self, rhs: &TopicStats) {
        self.counts += &rhs.counts;
        for (a, b) in self.buckets.iter_mut().zip(rhs.buckets.iter()) {
            *a = a.saturating_add(*b);
        }
        self.max_us = self.max_us.max(rhs.max_us);
    }
}

/// One topic's counters in atomics: [`TopicStats`] that every worker adds to at once.
#[derive(Debug)]
struct AtomicTopic {
    counts: [AtomicU64; Class::COUNT],
    buckets: [AtomicU32; TOPIC_BUCKETS],
    max_us: AtomicU64,
}

impl Default for AtomicTopic {
    fn default() -> Self {
        AtomicTopic {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            buckets: std::array::from_fn(|_| AtomicU32::new(0)),
            max_us: AtomicU64::new(0),
        }
    }
}

/// Per-topic statistics of one level, shared by all its workers: three relaxed atomic adds per
/// attempt (class, bucket, and the max when it grows), exact, no lock.
#[derive(Debug)]
pub struct TopicTable {
    topics: Box<[AtomicTopic]>,
}

impl TopicTable {
    /// A zeroed table for `topics` topics.
    pub fn new(topics: usize) -> Self {
        TopicTable {
            topics: (0..topics).map(|_| AtomicTopic::default()).collect(),
        }
    }

    /// The memory a table of `topics` topics takes: 1,024 bytes a topic with today's 27 classes.
    pub fn bytes(topics: usize) -> usize {
        topics * std::mem::size_of::<AtomicTopic>()
    }

    /// Record one attempt of topic index `topic` (below the table's size).
    pub fn record(&self, topic: usize, class: Class, us: u64) {
        let t = &self.topics[topic];
        t.counts[class.index()].fetch_add(1, Relaxed);
        let b = &t.buckets[bucket_of(us)];
        if b.fetch_add(1, Relaxed) == u32::MAX {
            // Saturate, as `TopicStats::record` does, rather than wrap to zero.
            b.store(u32::MAX, Relaxed);
        }
        if us > t.max_us.load(Relaxed) {
            t.max_us.fetch_max(us, Relaxed);
        }
    }

    /// The table as plain [`TopicStats`], up to the last topic with an attempt.
    pub fn snapshot(&self) -> Vec<TopicStats> {
        let mut out: Vec<TopicStats> = self
            .topics
            .iter()
            .map(|t| {
                let mut s = TopicStats::default();
                for (a, b) in s.counts.0.iter_mut().zip(&t.counts) {
                    *a = b.load(Relaxed);
                }
                for (a, b) in s.buckets.iter_mut().zip(&t.buckets) {
                    *a = b.load(Relaxed);
                }
                s.max_us = t.max_us.load(Relaxed);
                s
            })
            .collect();
        while out.last().is_some_and(|t| t.counts.total() == 0) {
            out.pop();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_topic_costs_its_counters_buckets_and_max() {
        // A class counter × 8 B, 200 buckets × 4 B, the max: 1,024 B with 27 classes, within
        // the README's 1 KB.
        let want = Class::COUNT * 8 + TOPIC_BUCKETS * 4 + 8;
        assert_eq!(std::mem::size_of::<TopicStats>(), want);
        assert!(want <= 1024, "{want}");
    }

    #[test]
    fn a_shared_table_costs_the_same_per_topic_and_records_what_topic_stats_does() {
        // One table per level: 5,000 topics take 5.1 MB (README) however many workers record.
        let per_topic = Class::COUNT * 8 + TOPIC_BUCKETS * 4 + 8;
        assert_eq!(TopicTable::bytes(1), per_topic);
        assert_eq!(TopicTable::bytes(5_000), 5_000 * per_topic);
        assert_eq!(TopicTable::bytes(5_000), 5_120_000);
        let table = TopicTable::new(10);
        let mut plain = vec![TopicStats::default(); 7];
        std::thread::scope(|s| {
            for w in 0..4u64 {
                let table = &table;
                s.spawn(move || {
                    for i in (w..4000).step_by(4) {
                        table.record((i % 7) as usize, Class::ALL[(i % 3) as usize], i * 13);
                    }
                });
            }
        });
        for i in 0..4000u64 {
            plain[(i % 7) as usize].record(Class::ALL[(i % 3) as usize], i * 13);
        }
        // Topics 7..10 saw nothing: the snapshot ends at topic 6.
        assert_eq!(table.snapshot(), plain);
    }

    #[test]
    fn buckets_tile_the_range_in_order() {
        // Every value's bucket holds it, and buckets are contiguous and increasing.
        for us in [
            0u64,
            1,
            15,
            16,
            17,
            31,
            32,
            100,
            999,
            1000,
            65_535,
            1 << 26,
            (1 << 27) - 1,
        ] {
            let b = bucket_of(us);
            assert!(us <= bucket_high(b), "{us} in {b}");
            assert!(b == 0 || us > bucket_high(b - 1), "{us} in {b}");
        }
        assert_eq!(bucket_of((1 << 27) - 1), TOPIC_BUCKETS - 1);
        assert_eq!(bucket_of(u64::MAX), TOPIC_BUCKETS - 1);
        for i in 16..TOPIC_BUCKETS {
            let lo = bucket_high(i - 1) + 1;
            let width = bucket_high(i) - lo + 1;
            assert!(width * 8 <= lo, "bucket {i}: [{lo}, {}]", bucket_high(i));
            assert_eq!(bucket_of(lo), i);
        }
    }

    #[test]
    fn quantiles_are_nearest_rank_within_one_eighth() {
        let mut t = TopicStats::default();
        for us in 1..=1000u64 {
            t.record(Class::Accepted, us);
        }
        assert_eq!(t.len(), 1000);
        // p50: rank 500 → value 500, bucket [448, 511] → 511. p99: 990 → [960, 1023] → 1000 (max).
        assert_eq!(t.quantile(0.5), 511);
        assert_eq!(t.quantile(0.99), 1000);
        assert_eq!(t.quantile(0.0), 1);
        assert_eq!(t.quantile(1.0), 1000);
        let mut a = TopicStats::default();
        let mut b = TopicStats::default();
        for us in 1..=1000u64 {
            if us % 3 == 0 { &mut a } else { &mut b }.record(Class::Accepted, us);
        }
        a += &b;
        assert_eq!(a, t);
    }
}
