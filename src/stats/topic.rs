//! Per-topic statistics: outcome counts and a compact, mergeable latency histogram per topic.
//!
//! 200 buckets: below 16 µs exact, then 8 per power of two up to 2²⁷ µs, so a percentile is
//! at most 12.5 % above the true one; merging is `+=` on every bucket. While a level runs,
//! workers record into one shared [`TopicTable`] of atomics ([`TopicTable::bytes`] a topic
//! count); a finished level's topics are [`TopicStats`], the non-empty buckets only
//! (README.md, "Per-topic statistics").

use std::collections::BTreeMap;
use std::ops::AddAssign;
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use super::{Counts, Writers};
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

/// One topic in one level (or added over levels). The histogram is held sparsely: the
/// non-empty buckets only, as `(bucket, count)` in bucket order, so a topic costs 248 bytes
/// plus 8 per bucket it uses (a topic with a few attempts: a few buckets), not the 800 B of
/// the full layout; reading and adding are exact as on the dense layout. Serialized the same way
/// (`topic_serde.rs`): the non-zero class counts, the non-empty buckets and the max.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicStats {
    /// Attempts per outcome class.
    pub counts: Counts,
    /// The non-empty buckets of the layout (see the module docs), in bucket order; never a
    /// zero count.
    buckets: Vec<(u8, u32)>,
    /// Exact largest latency, µs.
    pub max_us: u64,
}

impl TopicStats {
    /// Record one attempt.
    pub fn record(&mut self, class: Class, us: u64) {
        self.counts.bump(class);
        self.add_to_bucket(bucket_of(us), 1);
        self.max_us = self.max_us.max(us);
    }

    /// Where bucket `key`'s entry is (`Ok`), or where it would go (`Err`).
    fn find(&self, key: u8) -> Result<usize, usize> {
        self.buckets.binary_search_by_key(&key, |b| b.0)
    }

    /// Add `n` (saturating) to bucket `i` (below [`TOPIC_BUCKETS`]).
    fn add_to_bucket(&mut self, i: usize, n: u32) {
        if n == 0 {
            return;
        }
        let key = i as u8;
        match self.find(key) {
            Ok(at) => self.buckets[at].1 = self.buckets[at].1.saturating_add(n),
            Err(at) => self.buckets.insert(at, (key, n)),
        }
    }

    /// Statistics from their parts: class counts, the exact max, and `(bucket, count)` pairs in
    /// any order (a bucket named twice keeps its last count, a zero count is no bucket).
    pub fn from_parts(
        counts: Counts,
        max_us: u64,
        buckets: impl IntoIterator<Item = (usize, u32)>,
    ) -> Result<Self, String> {
        let mut t = TopicStats {
            counts,
            max_us,
            buckets: Vec::new(),
        };
        for (i, c) in buckets {
            if i >= TOPIC_BUCKETS {
                return Err(format!(
                    "bucket {i} is beyond the {TOPIC_BUCKETS}-bucket layout"
                ));
            }
            let key = i as u8;
            match t.find(key) {
                Ok(at) if c == 0 => {
                    t.buckets.remove(at);
                }
                Ok(at) => t.buckets[at].1 = c,
                Err(_) if c == 0 => {}
                Err(at) => t.buckets.insert(at, (key, c)),
            }
        }
        Ok(t)
    }

    /// The count of bucket `i` (0 beyond the layout).
    pub fn bucket(&self, i: usize) -> u32 {
        u8::try_from(i)
            .ok()
            .and_then(|key| self.find(key).ok())
            .map_or(0, |at| self.buckets[at].1)
    }

    /// `(bucket, count)` for every non-empty bucket, in order.
    pub fn nonempty_buckets(&self) -> impl Iterator<Item = (usize, u32)> + '_ {
        self.buckets.iter().map(|&(i, c)| (usize::from(i), c))
    }

    /// Attempts recorded in the histogram.
    pub fn len(&self) -> u64 {
        self.buckets.iter().map(|b| u64::from(b.1)).sum()
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
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
        for (i, c) in self.nonempty_buckets() {
            seen += u64::from(c);
            if seen >= rank {
                return bucket_high(i).min(self.max_us);
            }
        }
        self.max_us
    }
}

