//! The shard artifact: one shard's results as a self-describing, versioned JSON document, with
//! exact counters and V2+DEFLATE base64 histograms (docs/protocol.md §5), and its exact round trip.
//!
//! The document is meant to be read by people as well as by `hubload merge`: counts are keyed
//! by class name, times are RFC 3339, and the histogram layout is spelled out in `meta.layout`.

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::kind::{Model, TargetKind};
use crate::result::{Class, Reason};
use crate::shard_contract::env::{validate_run_id, ShardSpec};
use crate::shard_contract::TopicArtifact;
use crate::stats::{
    Counts, Histogram, LevelStats, Reasons, SecondHistograms, TimelineBucket, TopicStats,
    HIST_LOWEST_US, HIST_SIGFIG, TOPIC_BUCKETS,
};
use crate::summary::delivery_report::{LevelDelivery, SubscriptionReport};
use crate::summary::ServiceBusInfo;
use crate::targets::PhaseResult;
use crate::topic_server::TopicFetchStats;

mod server_timing_codec;
pub use server_timing_codec::ServerTimingArtifact;

/// The value of `meta.format` in every shard artifact.
pub const FORMAT: &str = "hubload-shard";
/// The artifact format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// The value of `meta.layout.encoding`.
pub const HIST_ENCODING: &str = "hdrhistogram-v2-deflate-base64";

/// Why an artifact could not be built or read. Every message names the field or histogram.
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
        "meta.format_version {0} is not supported (this hubload reads version {FORMAT_VERSION})"
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
    /// A histogram could not be serialized.
    #[error("histogram {name}: cannot serialize: {reason}")]
    Serialize {
        /// Which histogram.
        name: &'static str,
        /// The serializer's message.
        reason: String,
    },
    /// A histogram is not valid base64 or not a V2 (+DEFLATE) histogram.
    #[error("level {label:?}: histogram {name}: {reason}")]
    Histogram {
        /// The level label.
        label: String,
        /// Which histogram.
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A per-second histogram that does not decode to hubload's layout.
    #[error("level {label:?}: per-second histograms: {reason}")]
    Seconds {
        /// The level.
        label: String,
        /// Which second and what is wrong.
        reason: String,
    },
    /// A per-topic histogram bucket beyond the layout.
    #[error("level {label:?}: topics: bucket {index} is beyond the {TOPIC_BUCKETS}-bucket layout")]
    TopicBucket {
        /// The level.
        label: String,
        /// The bucket index found.
        index: usize,
    },
    /// A reason name in `reasons` that this build does not know.
    #[error("level {label:?}: unknown outcome reason {name:?}")]
    UnknownReason {
        /// The level label.
        label: String,
        /// The name found.
        name: String,
    },
    /// A class name in `counts` that this build does not know.
    #[error("{context}: unknown outcome class {name:?}")]
    UnknownClass {
        /// Where ("level \"50\"" or "registration").
        context: String,
        /// The name found.
        name: String,
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

/// The four histograms of a level, each V2+DEFLATE, base64 (begins `HISTF`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LevelHistograms {
    /// `LevelStats::latency`.
    pub latency: String,
    /// `LevelStats::corrected`.
    pub corrected: String,
    /// `LevelStats::accepted_latency`.
    pub accepted_latency: String,
    /// `LevelStats::event_latency`.
    pub event_latency: String,
}

/// One level of one shard: its label and load, every exact counter of [`LevelStats`], and its histograms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelArtifact {
    /// The level as the user wrote it (the whole run's value, e.g. "50"); equal across shards.
    pub label: String,
    /// This shard's part of the level's load.
    pub load: Load,
    /// Attempts per class name (every class, zeros included).
    pub counts: BTreeMap<String, u64>,
    /// Attempts per `class.reason` (only reasons seen; missing means zero, so artifacts
    /// from builds without reasons still load).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reasons: BTreeMap<String, u64>,
    /// Attempts per non-2xx HTTP status.
    pub status_codes: BTreeMap<u16, u64>,
    /// Events.
    pub events: u64,
    /// Events whose every attempt failed.
    pub events_failed: u64,
    /// Retry attempts.
    pub retries: u64,
    /// Skipped sends (open model).
    pub dropped: u64,
    /// Sends that started late (open model); absent in artifacts older than the count.
    #[serde(default)]
    pub late_sends: u64,
    /// Request bytes.
    pub bytes_sent: u64,
    /// Response bytes.
    pub bytes_received: u64,
    /// Exact sum of attempt latencies, µs.
    pub sum_us: u64,
    /// Exact smallest attempt latency, µs.
    pub min_us: Option<u64>,
    /// Exact largest attempt latency, µs.
    pub max_us: Option<u64>,
    /// Earliest attempt start, µs since the Unix epoch.
    pub first_start_us: Option<u64>,
    /// Latest attempt end, µs since the Unix epoch.
    pub last_end_us: Option<u64>,
    /// Attempts per global topic index.
    pub topic_attempts: Vec<u64>,
    /// Accepted attempts per global topic index.
    pub topic_accepted: Vec<u64>,
    /// One bucket per second since the level started.
    pub timeline: Vec<TimelineBucket>,
    /// The histograms.
    pub histograms: LevelHistograms,
    /// Per global topic index: counts and the compact latency histogram (absent in artifacts
    /// written before per-topic statistics: then empty).
    #[serde(default)]
    pub topics: Vec<TopicArtifact>,
    /// The shard's first failure of each class (class name → text); absent when none, and
    /// in artifacts written before it existed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub first_failures: BTreeMap<String, String>,
    /// Latency histograms per second of the level, as `summary.json`
    /// `levels[].histograms.per_second` (absent in older artifacts: then empty).
    #[serde(default, skip_serializing_if = "SecondHistograms::is_empty")]
    pub seconds: SecondHistograms,
    /// What this shard's subscribers received in the level, whole (counters, per subscriber,
    /// both end-to-end histograms); absent without subscribers and in older artifacts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<LevelDelivery>,
    /// This shard's topic server's fetches in the level (websub dialect); absent otherwise
    /// and in older artifacts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_server: Option<TopicFetchStats>,
    /// This shard's topic churn in the level (`--topic-churn`); absent otherwise and in older
    /// artifacts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_churn: Option<crate::stats::TopicChurnStats>,
    /// What the shard's responses declared in `Server-Timing`; absent when none, and in
    /// older artifacts.
    #[serde(default, skip_serializing_if = "ServerTimingArtifact::is_empty")]
    pub server_timing: ServerTimingArtifact,
}

