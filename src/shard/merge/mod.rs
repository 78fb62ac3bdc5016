//! The exact merge of a run's shard artifacts into one run: check that they belong together,
//! that every shard is there once, then add every level with `+=`.
//!
//! Histograms share one layout, so the merged percentiles are exactly those one process would
//! have recorded; nothing is averaged. Thresholds are judged by the caller on the result only.

use std::collections::BTreeMap;

use super::artifact::{Load, ShardArtifact, ShardMeta};
use crate::stats::LevelStats;
use crate::summary::delivery_report::{LevelDelivery, SubscriptionReport};
use crate::summary::ServiceBusInfo;
use crate::targets::PhaseResult;
use crate::topic_server::TopicFetchStats;

/// Why shards could not be merged. [`MergeError::MissingShards`] has its own exit code.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// Nothing to merge.
    #[error("no shard artifacts found (expected HUBLOAD-SHARD lines or shard-*.json files)")]
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

/// A whole run rebuilt from its shards; what reporters need to write the single-run reports.
#[derive(Debug, Clone)]
pub struct MergedRun {
    /// The run id.
    pub run_id: String,
    /// How many shards were merged.
    pub shard_count: u32,
    /// Shard 0's meta, with `started_at` the earliest and `finished_at` the latest of all shards.
    pub meta: ShardMeta,
    /// The run configuration (shard 0's).
    pub config: serde_json::Value,
    /// Topic names by global index.
    pub topics: Vec<String>,
    /// All shards' registration phases added (topics are striped, so they add up to the run's);
    /// `None` when no shard reported one.
    pub registration: Option<PhaseResult>,
    /// The levels in run order.
    pub levels: Vec<MergedLevel>,
    /// True when any shard was partial.
    pub partial: bool,
    /// Every shard's Service Bus section added (see `add_servicebus`); `None` for a hub run.
    pub servicebus: Option<ServiceBusInfo>,
    /// The tenant of each topic (shard 0's; every shard derives it from the same workload).
    pub topic_tenants: Vec<Option<u32>>,
    /// Every shard's subscription phase added (each subscribed its own topics).
    pub subscription: Option<SubscriptionReport>,
    /// Every shard's unsubscription phase added.
    pub unsubscription: Option<SubscriptionReport>,
}