impl AddAssign<&TopicStats> for TopicStats {
    fn add_assign(&mut self, rhs: &TopicStats) {
        self.counts += &rhs.counts;
        self.max_us = self.max_us.max(rhs.max_us);
        if rhs.buckets.is_empty() {
            return;
        }
        if self.buckets.is_empty() {
            self.buckets.clone_from(&rhs.buckets);
            return;
        }
        // Merge the two sorted lists.
        let (a, b) = (&self.buckets, &rhs.buckets);
        let mut out = Vec::with_capacity(a.len() + b.len());
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            if a[i].0 == b[j].0 {
                out.push((a[i].0, a[i].1.saturating_add(b[j].1)));
                i += 1;
                j += 1;
            } else if a[i].0 < b[j].0 {
                out.push(a[i]);
                i += 1;
            } else {
                out.push(b[j]);
                j += 1;
            }
        }
        out.extend_from_slice(&a[i..]);
        out.extend_from_slice(&b[j..]);
        self.buckets = out;
    }
}

/// One topic's counters in atomics: [`TopicStats`] that every worker adds to at once. A bucket
/// is 16 bits; each time one wraps, its 65,536 are carried to [`TopicTable::carries`].
#[derive(Debug)]
struct AtomicTopic {
    counts: [AtomicU64; Class::COUNT],
    buckets: [AtomicU16; TOPIC_BUCKETS],
    max_us: AtomicU64,
}

impl Default for AtomicTopic {
    fn default() -> Self {
        AtomicTopic {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            buckets: std::array::from_fn(|_| AtomicU16::new(0)),
            max_us: AtomicU64::new(0),
        }
    }
}

/// Per-topic statistics of one level, shared by all its workers: three relaxed adds per
/// attempt (class, bucket, and the max when it grows; atomic read-modify-writes only when
/// the workers run on several threads, see [`Writers`]), exact, no lock but once every
/// 65,536 attempts of one topic's bucket.
#[derive(Debug)]
pub struct TopicTable {
    topics: Box<[AtomicTopic]>,
    writers: Writers,
    /// What wrapped buckets carried: (topic, bucket) → attempts beyond their 16 bits.
    carries: Mutex<BTreeMap<(usize, usize), u64>>,
}

impl TopicTable {
    /// A zeroed table for `topics` topics, added to by `writers`.
    pub fn new(topics: usize, writers: Writers) -> Self {
        TopicTable {
            topics: (0..topics).map(|_| AtomicTopic::default()).collect(),
            writers,
            carries: Mutex::default(),
        }
    }

    /// The memory a table of `topics` topics takes: 624 bytes a topic with today's 27 classes
    /// (and 24 B per carry, a few at most per busy topic).
    pub fn bytes(topics: usize) -> usize {
        topics * std::mem::size_of::<AtomicTopic>()
    }

    /// Record one attempt of topic index `topic` (below the table's size).
    pub fn record(&self, topic: usize, class: Class, us: u64) {
        let t = &self.topics[topic];
        self.writers.add_u64(&t.counts[class.index()], 1);
        let i = bucket_of(us);
        if self.writers.add_u16(&t.buckets[i], 1) == u16::MAX {
            // The bucket wrapped to 0: carry its 65,536 (the same test as a saturating u32's,
            // so no more work per attempt than that).
            self.carry(topic, i);
        }
        if us > t.max_us.load(Relaxed) {
            t.max_us.fetch_max(us, Relaxed);
        }
    }

    #[cold]
    fn carry(&self, topic: usize, bucket: usize) {
        let mut c = self.carries.lock().unwrap_or_else(|e| e.into_inner());
        *c.entry((topic, bucket)).or_default() += 1 << 16;
    }

