//! How a topic's statistics are written and read: the non-zero class counts, the non-empty
//! buckets as one `"bucket:count bucket:count"` string, and the exact max. The one spelling of
//! shard artifacts, `topics.jsonl` and summary.json; `[[bucket, count]]`, as shard artifacts
//! spelled the buckets before, is read too.

use std::fmt;
use std::sync::OnceLock;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};

use super::{Counts, TopicStats};
use crate::result::Class;

/// A topic's counts as a map of its non-zero classes, in the names' order (a missing class
/// counts 0), written without building the map: 100,000 topics a level.
#[derive(Debug)]
pub struct NonZeroCounts<'a>(pub &'a Counts);

impl Serialize for NonZeroCounts<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        static BY_NAME: OnceLock<Vec<Class>> = OnceLock::new();
        let by_name = BY_NAME.get_or_init(|| {
            let mut all = Class::ALL.to_vec();
            all.sort_by_key(|k| k.name());
            all
        });
        let mut m = s.serialize_map(None)?;
        for k in by_name {
            match self.0.get(*k) {
                0 => {}
                n => m.serialize_entry(k.name(), &n)?,
            }
        }
        m.end()
    }
}

/// The non-empty buckets as `bucket:count` pairs separated by spaces (`"3:12 17:40"`): one
/// short string per topic, written straight into the output (no string built per topic).
#[derive(Debug)]
pub struct BucketText<'a>(pub &'a TopicStats);

impl fmt::Display for BucketText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, (i, c)) in self.0.nonempty_buckets().enumerate() {
            let sep = if k == 0 { "" } else { " " };
            write!(f, "{sep}{i}:{c}")?;
        }
        Ok(())
    }
}

impl Serialize for BucketText<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Buckets as read: `"bucket:count …"`, or `[[bucket, count], …]`.
#[derive(Debug, Default)]
pub struct BucketPairs(pub Vec<(usize, u32)>);

impl<'de> Deserialize<'de> for BucketPairs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Pairs;
        impl<'de> Visitor<'de> for Pairs {
            type Value = BucketPairs;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("\"bucket:count …\" or [[bucket, count], …]")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<BucketPairs, E> {
                text.split_whitespace()
                    .map(|pair| {
                        pair.split_once(':')
                            .and_then(|(i, c)| Some((i.parse().ok()?, c.parse().ok()?)))
                            .ok_or_else(|| {
                                E::custom(format!("bucket pair {pair:?} is not INDEX:COUNT"))
                            })
                    })
                    .collect::<Result<_, E>>()
                    .map(BucketPairs)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<BucketPairs, A::Error> {
                let mut v = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(256));
                while let Some(pair) = seq.next_element()? {
                    v.push(pair);
                }
                Ok(BucketPairs(v))
            }
        }
        d.deserialize_any(Pairs)
    }
}

impl Serialize for TopicStats {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_struct("TopicStats", 3)?;
        m.serialize_field("counts", &NonZeroCounts(&self.counts))?;
        m.serialize_field("buckets", &BucketText(self))?;
        m.serialize_field("max_us", &self.max_us)?;
        m.end()
    }
}

/// A topic's statistics as written (a row of `topics.jsonl` adds its index and the figures
/// read off them, which are not read back).
#[derive(Debug, Deserialize)]
pub struct TopicParts {
    /// The topic's index, in a row of `topics.jsonl` (absent from shard artifacts).
    #[serde(default)]
    pub topic: usize,
    #[serde(default)]
    counts: Counts,
    #[serde(default)]
    buckets: BucketPairs,
    #[serde(default)]
    max_us: u64,
}

impl TryFrom<TopicParts> for TopicStats {
    type Error = String;
    fn try_from(p: TopicParts) -> Result<Self, String> {
        TopicStats::from_parts(p.counts, p.max_us, p.buckets.0)
    }
}

impl<'de> Deserialize<'de> for TopicStats {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        TopicParts::deserialize(d)?
            .try_into()
            .map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TopicStats {
        let mut t = TopicStats::default();
        for us in [3, 3, 100, 5_000] {
            t.record(Class::Accepted, us);
        }
        t.record(Class::Http503, 40);
        t
    }

    #[test]
    fn a_topic_is_written_sparsely_with_its_buckets_as_one_string() {
        let t = sample();
        let j = serde_json::to_string(&t).unwrap();
        let want = format!(
            r#"{{"counts":{{"accepted":4,"http_503":1}},"buckets":"3:2 {}:1 {}:1 {}:1","max_us":5000}}"#,
            bucket_of(40),
            bucket_of(100),
            bucket_of(5_000)
        );
        assert_eq!(j, want);
        assert_eq!(serde_json::from_str::<TopicStats>(&j).unwrap(), t);
    }

    #[test]
    fn buckets_spelled_as_pairs_read_the_same() {
        let t = sample();
        let pairs: Vec<(usize, u32)> = t.nonempty_buckets().collect();
        let j = serde_json::json!({
            "counts": {"accepted": 4, "http_503": 1},
            "buckets": pairs,
            "max_us": 5000,
        });
        assert_eq!(serde_json::from_value::<TopicStats>(j).unwrap(), t);
    }

    #[test]
    fn a_bad_pair_or_a_bucket_beyond_the_layout_is_an_error_naming_it() {
        let e = serde_json::from_str::<TopicStats>(r#"{"buckets":"3-12","max_us":1}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"3-12\" is not INDEX:COUNT"), "{e}");
        let e = serde_json::from_str::<TopicStats>(r#"{"buckets":[[200,1]],"max_us":1}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("bucket 200 is beyond"), "{e}");
    }

    use super::super::bucket_of;
}