fn topic_stats(a: &TopicArtifact, label: &str) -> Result<TopicStats, ArtifactError> {
    let mut t = TopicStats {
        counts: counts_from_map(&a.counts, &format!("level {label:?} topics"))?,
        max_us: a.max_us,
        ..TopicStats::default()
    };
    for (i, c) in &a.buckets {
        let slot = t
            .buckets
            .get_mut(*i)
            .ok_or_else(|| ArtifactError::TopicBucket {
                label: label.to_string(),
                index: *i,
            })?;
        *slot = *c;
    }
    Ok(t)
}

/// A registration or deregistration phase of one shard (the topics this shard owns).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseArtifact {
    /// Topics attempted.
    pub topics: u64,
    /// Attempts per class name.
    pub counts: BTreeMap<String, u64>,
    /// Register answered 409 (already registered).
    pub already_registered: u64,
    /// Seconds.
    pub duration_s: f64,
    /// The first failure, as one line.
    pub first_error: Option<String>,
}

impl From<&PhaseResult> for PhaseArtifact {
    fn from(p: &PhaseResult) -> Self {
        PhaseArtifact {
            topics: p.topics,
            counts: p.counts.to_map(),
            already_registered: p.already_registered,
            duration_s: p.duration_s,
            first_error: p.first_error.clone(),
        }
    }
}

impl PhaseArtifact {
    /// Back to the engine's type.
    pub fn to_phase_result(&self) -> Result<PhaseResult, ArtifactError> {
        Ok(PhaseResult {
            topics: self.topics,
            counts: counts_from_map(&self.counts, "registration")?,
            // Shard artifacts carry the phases' class counts only.
            reasons: Reasons::default(),
            already_registered: self.already_registered,
            duration_s: self.duration_s,
            first_error: self.first_error.clone(),
        })
    }
}

/// Everything one shard measured: the unit `hubload merge` reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    pub registration: Option<PhaseArtifact>,
    /// One entry per level, in run order.
    pub levels: Vec<LevelArtifact>,
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

    /// Parse and check the envelope: format, version, run id and index. Levels are decoded later.
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
        let probe: Probe = serde_json::from_str(text)?;
        if probe.meta.format != FORMAT {
            return Err(ArtifactError::Format(probe.meta.format));
        }
        if probe.meta.format_version != FORMAT_VERSION {
            return Err(ArtifactError::Version(probe.meta.format_version));
        }
        let a: ShardArtifact = serde_json::from_str(text)?;
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