/// Merge the shards of one run. Order does not matter.
pub fn merge(mut shards: Vec<ShardArtifact>) -> Result<MergedRun, MergeError> {
    shards.sort_by_key(|s| s.meta.shard_index);
    let first = shards.first().ok_or(MergeError::Empty)?;
    check_together(first, &shards)?;

    let count = first.meta.shard_count;
    let mut seen = vec![false; count as usize];
    for s in &shards {
        // check_together ensured every index is below the common count.
        let slot = &mut seen[s.meta.shard_index as usize];
        if *slot {
            return Err(MergeError::Duplicate(s.meta.shard_index));
        }
        *slot = true;
    }
    let missing: Vec<u32> = (0..count).filter(|&i| !seen[i as usize]).collect();
    if !missing.is_empty() {
        return Err(MergeError::MissingShards(missing));
    }

    let mut levels: Vec<MergedLevel> = first
        .levels
        .iter()
        .map(|l| MergedLevel {
            label: l.label.clone(),
            load: zero_like(l.load),
            stats: LevelStats::default(),
            first_failures: BTreeMap::new(),
            delivery: None,
            topic_server: None,
            topic_churn: None,
        })
        .collect();
    let mut registration: Option<PhaseResult> = None;
    for s in &shards {
        for (m, l) in levels.iter_mut().zip(&s.levels) {
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
        if let Some(p) = &s.registration {
            add_phase(registration.get_or_insert_with(PhaseResult::default), p);
        }
    }
    let servicebus = shards.iter().filter_map(|s| s.servicebus.as_ref()).fold(
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

    let mut meta = first.meta.clone();
    meta.shard_index = 0;
    // RFC 3339 UTC strings of one fixed format sort chronologically.
    meta.started_at = shards
        .iter()
        .map(|s| &s.meta.started_at)
        .min()
        .cloned()
        .unwrap_or_default();
    meta.finished_at = shards
        .iter()
        .map(|s| &s.meta.finished_at)
        .max()
        .cloned()
        .unwrap_or_default();
    Ok(MergedRun {
        run_id: meta.run_id.clone(),
        shard_count: count,
        meta,
        config: first.config.clone(),
        topics: first.topics.clone(),
        registration,
        levels,
        partial: shards.iter().any(|s| s.partial),
        servicebus,
        topic_tenants: first.topic_tenants.clone(),
        subscription: add_subscriptions(shards.iter().map(|s| s.subscription.as_ref())),
        unsubscription: add_subscriptions(shards.iter().map(|s| s.unsubscription.as_ref())),
    })
}

/// Add one shard's deliveries of a level to `acc`: counters, per-subscriber counters and both
/// histograms with `+=` (each shard checks the deliveries of its own topics, so nothing is
/// counted twice); the span is the longest shard's (they ran at once); backlogs add.
pub fn add_delivery(acc: &mut LevelDelivery, d: &LevelDelivery) {
    acc.stats += &d.stats;
    acc.seconds = acc.seconds.max(d.seconds);
    acc.backlog += d.backlog;
}

/// The shards' subscription phases added: counts add, the duration is the slowest shard's,
/// the first error the lowest-numbered shard's; `None` when no shard had one.
fn add_subscriptions<'a>(
    phases: impl Iterator<Item = Option<&'a SubscriptionReport>>,
) -> Option<SubscriptionReport> {
    phases.flatten().fold(None, |acc, p| {
        let mut a = acc.unwrap_or_default();
        a.requested += p.requested;
        a.accepted += p.accepted;
        a.verified += p.verified;
        a.denied += p.denied;
        a.unverified += p.unverified;
        a.refused += p.refused;
        a.duration_s = a.duration_s.max(p.duration_s);
        if a.first_error.is_none() {
            a.first_error.clone_from(&p.first_error);
        }
        Some(a)
    })
}

/// Every shard must agree with the first on run, count, version, layout, target and levels.
fn check_together(first: &ShardArtifact, shards: &[ShardArtifact]) -> Result<(), MergeError> {
    let f = &first.meta;
    for s in shards {
        let m = &s.meta;
        let mismatch = |field: &str, expected: String, found: String| MergeError::Mismatch {
            field: field.to_string(),
            first: f.shard_index,
            index: m.shard_index,
            expected,
            found,
        };
        let fields: [(&str, String, String); 8] = [
            ("run_id", f.run_id.clone(), m.run_id.clone()),
            (
                "shard_count",
                f.shard_count.to_string(),
                m.shard_count.to_string(),
            ),
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
            ("levels", labels(first), labels(s)),
        ];
        for (field, expected, found) in fields {
            if expected != found {
                return Err(mismatch(field, expected, found));
            }
        }
        if s.topics != first.topics {
            return Err(mismatch(
                "topics",
                format!("{} topics", first.topics.len()),
                format!("{} topics", s.topics.len()),
            ));
        }
        for (a, b) in first.levels.iter().zip(&s.levels) {
            if std::mem::discriminant(&a.load) != std::mem::discriminant(&b.load) {
                return Err(mismatch(
                    &format!("level {:?} load", a.label),
                    format!("{:?}", a.load),
                    format!("{:?}", b.load),
                ));
            }
        }
        if m.shard_index >= f.shard_count {
            return Err(mismatch(
                "shard_index",
                format!("below {}", f.shard_count),
                m.shard_index.to_string(),
            ));
        }
    }
    Ok(())
}

fn labels(s: &ShardArtifact) -> String {
    let l: Vec<&str> = s.levels.iter().map(|l| l.label.as_str()).collect();
    format!("[{}]", l.join(", "))
}

fn zero_like(l: Load) -> Load {
    match l {
        Load::Concurrency(_) => Load::Concurrency(0),
        Load::Rate(_) => Load::Rate(0.0),
    }
}

fn add_load(a: Load, b: Load) -> Load {
    match (a, b) {
        (Load::Concurrency(x), Load::Concurrency(y)) => Load::Concurrency(x + y),
        (Load::Rate(x), Load::Rate(y)) => Load::Rate(x + y),
        // check_together rejected mixed kinds.
        (a, _) => a,
    }
}

/// Add one shard's Service Bus section to `acc`: counts add; endpoint, topic mapping and the
/// per-process connection setting are the run's (the same on every shard). Each shard ran its
/// own embedded emulator, so the emulators' counts add too; a shard without one clears them.
fn add_servicebus(acc: &mut ServiceBusInfo, s: &ServiceBusInfo) {
    acc.reconnects += s.reconnects;
    acc.token_puts += s.token_puts;
    for (k, v) in &s.conditions {
        *acc.conditions.entry(k.clone()).or_default() += v;
    }
    acc.emulator = match (acc.emulator.take(), &s.emulator) {
        (Some(mut a), Some(e)) => {
            a.accepted += e.accepted;
            a.throttled += e.throttled;
            a.unauthorized += e.unauthorized;
            for (k, v) in &e.accepted_per_topic {
                *a.accepted_per_topic.entry(k.clone()).or_default() += v;
            }
            Some(a)
        }
        _ => None,
    };
}

fn add_phase(acc: &mut PhaseResult, p: &PhaseResult) {
    acc.topics += p.topics;
    acc.counts += &p.counts;
    acc.reasons += &p.reasons;
    acc.already_registered += p.already_registered;
    // Shards register in parallel: the phase took as long as the slowest.
    acc.duration_s = acc.duration_s.max(p.duration_s);
    if acc.first_error.is_none() {
        acc.first_error.clone_from(&p.first_error);
    }
}

#[cfg(test)]
mod tests;
