//! A shard's artifact as a stream of records: its head before the first level, one record per
//! level as the level ends, one per second of load, and its end. A reader can merge level N as
//! soon as every shard has written it; the records of a finished shard hold exactly what its
//! whole artifact holds (the seconds only add a live view of the same counts).

use std::collections::BTreeMap;

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

/// One second of a shard's load, as its live page would show it: what ended in the wall-clock
/// second `at` (Unix seconds, `[at, at+1)`), so `merge --follow` adds the shards' seconds up
/// by wall clock (a Job's shards start together). The seconds add up to the levels' counts;
/// the level records, not these, are what a merge's reports are made of.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ShardSecond {
    /// The wall-clock second, Unix seconds.
    pub at: u64,
    /// The level running at the second's end (0-based), if any yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<u32>,
    /// That level's label (the whole level's load, as its row names it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// This shard's part of that level's load: its rate (open model) or concurrency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered: Option<f64>,
    /// Attempts that ended in the second, by class (classes with none left out).
    #[serde(default)]
    pub by_class: BTreeMap<String, u64>,
    /// Their latency histogram (µs, HdrHistogram V2+DEFLATE base64; empty when none ended).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub latency: String,
    /// Their latency from the intended start (open model; empty otherwise).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub corrected: String,
    /// Attempts in flight at the second's end.
    #[serde(default)]
    pub inflight: u64,
    /// The shard's CPU over the second, as a share of the cores it may use (%).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_pct: Option<f64>,
    /// That share is at or above the generator-bound share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_bound: Option<bool>,
    /// The last parts of the levels that ended in the second (since the record before), each
    /// with its own `level`, `label`, `offered`, `by_class` and histograms; the fields above
    /// are then of the level running at the second's end (none between levels).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ended: Vec<ShardSecond>,
    /// The shard was paused through its `--web` control at the second's end (absent
    /// without `--web`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
    /// What the shard's subscribers received in the second (`--subscribers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<ShardDelivery>,
    /// Shard 0 only: the scrape round that came in the second (`--server-metrics`,
    /// `--server-query`), as the live page's `server` shows it. Every shard scrapes the same
    /// server, so one shard's rounds are the server's figures; adding them would count the
    /// server once per shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<serde_json::Value>,
}

/// A shard's deliveries of one second, as the live page's `delivery` is made of.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ShardDelivery {
    /// Deliveries received in the second.
    pub delivered: u64,
    /// Deliveries owed in the second (each accepted publish times its topic's listeners).
    pub owed: u64,
    /// Owed − delivered in the open level so far.
    pub backlog: u64,
    /// Their end-to-end latency (µs, HdrHistogram V2+DEFLATE base64; empty when none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub e2e: String,
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
    /// At most one a second, between the head and the end (absent from older streams).
    Second(Box<ShardSecond>),
    /// Last, once: the stream is complete.
    End(Box<ShardEnd>),
}

impl ShardRecord {
    /// The section name of this record on a `HUBLOAD-SHARD` line: `head`, `level-<n>` (`n`
    /// the 0-based level number, which the record does not carry), `second-<at>` or `end`.
    pub fn section(&self, level: usize) -> String {
        match self {
            ShardRecord::Head(_) => "head".into(),
            ShardRecord::Level(_) => format!("level-{level}"),
            ShardRecord::Second(s) => format!("second-{}", s.at),
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
