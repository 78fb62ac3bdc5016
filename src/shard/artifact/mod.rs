//! The shard artifact: one shard's results as a self-describing, versioned JSON document, with
//! exact counters and V2+DEFLATE base64 histograms (docs/protocol.md §5), and its exact round trip.
//!
//! The document is meant to be read by people as well as by `hubload merge`: counts are keyed
//! by class name, times are RFC 3339, and the histogram layout is spelled out in `meta.layout`.

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::kind::{Model, TargetKind};
use crate::report::model::delivery_report::{LevelDelivery, SubscriptionReport};
use crate::report::model::ServiceBusInfo;
use crate::shard_contract::env::{validate_run_id, ShardSpec};
use crate::stats::{LevelStats, HIST_LOWEST_US, HIST_SIGFIG};
use crate::targets::PhaseResult;
use crate::topic_server::TopicFetchStats;

/// The value of `meta.format` in every shard artifact.
pub const FORMAT: &str = "hubload-shard";
/// The artifact format version this build writes (it reads [`OLDEST_VERSION`] onwards).
pub const FORMAT_VERSION: u32 = 2;
/// The oldest artifact format version this build reads.
pub const OLDEST_VERSION: u32 = 1;
/// The value of `meta.layout.encoding`.
pub const HIST_ENCODING: &str = "hdrhistogram-v2-deflate-base64";

/// Why an artifact could not be read. Every message names the field.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// The JSON is not a shard artifact.
    #[error("not a hubload shard artifact: {0}")]
    Json(#[from] serde_json::Error),
    /// `meta.format` is not [`FORMAT`].
    #[error("meta.format is {0:?}, expected {FORMAT:?}")]
    Format(String),
    /// `meta.format_version` is one this build does not read.
    #[error(
        "meta.format_version {0} is not supported (this hubload reads versions {OLDEST_VERSION} to {FORMAT_VERSION})"
    )]
    Version(u32),
    /// `meta.run_id` is unusable.
    #[error("meta.run_id: {0}")]
    RunId(String),
    /// `meta.shard_index` is not below `meta.shard_count`.
    #[error("meta.shard_index {index} is not below meta.shard_count {count}")]
    Index {
        /// The index.
        index: u32,
        /// The count.
        count: u32,
    },
    /// A field that does not read: an unknown class, a histogram in another layout, ….
    #[error("{path}: {reason}")]
    Field {
        /// Where, e.g. `levels[0].stats.corrected`.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// The histogram layout every hubload histogram uses; merging requires it to be identical.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistLayout {
    /// Lowest discernible value, µs.
    pub lowest_us: u64,
    /// Significant decimal digits.
    pub significant_digits: u8,
    /// How histograms are encoded in this document: [`HIST_ENCODING`].
    pub encoding: String,
}

impl HistLayout {
    /// The layout this build records with.
    pub fn current() -> Self {
        HistLayout {
            lowest_us: HIST_LOWEST_US,
            significant_digits: HIST_SIGFIG,
            encoding: HIST_ENCODING.to_string(),
        }
    }
}

/// Who wrote the artifact and how to interpret it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardMeta {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// Shared by every shard of one run (`HUBLOAD_RUN_ID`).
    pub run_id: String,
    /// This shard's index, `0..shard_count` (`JOB_COMPLETION_INDEX`).
    pub shard_index: u32,
    /// Number of shards in the run (`HUBLOAD_SHARD_COUNT`).
    pub shard_count: u32,
    /// The hubload version that wrote it.
    pub hubload_version: String,
    /// Histogram layout and encoding.
    pub layout: HistLayout,
    /// The protocol loaded ("websub" or "servicebus").
    pub target: TargetKind,
    /// Where the load went (never a secret).
    pub target_url: String,
    /// "closed" (concurrency levels) or "open" (rate levels).
    pub model: Model,
    /// When this shard started, RFC 3339 UTC.
    pub started_at: String,
    /// When this shard wrote the artifact, RFC 3339 UTC.
    pub finished_at: String,
}

impl ShardMeta {
    /// Meta for the shard `spec`, stamped with this build's version and layout; both times are now.
    pub fn new(spec: &ShardSpec, target: TargetKind, target_url: &str, model: Model) -> Self {
        let now = rfc3339(SystemTime::now());
        ShardMeta {
            format: FORMAT.to_string(),
            format_version: FORMAT_VERSION,
            run_id: spec.run_id.clone(),
            shard_index: spec.index,
            shard_count: spec.count,
            hubload_version: env!("CARGO_PKG_VERSION").to_string(),
            layout: HistLayout::current(),
            target,
            target_url: target_url.to_string(),
            model,
            started_at: now.clone(),
            finished_at: now,
        }
    }
}

/// RFC 3339 UTC with µs, the format of `started_at` and `finished_at`.
pub fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_micros(t).to_string()
}

/// What one level asked of this shard: its part of the concurrency or of the rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Load {
    /// Closed model: concurrent virtual publishers.
    Concurrency(u64),
    /// Open model: events per second.
    Rate(f64),
}

