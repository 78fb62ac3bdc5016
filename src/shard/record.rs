//! A shard's artifact as a stream of records: its head before the first level, one record per
//! level as the level ends, and its end. A reader can merge level N as soon as every shard has
//! written it; the records of a finished shard hold exactly what its whole artifact holds.

use serde::{Deserialize, Serialize};

use super::artifact::{ShardArtifact, ShardLevel, ShardMeta};
use crate::report::model::delivery_report::SubscriptionReport;
use crate::report::model::ServiceBusInfo;
use crate::targets::PhaseResult;

/// What a shard knows before its first level: who it is, the run's settings and topics, and
/// its set-up phases.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardHead {
    /// Who wrote the stream and how to read it; `finished_at` is when the head was written.
    pub meta: ShardMeta,
    /// The resolved run configuration, secrets redacted (the same for every shard).
    #[serde(default)]
    pub config: serde_json::Value,
    /// Topic names by global topic index (the same for every shard).
    #[serde(default)]
    pub topics: Vec<String>,
    /// This shard's registration phase.
    pub registration: Option<PhaseResult>,
    /// The tenant of each topic by global index, as the artifact's `topic_tenants`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topic_tenants: Vec<Option<u32>>,
    /// This shard's subscription phase (`--subscribers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription: Option<SubscriptionReport>,
}

/// What a shard knows only at its end.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardEnd {
    /// True when the shard was interrupted (its last level may be cut short).
    pub partial: bool,
    /// When the shard finished, RFC 3339 UTC.
    pub finished_at: String,
    /// How many level records came before this one.
    pub levels: u32,
    /// What this shard's Service Bus sender saw; absent for a hub run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub servicebus: Option<ServiceBusInfo>,
    /// This shard's unsubscription phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsubscription: Option<SubscriptionReport>,
}

/// One record of a shard's stream: one line of its `.jsonl` file, one section of its
/// `HUBLOAD-SHARD` lines.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShardRecord {
    /// First, once.
    Head(Box<ShardHead>),
    /// One per level, in run order.
    Level(Box<ShardLevel>),
    /// Last, once: the stream is complete.
    End(Box<ShardEnd>),
}

impl ShardRecord {
    /// The section name of this record on a `HUBLOAD-SHARD` line: `head`, `level-<n>` (`n`
    /// the 0-based level number, which the record does not carry) or `end`.
    pub fn section(&self, level: usize) -> String {
        match self {
            ShardRecord::Head(_) => "head".into(),
            ShardRecord::Level(_) => format!("level-{level}"),
            ShardRecord::End(_) => "end".into(),
        }
    }

    /// Compact JSON, one line.
    pub fn to_json_line(&self) -> String {
        // Serializing plain data with string keys cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

impl ShardArtifact {
    /// The whole artifact as the stream a shard writes: head, levels, end.
    pub fn into_records(self) -> Vec<ShardRecord> {
        let mut meta = self.meta;
        let finished_at = std::mem::replace(&mut meta.finished_at, meta.started_at.clone());
        let levels = self.levels.len() as u32;
        let mut out = vec![ShardRecord::Head(Box::new(ShardHead {
            meta,
            config: self.config,
            topics: self.topics,
            registration: self.registration,
            topic_tenants: self.topic_tenants,
            subscription: self.subscription,
        }))];
        out.extend(
            self.levels
                .into_iter()
                .map(|l| ShardRecord::Level(Box::new(l))),
        );
        out.push(ShardRecord::End(Box::new(ShardEnd {
            partial: self.partial,
            finished_at,
            levels,
            servicebus: self.servicebus,
            unsubscription: self.unsubscription,
        })));
        out
    }
}

impl ShardArtifact {
    /// An artifact of `head` alone: no levels yet, partial until its end is set.
    pub fn from_head(head: ShardHead) -> Self {
        ShardArtifact {
            meta: head.meta,
            partial: true,
            config: head.config,
            topics: head.topics,
            registration: head.registration,
            levels: Vec::new(),
            servicebus: None,
            topic_tenants: head.topic_tenants,
            subscription: head.subscription,
            unsubscription: None,
        }
    }

    /// Complete the artifact with its stream's end.
    pub fn set_end(&mut self, end: ShardEnd) {
        self.partial = end.partial;
        self.meta.finished_at = end.finished_at;
        self.servicebus = end.servicebus;
        self.unsubscription = end.unsubscription;
    }
}
