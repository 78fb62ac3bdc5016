//! The `Report`: the one serializable document every format renders (and `summary.json` is):
//! the run's metadata, its phases and level rows (`model`) and what judging them produced
//! (`judge`'s verdicts, what-if table and capacity result). It sits above `judge` because it
//! holds judge's results, while `judge` reads the rows below it.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::kind::{Model, TargetKind};
use crate::report::judge::verdict::{CapacityResult, Verdict, WhatIfTable};
use crate::report::model::{HubHost, LevelReport, PhaseReport, RateCheck, ServiceBusInfo};

/// The layout summary.json is written in (`Report::schema_version`).
pub const SCHEMA_VERSION: u32 = 5;

/// Summaries written before `schema_version` existed.
fn layout_1() -> u32 {
    1
}

/// A whole run: metadata, phases, one row per level and the total.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Report {
    /// Always "hubload".
    pub tool: String,
    /// This document's layout: 5 since each level holds its statistics as they are
    /// (`levels[].stats`) beside the figures derived from them, 4 since the topics' names and tenants live in
    /// `topic_names_file` and every subscriber's counts in `subscribers_file`, 3 since every
    /// tenant's fairness row lives in `fairness_file`, 2 since each level's per-topic rows live in `topics_file`, 1 (absent) before, when both
    /// were inline (`levels[].topics`, `levels[].fairness.by_tenant`).
    #[serde(default = "layout_1")]
    pub schema_version: u32,
    /// hubload's version.
    pub version: String,
    /// The protocol loaded ("websub" or "servicebus").
    pub target: TargetKind,
    /// Where the load went (hub URL or Service Bus endpoint; never a secret).
    pub target_url: String,
    /// "closed" (concurrency levels) or "open" (rate levels).
    pub model: Model,
    /// RFC 3339 UTC.
    pub started_at: String,
    /// RFC 3339 UTC; updated every time the report is rewritten.
    pub finished_at: String,
    /// True when the run was interrupted (Ctrl-C, SIGTERM) or is still running.
    pub partial: bool,
    /// The resolved run configuration, secrets redacted.
    pub config: serde_json::Value,
    /// Topic names, indexed as the per-topic rows' `topic`: in memory (a run's shared with its
    /// workload), read from `topic_names_file`; inline only in summaries before
    /// `schema_version` 4, never written.
    #[serde(
        default,
        skip_serializing_if = "crate::report::model::never_written",
        serialize_with = "names_out",
        deserialize_with = "names_in"
    )]
    #[schemars(with = "Vec<String>")]
    pub topics: Vec<Arc<str>>,
    /// The file beside this one that names every topic (`topic-names.jsonl`: line `i` is topic
    /// `i`, `{"topic": name, "tenant": number or null}`), written once before the first level;
    /// absent in summaries before `schema_version` 4, which hold `topics` and
    /// `topic_tenants` inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_names_file: Option<String>,
    /// The file beside this one that holds each level's per-topic rows (`topics.jsonl`: one
    /// JSON line per level, `{"level": index into levels, "label", "topics": [rows]}`),
    /// appended as each level ends; absent in summaries with inline `levels[].topics`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topics_file: Option<String>,
    /// The file beside this one that holds every tenant's fairness row (`fairness.jsonl`: one
    /// JSON line per level, `{"level": index into levels, "label", "tenants": [rows]}`,
    /// appended as each level ends, and TOTAL's, `"level": null`, when the run ends); absent
    /// in summaries with inline `levels[].fairness.by_tenant`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fairness_file: Option<String>,
    /// The file beside this one that holds every subscriber's delivery counts
    /// (`subscribers.jsonl`: one JSON line per level with deliveries, `{"level": index into
    /// levels, "label", "subscribers": {key: counts}}`, appended as each level ends, and TOTAL's,
    /// `"level": null`, when the run ends); absent without deliveries, and in summaries with
    /// inline `levels[].delivery.per_subscriber`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribers_file: Option<String>,
    /// The tenant of each topic, indexed as `topics` (`None` for a topic shared by tenants): in
    /// memory, read from `topic_names_file`; inline only in summaries before `schema_version` 4
    /// (empty in those before it existed), never written.
    #[serde(default, skip_serializing_if = "crate::report::model::never_written")]
    pub topic_tenants: Vec<Option<u32>>,
    /// The topic registration phase.
    pub registration: Option<PhaseReport>,
    /// The deregistration phase (`--deregister`).
    pub deregistration: Option<PhaseReport>,
    /// The subscription phase (`--subscribers`); absent when there were no subscribers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription: Option<crate::report::model::delivery_report::SubscriptionReport>,
    /// The unsubscription phase at the end (`--subscribers`, unless `--no-unsubscribe`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsubscription: Option<crate::report::model::delivery_report::SubscriptionReport>,
    /// One entry per level, in run order.
    pub levels: Vec<LevelReport>,
    /// All levels merged (`TOTAL` row); throughput over the whole span.
    pub total: Option<LevelReport>,
    /// Thresholds judged (empty when none were given).
    #[serde(default)]
    pub verdicts: Vec<Verdict>,
    /// Open model: achieved vs target rate per level.
    #[serde(default)]
    pub rate_checks: Vec<RateCheck>,
    /// The timeout what-if table (`--what-if-timeouts`), levels then TOTAL.
    #[serde(default)]
    pub what_if: Option<WhatIfTable>,
    /// The capacity finder's result (`--find-capacity`).
    #[serde(default)]
    pub capacity: Option<CapacityResult<LevelReport>>,
    /// Service Bus runs: the sender's reconnects and rejection conditions.
    #[serde(default)]
    pub servicebus: Option<ServiceBusInfo>,
    /// WebSub runs: the hub's addresses in use and the TLS handshakes.
    #[serde(default)]
    pub hub: Option<HubHost>,
    /// What the run warned about that the numbers alone do not say: e.g. a level whose
    /// attempts the generator itself failed (`client_error`), not the hub.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// At the first level that broke, the server series that changed most against the level
    /// before it (a correlation; absent without server series or without a broken level).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee: Option<crate::report::model::observations::KneeSeries>,
    /// `--prometheus-remote-write`: pushes and push failures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exporter: Option<crate::report::model::observations::ExporterReport>,
    /// `--web`: every change asked for through the control API (pause, resume, end_level,
    /// stop, rate, concurrency), with its time and the client's address, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub control: Vec<crate::engine::ControlEvent>,
}