/// One level of one shard: its label, this shard's part of its load, its [`LevelStats`] as
/// they serialize themselves, and what the level saw beside the load.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardLevel {
    /// The level as the user wrote it (the whole run's value, e.g. "50"); equal across shards.
    pub label: String,
    /// This shard's part of the level's load.
    pub load: Load,
    /// Everything the shard measured in the level.
    pub stats: LevelStats,
    /// The shard's first failure of each class (class name → text); absent when none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub first_failures: BTreeMap<String, String>,
    /// What this shard's subscribers received in the level, whole (counters, per subscriber,
    /// both end-to-end histograms); absent without subscribers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<LevelDelivery>,
    /// This shard's topic server's fetches in the level (websub dialect); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_server: Option<TopicFetchStats>,
    /// This shard's topic churn in the level (`--topic-churn`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_churn: Option<crate::stats::TopicChurnStats>,
}

impl ShardLevel {
    /// A level with `stats` and nothing beside them.
    pub fn new(label: &str, load: Load, stats: LevelStats) -> Self {
        ShardLevel {
            label: label.to_string(),
            load,
            stats,
            first_failures: BTreeMap::new(),
            delivery: None,
            topic_server: None,
            topic_churn: None,
        }
    }
}

/// Everything one shard measured: the unit `hubload merge` reads.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardArtifact {
    /// Who wrote it and how to read it.
    pub meta: ShardMeta,
    /// True when the shard was interrupted (or has not finished).
    pub partial: bool,
    /// The resolved run configuration, secrets redacted (the same for every shard).
    #[serde(default)]
    pub config: serde_json::Value,
    /// Topic names by global topic index (the whole run's list, the same for every shard).
    #[serde(default)]
    pub topics: Vec<String>,
    /// This shard's registration phase.
    pub registration: Option<PhaseResult>,
    /// One entry per level, in run order.
    pub levels: Vec<ShardLevel>,
    /// What this shard's Service Bus sender (and embedded emulator) saw; `None` for a hub run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub servicebus: Option<ServiceBusInfo>,
    /// The tenant of each topic by global index (`null` for a topic shared by tenants), as
    /// `summary.json` `topic_tenants`, so a merged run's `tenants.csv` rolls up by tenant;
    /// absent from older artifacts (then empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topic_tenants: Vec<Option<u32>>,
    /// This shard's subscription phase (`--subscribers`, the subscribers of its own topics);
    /// absent without subscribers and in older artifacts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription: Option<SubscriptionReport>,
    /// This shard's unsubscription phase at the end; absent as `subscription`, or when kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsubscription: Option<SubscriptionReport>,
}

impl ShardArtifact {
    /// Pretty JSON, as written to the output directory.
    pub fn to_json(&self) -> String {
        // Serializing plain data with string keys cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Parse and check: format, version, run id and index, and every level (histogram
    /// layouts, class and reason names). A version 1 artifact is read as well.
    pub fn from_json(text: &str) -> Result<Self, ArtifactError> {
        // Read the envelope first so a future version gets a version error, not a field error.
        #[derive(Deserialize)]
        struct Probe {
            meta: ProbeMeta,
        }
        #[derive(Deserialize)]
        struct ProbeMeta {
            format: String,
            format_version: u32,
        }
        let mut doc: serde_json::Value = serde_json::from_str(text)?;
        let probe = Probe::deserialize(&doc)?;
        if probe.meta.format != FORMAT {
            return Err(ArtifactError::Format(probe.meta.format));
        }
        match probe.meta.format_version {
            FORMAT_VERSION => {}
            1 => upgrade_v1(&mut doc),
            v => return Err(ArtifactError::Version(v)),
        }
        let a: ShardArtifact =
            serde_path_to_error::deserialize(doc).map_err(|e| ArtifactError::Field {
                path: e.path().to_string(),
                reason: e.into_inner().to_string(),
            })?;
        validate_run_id(&a.meta.run_id).map_err(ArtifactError::RunId)?;
        if a.meta.shard_index >= a.meta.shard_count {
            return Err(ArtifactError::Index {
                index: a.meta.shard_index,
                count: a.meta.shard_count,
            });
        }
        Ok(a)
    }

    /// The file name this artifact is written under: `shard-<index>-of-<count>.json`.
    pub fn file_name(&self) -> String {
        format!(
            "shard-{}-of-{}.json",
            self.meta.shard_index, self.meta.shard_count
        )
    }
}

/// Version 1 kept a level's statistics beside its label, with the four histograms under
/// `histograms`; version 2 keeps them whole under `stats`. Everything else is spelled alike.
fn upgrade_v1(doc: &mut serde_json::Value) {
    let levels = doc
        .get_mut("levels")
        .and_then(serde_json::Value::as_array_mut);
    for level in levels.into_iter().flatten() {
        let Some(fields) = level.as_object_mut() else {
            continue;
        };
        let mut stats = serde_json::Map::new();
        for (k, v) in std::mem::take(fields) {
            match (k.as_str(), v) {
                (
                    "label" | "load" | "first_failures" | "delivery" | "topic_server"
                    | "topic_churn",
                    v,
                ) => {
                    fields.insert(k, v);
                }
                ("histograms", serde_json::Value::Object(h)) => stats.extend(h),
                (_, v) => {
                    stats.insert(k, v);
                }
            }
        }
        fields.insert("stats".into(), stats.into());
    }
}

#[cfg(test)]
mod tests;
