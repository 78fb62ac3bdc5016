//! The merge as a stream: every shard's records in, in any interleaving; out, the run's start
//! once every head is in, each level once every shard has it, and the end. Shards' parts are
//! added in shard order whatever order they come in, so the result is exactly the one a merge
//! of whole artifacts gives; a level waits only for the shards that have not sent it yet.

use std::collections::{BTreeMap, VecDeque};

use super::add::{add_delivery, add_load, add_phase, add_servicebus, add_subscriptions, zero_like};
use super::seconds::{MergedSecond, SecondsMerge};
use crate::report::model::delivery_report::{LevelDelivery, SubscriptionReport};
use crate::report::model::ServiceBusInfo;
use crate::shard::artifact::{Load, ShardLevel, ShardMeta};
use crate::shard::assemble::Keyed;
use crate::shard::record::{ShardEnd, ShardHead, ShardRecord};
use crate::stats::LevelStats;
use crate::targets::PhaseResult;
use crate::topic_server::TopicFetchStats;

/// Why shards could not be merged. [`MergeError::MissingShards`] has its own exit code.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// Nothing to merge.
    #[error("no shard artifacts found (expected HUBLOAD-SHARD lines or shard-*.jsonl files)")]
    Empty,
    /// Shards of another run, or written differently: the field is named.
    #[error("shard {index} does not belong with shard {first}: {field} is {found:?}, expected {expected:?}")]
    Mismatch {
        /// The meta or level field that differs.
        field: String,
        /// The first shard (the reference).
        first: u32,
        /// The shard that differs.
        index: u32,
        /// The reference value.
        expected: String,
        /// This shard's value.
        found: String,
    },
    /// The same index was given twice.
    #[error("shard index {0} appears more than once; pass each shard once")]
    Duplicate(u32),
    /// Some indices in `0..count` are absent.
    #[error("missing shard index(es) {}; every index from 0 to count−1 is needed", join(.0))]
    MissingShards(Vec<u32>),
    /// A shard's stream contradicts itself.
    #[error("shard {index}: {reason}")]
    Stream {
        /// The shard.
        index: u32,
        /// What is wrong.
        reason: String,
    },
}