impl Report {
    /// A report with no phases or levels yet: a WebSub run in progress (`partial`), by this
    /// hubload version.
    pub fn new_empty(model: Model, config: serde_json::Value, topics: Vec<Arc<str>>) -> Self {
        Report {
            tool: "hubload".into(),
            schema_version: SCHEMA_VERSION,
            version: env!("CARGO_PKG_VERSION").into(),
            target: TargetKind::Websub,
            target_url: String::new(),
            model,
            started_at: String::new(),
            finished_at: String::new(),
            partial: true,
            config,
            topics,
            topic_names_file: None,
            topics_file: None,
            fairness_file: None,
            subscribers_file: None,
            topic_tenants: Vec::new(),
            registration: None,
            deregistration: None,
            subscription: None,
            unsubscription: None,
            levels: Vec::new(),
            total: None,
            verdicts: Vec::new(),
            rate_checks: Vec::new(),
            what_if: None,
            capacity: None,
            servicebus: None,
            hub: None,
            warnings: Vec::new(),
            knee: None,
            exporter: None,
            control: Vec::new(),
        }
    }
}

/// `Report::topics` as older summaries hold them: a list of strings.
fn names_in<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Arc<str>>, D::Error> {
    let names = Vec::<String>::deserialize(d)?;
    Ok(names.into_iter().map(Arc::from).collect())
}

/// `Report::topics` as a list of strings (never called: the field is not written).
fn names_out<S: Serializer>(names: &[Arc<str>], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(names.iter().map(|n| &**n))
}
