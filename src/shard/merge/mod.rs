//! The exact merge of a run's shard artifacts into one run: check that they belong together,
//! that every shard is there once, then add every level with `+=`, level by level as the
//! shards' records come ([`stream`]).
//!
//! Histograms share one layout, so the merged percentiles are exactly those one process would
//! have recorded; nothing is averaged. Thresholds are judged by the caller on the result only.

mod add;
pub mod seconds;
pub mod stream;

use super::artifact::ShardArtifact;
use super::assemble::Keyed;
use super::record::ShardRecord;
use crate::report::model::delivery_report::SubscriptionReport;
use crate::report::model::ServiceBusInfo;
use crate::targets::PhaseResult;

pub use add::add_delivery;
pub use stream::{MergeError, MergedEnd, MergedLevel, MergedStart, StreamMerge};

/// A whole run rebuilt from its shards; what the formats need to write the single-run reports.
#[derive(Debug, Clone)]
pub struct MergedRun {
    /// The run id.
    pub run_id: String,
    /// How many shards were merged.
    pub shard_count: u32,
    /// Shard 0's meta, with `started_at` the earliest and `finished_at` the latest of all shards.
    pub meta: super::artifact::ShardMeta,
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

/// Merge the shards of one run, whole. Order does not matter.
pub fn merge(mut shards: Vec<ShardArtifact>) -> Result<MergedRun, MergeError> {
    shards.sort_by_key(|s| s.meta.shard_index);
    let mut m = StreamMerge::default();
    let mut levels = Vec::new();
    let mut start = None;
    for s in shards {
        let key = (
            s.meta.run_id.clone(),
            s.meta.shard_index,
            s.meta.shard_count,
        );
        let mut level = 0;
        for record in s.into_records() {
            let is_level = matches!(record, ShardRecord::Level(_));
            m.push(Keyed {
                key: key.clone(),
                level,
                record,
            })?;
            level += usize::from(is_level);
            start = start.or_else(|| m.take_start());
            levels.extend(std::iter::from_fn(|| m.next_level()));
        }
    }
    let end = m.finish(true)?;
    let start = start.ok_or(MergeError::Empty)?;
    let mut meta = start.meta;
    meta.finished_at = end.finished_at;
    Ok(MergedRun {
        run_id: meta.run_id.clone(),
        shard_count: start.shard_count,
        meta,
        config: start.config,
        topics: start.topics,
        registration: start.registration,
        levels,
        partial: end.partial,
        servicebus: end.servicebus,
        topic_tenants: start.topic_tenants,
        subscription: start.subscription,
        unsubscription: end.unsubscription,
    })
}

#[cfg(test)]
mod tests;