fn join(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

/// One merged level.
#[derive(Debug, Clone)]
pub struct MergedLevel {
    /// The level's label, as every shard reported it.
    pub label: String,
    /// The whole level's load: the sum of the shards' parts.
    pub load: Load,
    /// Every shard's stats added together.
    pub stats: LevelStats,
    /// Per class, the first failure of the lowest-numbered shard that saw one.
    pub first_failures: BTreeMap<String, String>,
    /// Every shard's deliveries added (see [`add_delivery`]); `None` when no shard had subscribers.
    pub delivery: Option<LevelDelivery>,
    /// Every shard's topic-server fetches added; `None` when no shard served topics.
    pub topic_server: Option<TopicFetchStats>,
    /// Every shard's topic churn added; `None` when no shard churned topics.
    pub topic_churn: Option<crate::stats::TopicChurnStats>,
}

/// What the merged run knows once every shard's head is in.
#[derive(Debug, Clone)]
pub struct MergedStart {
    /// How many shards the run has.
    pub shard_count: u32,
    /// Shard 0's meta, with `started_at` the earliest of all shards.
    pub meta: ShardMeta,
    /// The run configuration (shard 0's).
    pub config: serde_json::Value,
    /// Topic names by global index.
    pub topics: Vec<String>,
    /// All shards' registration phases added; `None` when no shard reported one.
    pub registration: Option<PhaseResult>,
    /// The tenant of each topic (shard 0's).
    pub topic_tenants: Vec<Option<u32>>,
    /// Every shard's subscription phase added.
    pub subscription: Option<SubscriptionReport>,
}

/// What the merged run knows once every shard's stream has ended.
#[derive(Debug, Clone)]
pub struct MergedEnd {
    /// True when any shard was partial, or (following) some stream did not end.
    pub partial: bool,
    /// The latest shard's end, RFC 3339 UTC.
    pub finished_at: String,
    /// Every shard's Service Bus section added; `None` for a hub run.
    pub servicebus: Option<ServiceBusInfo>,
    /// Every shard's unsubscription phase added.
    pub unsubscription: Option<SubscriptionReport>,
}

/// One level being merged: shards are added in index order; a shard ahead of its turn waits.
#[derive(Debug, Default)]
struct Pending {
    merged: Option<MergedLevel>,
    next: u32,
    waiting: BTreeMap<u32, ShardLevel>,
}

/// The merge in progress. Feed it records with [`push`](Self::push); take the start, the
/// levels and the end as they become ready.
#[derive(Debug, Default)]
pub struct StreamMerge {
    /// The first head's index and meta: what every other shard is checked against.
    first: Option<(u32, ShardMeta)>,
    /// The first head's topics, kept once.
    topics: Vec<String>,
    /// Every head (its topics dropped), until the start is taken.
    heads: BTreeMap<u32, ShardHead>,
    started: bool,
    /// Each shard's level labels so far.
    labels: BTreeMap<u32, Vec<String>>,
    /// Levels from `emitted` on.
    pending: VecDeque<Pending>,
    emitted: usize,
    ends: BTreeMap<u32, ShardEnd>,
    /// Shards whose head came (including after the start was taken).
    seen: Vec<u32>,
    /// Following: the shards' seconds, added up for the live page (a plain merge drops them).
    seconds: Option<SecondsMerge>,
    /// The merged run's start, Unix seconds, once taken.
    start_unix: Option<u64>,
}

impl StreamMerge {
    /// A merge that also adds the shards' seconds up ([`take_seconds`](Self::take_seconds)).
    pub fn with_seconds() -> Self {
        StreamMerge {
            seconds: Some(SecondsMerge::default()),
            ..StreamMerge::default()
        }
    }

    /// The merged seconds every shard has passed (with `all`, every second held), once the
    /// start has been taken.
    pub fn take_seconds(&mut self, all: bool) -> Vec<MergedSecond> {
        match (self.count(), self.start_unix, &mut self.seconds) {
            (Some(count), Some(start), Some(s)) => s.take(count, start, all),
            _ => Vec::new(),
        }
    }

    /// The run's shard count, once a head has said it.
    pub fn count(&self) -> Option<u32> {
        self.first.as_ref().map(|(_, m)| m.shard_count)
    }

    /// Levels merged and taken so far.
    pub fn levels_done(&self) -> usize {
        self.emitted
    }

    /// How many shards' streams have ended.
    pub fn ended(&self) -> usize {
        self.ends.len()
    }

    /// Every shard's stream has ended.
    pub fn all_ended(&self) -> bool {
        self.count().is_some_and(|c| self.ends.len() == c as usize)
    }

    /// The shards (by index) whose head has come and whose end has not, with the levels each
    /// has sent.
    pub fn unended(&self) -> Vec<(u32, usize)> {
        self.seen
            .iter()
            .filter(|i| !self.ends.contains_key(i))
            .map(|&i| (i, self.labels.get(&i).map_or(0, Vec::len)))
            .collect()
    }

    /// Take one record.
    pub fn push(&mut self, k: Keyed) -> Result<(), MergeError> {
        let (run_id, index, count) = k.key;
        if index >= count {
            return Err(MergeError::Stream {
                index,
                reason: format!("its index is not below the shard count {count}"),
            });
        }
        if let Some((first, m)) = &self.first {
            let mismatch = |field: &str, expected: String, found: String| MergeError::Mismatch {
                field: field.into(),
                first: *first,
                index,
                expected,
                found,
            };
            if run_id != m.run_id {
                return Err(mismatch("run_id", m.run_id.clone(), run_id));
            }
            if count != m.shard_count {
                return Err(mismatch(
                    "shard_count",
                    m.shard_count.to_string(),
                    count.to_string(),
                ));
            }
        }
        match k.record {
            ShardRecord::Head(h) => self.head(index, *h),
            ShardRecord::Level(l) => self.level(index, k.level, *l),
            ShardRecord::Second(s) => match &mut self.seconds {
                Some(m) => m
                    .push(index, *s)
                    .map_err(|reason| MergeError::Stream { index, reason }),
                None => Ok(()),
            },
            ShardRecord::End(e) => {
                if let Some(m) = &mut self.seconds {
                    m.end(index);
                }
                let got = self.labels.get(&index).map_or(0, Vec::len);
                if e.levels as usize != got {
                    return Err(MergeError::Stream {
                        index,
                        reason: format!("its end says {} level(s), {got} came", e.levels),
                    });
                }
                if self.ends.insert(index, *e).is_some() {
                    return Err(MergeError::Duplicate(index));
                }
                Ok(())
            }
        }
    }

    fn head(&mut self, index: u32, mut h: ShardHead) -> Result<(), MergeError> {
        if self.seen.contains(&index) {
            return Err(MergeError::Duplicate(index));
        }
        let Some((first, f)) = &self.first else {
            self.topics = std::mem::take(&mut h.topics);
            self.first = Some((index, h.meta.clone()));
            self.seen.push(index);
            self.heads.insert(index, h);
            return Ok(());
        };
        let m = &h.meta;
        let fields: [(&str, String, String); 5] = [
            (
                "hubload_version",
                f.hubload_version.clone(),
                m.hubload_version.clone(),
            ),
            (
                "layout",
                format!("{:?}", f.layout),
                format!("{:?}", m.layout),
            ),
            ("target", f.target.as_str().into(), m.target.as_str().into()),
            ("target_url", f.target_url.clone(), m.target_url.clone()),
            ("model", f.model.as_str().into(), m.model.as_str().into()),
        ];
        for (field, expected, found) in fields {
            if expected != found {
                return Err(MergeError::Mismatch {
                    field: field.into(),
                    first: *first,
                    index,
                    expected,
                    found,
                });
            }
        }
        if h.topics != self.topics {
            return Err(MergeError::Mismatch {
                field: "topics".into(),
                first: *first,
                index,
                expected: format!("{} topics", self.topics.len()),
                found: format!("{} topics", h.topics.len()),
            });
        }
        h.topics = Vec::new();
        self.seen.push(index);
        if !self.started {
            self.heads.insert(index, h);
        }
        Ok(())
    }

    fn level(&mut self, index: u32, n: usize, l: ShardLevel) -> Result<(), MergeError> {
        let labels = self.labels.entry(index).or_default();
        if n != labels.len() || n < self.emitted {
            return Err(MergeError::Stream {
                index,
                reason: format!("level {n} came after {} level(s)", labels.len()),
            });
        }
        labels.push(l.label.clone());
        while self.pending.len() <= n - self.emitted {
            self.pending.push_back(Pending::default());
        }
        let p = &mut self.pending[n - self.emitted];
        if p.waiting.insert(index, l).is_some() {
            return Err(MergeError::Duplicate(index));
        }
        while let Some(l) = p.waiting.remove(&p.next) {
            let i = p.next;
            p.next += 1;
            let m = p.merged.get_or_insert_with(|| MergedLevel {
                label: l.label.clone(),
                load: zero_like(l.load),
                stats: LevelStats::default(),
                first_failures: BTreeMap::new(),
                delivery: None,
                topic_server: None,
                topic_churn: None,
            });
            if l.label != m.label {
                let list = |i: u32| format!("[{}]", self.labels[&i].join(", "));
                return Err(MergeError::Mismatch {
                    field: "levels".into(),
                    first: 0,
                    index: i,
                    expected: self.labels.get(&0).map(|_| list(0)).unwrap_or_default(),
                    found: list(i),
                });
            }
            if std::mem::discriminant(&m.load) != std::mem::discriminant(&l.load) {
                return Err(MergeError::Mismatch {
                    field: format!("level {:?} load", m.label),
                    first: 0,
                    index: i,
                    expected: format!("{:?}", m.load),
                    found: format!("{:?}", l.load),
                });
            }
            add_level(m, &l);
        }
        Ok(())
    }

    /// The run's start, once (when every shard's head is in).
    pub fn take_start(&mut self) -> Option<MergedStart> {
        let count = self.count()?;
        if self.started || self.heads.len() != count as usize {
            return None;
        }
        self.started = true;
        let heads = std::mem::take(&mut self.heads);
        let mut registration: Option<PhaseResult> = None;
        for h in heads.values() {
            if let Some(p) = &h.registration {
                add_phase(registration.get_or_insert_with(PhaseResult::default), p);
            }
        }
        let subscription = add_subscriptions(heads.values().map(|h| h.subscription.as_ref()));
        // RFC 3339 UTC strings of one fixed format sort chronologically.
        let started_at = heads.values().map(|h| &h.meta.started_at).min().cloned();
        let h0 = heads.into_values().next()?;
        let mut meta = h0.meta;
        meta.shard_index = 0;
        meta.started_at = started_at.unwrap_or_default();
        self.start_unix = humantime::parse_rfc3339_weak(&meta.started_at)
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs());
        Some(MergedStart {
            shard_count: count,
            meta,
            config: h0.config,
            topics: std::mem::take(&mut self.topics),
            registration,
            topic_tenants: h0.topic_tenants,
            subscription,
        })
    }

    /// The next level, once every shard has sent it (and the start has been taken).
    pub fn next_level(&mut self) -> Option<MergedLevel> {
        let count = self.count()?;
        if !self.started || self.pending.front().is_none_or(|p| p.next < count) {
            return None;
        }
        self.emitted += 1;
        self.pending.pop_front()?.merged
    }

    /// The end. With `complete`, every shard must be there with the same levels and ended;
    /// without (a follow stopped early), what came is the end, marked partial.
    pub fn finish(self, complete: bool) -> Result<MergedEnd, MergeError> {
        let Some(count) = self.count() else {
            return Err(MergeError::Empty);
        };
        let missing: Vec<u32> = (0..count).filter(|i| !self.seen.contains(i)).collect();
        if complete && !missing.is_empty() {
            return Err(MergeError::MissingShards(missing));
        }
        if complete {
            if let Some(l0) = self.labels.get(&0) {
                for (&i, l) in &self.labels {
                    if l != l0 {
                        return Err(MergeError::Mismatch {
                            field: "levels".into(),
                            first: 0,
                            index: i,
                            expected: format!("[{}]", l0.join(", ")),
                            found: format!("[{}]", l.join(", ")),
                        });
                    }
                }
            }
            if let Some((i, n)) = self.unended().first() {
                return Err(MergeError::Stream {
                    index: *i,
                    reason: format!("its stream ends after {n} level(s) without its end record"),
                });
            }
        }
        let ends = self.ends;
        let servicebus = ends.values().filter_map(|e| e.servicebus.as_ref()).fold(
            None,
            |acc: Option<ServiceBusInfo>, s| {
                Some(match acc {
                    None => s.clone(),
                    Some(mut a) => {
                        add_servicebus(&mut a, s);
                        a
                    }
                })
            },
        );
        Ok(MergedEnd {
            partial: ends.len() != count as usize || ends.values().any(|e| e.partial),
            finished_at: ends
                .values()
                .map(|e| &e.finished_at)
                .max()
                .cloned()
                .unwrap_or_default(),
            servicebus,
            unsubscription: add_subscriptions(ends.values().map(|e| e.unsubscription.as_ref())),
        })
    }
}

/// Add one shard's level to the merged level.
fn add_level(m: &mut MergedLevel, l: &ShardLevel) {
    m.stats += &l.stats;
    m.load = add_load(m.load, l.load);
    for (class, text) in &l.first_failures {
        m.first_failures
            .entry(class.clone())
            .or_insert_with(|| text.clone());
    }
    if let Some(d) = &l.delivery {
        add_delivery(m.delivery.get_or_insert_with(Default::default), d);
    }
    if let Some(t) = &l.topic_server {
        *m.topic_server.get_or_insert_with(Default::default) += t;
    }
    if let Some(t) = &l.topic_churn {
        *m.topic_churn.get_or_insert_with(Default::default) += t;
    }
}