/// Encode one level's stats exactly. Fails only if a histogram count exceeds `i64::MAX`.
pub fn encode_level(
    label: &str,
    load: Load,
    s: &LevelStats,
) -> Result<LevelArtifact, ArtifactError> {
    Ok(LevelArtifact {
        label: label.to_string(),
        load,
        counts: s.counts.to_map(),
        reasons: s.reasons.to_map(),
        status_codes: s.status_codes.clone(),
        events: s.events,
        events_failed: s.events_failed,
        retries: s.retries,
        dropped: s.dropped,
        late_sends: s.late_sends,
        bytes_sent: s.bytes_sent,
        bytes_received: s.bytes_received,
        sum_us: s.sum_us,
        min_us: s.min_us,
        max_us: s.max_us,
        first_start_us: s.first_start_us,
        last_end_us: s.last_end_us,
        topic_attempts: s.topic_attempts.clone(),
        topic_accepted: s.topic_accepted.clone(),
        timeline: s.timeline.clone(),
        histograms: LevelHistograms {
            latency: encode_histogram("latency", &s.latency)?,
            corrected: encode_histogram("corrected", &s.corrected)?,
            accepted_latency: encode_histogram("accepted_latency", &s.accepted_latency)?,
            event_latency: encode_histogram("event_latency", &s.event_latency)?,
        },
        topics: s.topics.iter().map(TopicArtifact::from).collect(),
        first_failures: BTreeMap::new(),
        seconds: s.seconds.clone(),
        delivery: None,
        topic_server: None,
        topic_churn: None,
        server_timing: ServerTimingArtifact::encode(&s.server_timing).map_err(|reason| {
            ArtifactError::Serialize {
                name: "server_timing",
                reason,
            }
        })?,
    })
}

/// Decode one level back into [`LevelStats`], checking every histogram's layout.
pub fn decode_level(a: &LevelArtifact) -> Result<LevelStats, ArtifactError> {
    let hist = |name, b64: &str| decode_histogram(&a.label, name, b64);
    Ok(LevelStats {
        latency: hist("latency", &a.histograms.latency)?,
        corrected: hist("corrected", &a.histograms.corrected)?,
        accepted_latency: hist("accepted_latency", &a.histograms.accepted_latency)?,
        event_latency: hist("event_latency", &a.histograms.event_latency)?,
        counts: counts_from_map(&a.counts, &format!("level {:?}", a.label))?,
        reasons: reasons_from_map(&a.reasons, &a.label)?,
        status_codes: a.status_codes.clone(),
        events: a.events,
        events_failed: a.events_failed,
        retries: a.retries,
        dropped: a.dropped,
        late_sends: a.late_sends,
        bytes_sent: a.bytes_sent,
        bytes_received: a.bytes_received,
        sum_us: a.sum_us,
        min_us: a.min_us,
        max_us: a.max_us,
        first_start_us: a.first_start_us,
        last_end_us: a.last_end_us,
        topic_attempts: a.topic_attempts.clone(),
        topic_accepted: a.topic_accepted.clone(),
        timeline: a.timeline.clone(),
        topics: a
            .topics
            .iter()
            .map(|t| topic_stats(t, &a.label))
            .collect::<Result<_, _>>()?,
        seconds: {
            a.seconds
                .validate()
                .map_err(|reason| ArtifactError::Seconds {
                    label: a.label.clone(),
                    reason,
                })?;
            a.seconds.clone()
        },
        server_timing: a
            .server_timing
            .decode()
            .map_err(|reason| ArtifactError::Histogram {
                label: a.label.clone(),
                name: "server_timing",
                reason,
            })?,
    })
}

/// V2+DEFLATE, then standard base64: the HdrHistogram interchange string (begins `HISTF`).
pub fn encode_histogram(name: &'static str, h: &Histogram) -> Result<String, ArtifactError> {
    crate::stats::to_base64(h).map_err(|reason| ArtifactError::Serialize { name, reason })
}

/// The inverse of [`encode_histogram`]; rejects any layout but hubload's, and re-enables auto-resize.
pub fn decode_histogram(
    label: &str,
    name: &'static str,
    b64: &str,
) -> Result<Histogram, ArtifactError> {
    crate::stats::from_base64(b64).map_err(|reason| ArtifactError::Histogram {
        label: label.to_string(),
        name,
        reason,
    })
}

fn counts_from_map(m: &BTreeMap<String, u64>, context: &str) -> Result<Counts, ArtifactError> {
    let mut c = Counts::default();
    for (name, v) in m {
        let class = Class::ALL
            .iter()
            .find(|c| c.name() == name)
            .ok_or_else(|| ArtifactError::UnknownClass {
                context: context.to_string(),
                name: name.clone(),
            })?;
        c.0[class.index()] = *v;
    }
    Ok(c)
}

fn reasons_from_map(m: &BTreeMap<String, u64>, label: &str) -> Result<Reasons, ArtifactError> {
    let mut r = Reasons::default();
    for (name, v) in m {
        let reason = Reason::from_name(name).ok_or_else(|| ArtifactError::UnknownReason {
            label: label.to_string(),
            name: name.clone(),
        })?;
        r.add(reason, *v);
    }
    Ok(r)
}

#[cfg(test)]
mod tests;