    /// The table as plain [`TopicStats`], up to the last topic with an attempt (a bucket past
    /// `u32::MAX` saturates, as [`TopicStats`] does). A topic without attempts has no bucket
    /// to read: its 200 are skipped.
    pub fn snapshot(&self) -> Vec<TopicStats> {
        let carries = self.carries.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<TopicStats> = self
            .topics
            .iter()
            .enumerate()
            .map(|(topic, t)| {
                let mut s = TopicStats::default();
                for (a, b) in s.counts.0.iter_mut().zip(&t.counts) {
                    *a = b.load(Relaxed);
                }
                // Every attempt counts a class before its bucket.
                if s.counts.total() == 0 {
                    return s;
                }
                s.max_us = t.max_us.load(Relaxed);
                // Bucket order, non-zero only: the sparse form's invariant.
                for (i, b) in t.buckets.iter().enumerate() {
                    let carried = carries.get(&(topic, i)).copied().unwrap_or(0);
                    let c = u64::from(b.load(Relaxed)) + carried;
                    if c > 0 {
                        s.buckets
                            .push((i as u8, u32::try_from(c).unwrap_or(u32::MAX)));
                    }
                }
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
    fn a_finished_topic_costs_its_counters_max_and_used_buckets() {
        // 27 class counters × 8 B, the max, the bucket list's pointer, length and capacity:
        // 248 B, and 8 B on the heap per bucket used; the dense layout of `u32` took 1,024 B.
        let want = Class::COUNT * 8 + 8 + 3 * 8;
        assert_eq!(std::mem::size_of::<TopicStats>(), want);
        assert_eq!(want, 248);
        let mut t = TopicStats::default();
        for us in [100, 101, 5_000, 100] {
            t.record(Class::Accepted, us);
        }
        assert_eq!(t.buckets.capacity() * 8, 32, "{:?}", t.buckets);
        assert_eq!(t.nonempty_buckets().collect::<Vec<_>>().len(), 2);
    }

    #[test]
    fn the_sparse_form_reads_and_adds_as_the_dense_layout() {
        // Oracle: a dense array of the layout, filled by hand from bucket_of.
        let values: Vec<u64> = (0..3_000u64).map(|i| (i * i * 7919) % 9_000_000).collect();
        let mut dense = [0u64; TOPIC_BUCKETS];
        let mut whole = TopicStats::default();
        let (mut a, mut b) = (TopicStats::default(), TopicStats::default());
        for (k, &us) in values.iter().enumerate() {
            dense[bucket_of(us)] += 1;
            whole.record(Class::Accepted, us);
            let half: &mut TopicStats = if k % 3 == 0 { &mut a } else { &mut b };
            half.record(Class::Accepted, us);
        }
        for (i, want) in dense.iter().enumerate() {
            assert_eq!(u64::from(whole.bucket(i)), *want, "bucket {i}");
        }
        let used = dense.iter().filter(|c| **c > 0).count();
        assert_eq!(whole.nonempty_buckets().collect::<Vec<_>>().len(), used);
        a += &b;
        assert_eq!(a, whole);
        // Read back from parts in any order, a repeated bucket keeping its last count.
        let mut parts = whole.nonempty_buckets().collect::<Vec<_>>();
        parts.reverse();
        parts.push((parts[0].0, 0));
        parts.push((199, 0));
        let back = TopicStats::from_parts(whole.counts, whole.max_us, parts.clone()).unwrap();
        let mut want = whole.clone();
        want.buckets.pop();
        assert_eq!(back, want);
        let e = TopicStats::from_parts(Counts::default(), 0, [(200, 1)]).unwrap_err();
        assert!(e.contains("bucket 200 is beyond"), "{e}");
        assert_eq!(whole.bucket(10_000), 0);
    }

    #[test]
    fn a_shared_table_costs_the_same_per_topic_and_records_what_topic_stats_does() {
        // One table per level: 5,000 topics take 3.1 MB (README) however many workers record:
        // 27 class counters of 8 B, 200 buckets of 2 B, the max.
        let per_topic = Class::COUNT * 8 + TOPIC_BUCKETS * 2 + 8;
        assert_eq!(TopicTable::bytes(1), per_topic);
        assert_eq!(TopicTable::bytes(5_000), 5_000 * per_topic);
        assert_eq!(TopicTable::bytes(5_000), 3_120_000);
        let table = TopicTable::new(10, Writers::Threads);
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
    fn sixteen_bit_buckets_that_wrap_carry_every_attempt() {
        // 4 threads put 300,000 attempts (4.6 wraps' worth) into one bucket of topic 1 and
        // 70,000 spread over two buckets of topic 0: the snapshot counts each exactly, as
        // plain `TopicStats` do.
        let table = TopicTable::new(2, Writers::Threads);
        std::thread::scope(|s| {
            for w in 0..4u64 {
                let table = &table;
                s.spawn(move || {
                    for _ in (w..300_000).step_by(4) {
                        table.record(1, Class::Accepted, 1_000);
                    }
                    for i in (w..70_000).step_by(4) {
                        table.record(0, Class::ALL[(i % 2) as usize], 10 + i % 2 * 5_000);
                    }
                });
            }
        });
        let mut plain = vec![TopicStats::default(); 2];
        for _ in 0..300_000 {
            plain[1].record(Class::Accepted, 1_000);
        }
        for i in 0..70_000u64 {
            plain[0].record(Class::ALL[(i % 2) as usize], 10 + i % 2 * 5_000);
        }
        let got = table.snapshot();
        assert_eq!(got[1].bucket(bucket_of(1_000)), 300_000);
        assert_eq!(got, plain);
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
