//! A record's side of sharding: the stream of records a shard hands to `hubload merge` (its
//! head, each level as it ends, its end), and the reports of a merged run written from the
//! shards' records level by level.

use std::collections::BTreeMap;
use std::path::Path;

use super::{rewritten, start_appended, RowExtra, RunRecord};
use crate::report::document::Report;
use crate::report::judge::Threshold;
use crate::report::model::PhaseReport;
use crate::report::writer::ReportWriter;
use crate::run::tenant_design::surge_shape;
use crate::shard::files::SecondsOut;
use crate::shard::merge::{MergedEnd, MergedStart};
use crate::shard::{
    Load as ShardLoad, MergedLevel, ShardEnd, ShardHead, ShardLevel, ShardMeta, ShardOut,
    ShardRecord,
};
use crate::shard_contract::ShardSpec;
use crate::stats::LevelStats;

impl RunRecord {
    /// Write the reports of a merged, sharded run into `dir`, starting from what every shard's
    /// head says; thresholds are judged on the merged data only. Levels follow with
    /// [`push_merged_level`](Self::push_merged_level), the end with
    /// [`end_merged`](Self::end_merged).
    pub fn merged(m: &MergedStart, dir: &Path, thresholds: Vec<Threshold>) -> anyhow::Result<Self> {
        let cfg = &m.config;
        let secs = |k: &str| {
            cfg.get("client")
                .and_then(|c| c.get(k))
                .and_then(|v| v.as_str())
                .and_then(|s| humantime::parse_duration(s).ok())
        };
        let names = m.topics.iter().map(|t| t.as_str().into()).collect();
        let mut report = Report::new_empty(m.meta.model, cfg.clone(), names);
        report.target = m.meta.target;
        report.target_url = m.meta.target_url.clone();
        report.started_at = m.meta.started_at.clone();
        report.registration = m.registration.as_ref().map(PhaseReport::from);
        report.topic_tenants = m.topic_tenants.clone();
        report.subscription = m.subscription.clone();
        let writer = ReportWriter::new(dir, rewritten())?;
        start_appended(&mut report, dir)?;
        let mut rec = RunRecord {
            report,
            total: LevelStats::default(),
            total_tenants: BTreeMap::new(),
            writer,
            thresholds,
            what_if: ["100ms", "300ms", "1s", "5s"]
                .iter()
                .filter_map(|s| humantime::parse_duration(s).ok())
                .collect(),
            retries: cfg
                .get("client")
                .and_then(|c| c.get("retries"))
                .and_then(|v| v.as_u64())
                .unwrap_or(0) as u32,
            run_timeout: secs("timeout").unwrap_or(std::time::Duration::from_secs(5)),
            registration: m.registration.clone(),
            delivery_total: None,
            deliveries: BTreeMap::new(),
            held: false,
            fairness_lines: 0,
            ended: false,
            // The surge as the shards were given it, with their noise floor.
            surge: surge_shape(
                cfg.get("surge")
                    .and_then(|s| s.as_str())
                    .and_then(|s| s.parse().ok())
                    .as_ref(),
                cfg.get("tenants").and_then(|t| t.as_u64()).unwrap_or(0) as u32,
                cfg.get("noise_floor")
                    .and_then(|s| s.as_str())
                    .and_then(|s| humantime::parse_duration(s).ok())
                    .unwrap_or(crate::config::NOISE_FLOOR),
            ),
            // `@levelN`: each level's surge start, as the shards were given it.
            surge_from: cfg
                .get("surge_from_s")
                .and_then(|v| serde_json::from_value(v.clone()).ok()),
            design: None,
            shard: None,
            shard_topics: Vec::new(),
        };
        rec.write()?;
        Ok(rec)
    }

    /// Hold every write until [`end_merged`](Self::end_merged): a merge of finished shards
    /// writes its reports once, so its cost does not grow with the square of the levels.
    pub fn hold_writes(&mut self) {
        self.held = true;
    }

    /// Push a merged level's row, with its deliveries, in one write.
    pub fn push_merged_level(&mut self, l: &MergedLevel) -> anyhow::Result<()> {
        let held = std::mem::replace(&mut self.held, true);
        let done = self.push_merged_row(l);
        self.held = held;
        done.and(self.write())
    }

    fn push_merged_row(&mut self, l: &MergedLevel) -> anyhow::Result<()> {
        let (concurrency, rate) = match l.load {
            ShardLoad::Concurrency(c) => (Some(c), None),
            ShardLoad::Rate(r) => (None, Some(r)),
        };
        let extra = RowExtra {
            first_failures: l.first_failures.clone(),
            topic_server: l.topic_server.clone(),
            topic_churn: l.topic_churn.clone(),
            paused: std::time::Duration::ZERO,
        };
        self.push_row(&l.label, concurrency, rate, l.stats.clone(), extra)?;
        if let Some(d) = &l.delivery {
            self.set_last_delivery(d)?;
        }
        Ok(())
    }

    /// The merged run is over: what the shards' ends say, the last write, the report.
    pub fn end_merged(mut self, end: &MergedEnd) -> anyhow::Result<Report> {
        self.report.partial = end.partial;
        self.report.servicebus = end.servicebus.clone();
        self.report.unsubscription = end.unsubscription.clone();
        self.ended = true;
        self.held = false;
        self.write()?;
        Ok(self.report)
    }

    /// From now on this record is shard `spec`'s: each level's part (`parts`, in level
    /// order) is written as the level ends, the run's parts around them.
    pub fn stream_shard(&mut self, spec: &ShardSpec, parts: Vec<ShardLoad>) -> anyhow::Result<()> {
        self.shard = Some(ShardOut::create(self.dir(), spec, parts)?);
        Ok(())
    }

    /// A shard's head, now (before its load), and the writer of its seconds; `None` when
    /// this run is not a shard.
    pub(crate) fn shard_seconds(&mut self) -> anyhow::Result<Option<SecondsOut>> {
        self.shard_head()?;
        Ok(self.shard.as_ref().map(ShardOut::seconds))
    }

    /// A shard's head, once: before its first level, or at its end.
    fn shard_head(&mut self) -> anyhow::Result<()> {
        let Some(s) = &self.shard else {
            return Ok(());
        };
        if s.has_head() {
            return Ok(());
        }
        let mut meta = ShardMeta::new(
            s.spec(),
            self.report.target,
            &self.report.target_url,
            self.report.model,
        );
        meta.started_at = self.report.started_at.clone();
        meta.finished_at = self.report.started_at.clone();
        let head = ShardRecord::Head(Box::new(ShardHead {
            meta,
            config: self.report.config.clone(),
            topics: self.report.topics.iter().map(|t| t.to_string()).collect(),
            registration: self.registration.clone(),
            topic_tenants: self.report.topic_tenants.clone(),
            subscription: self.report.subscription.clone(),
        }));
        match &mut self.shard {
            Some(s) => s.write(&head),
            None => Ok(()),
        }
    }

    /// A shard writes the level just recorded (its row, deliveries and all): a reader can
    /// merge it once every shard has.
    pub fn shard_level_done(&mut self) -> anyhow::Result<()> {
        self.shard_head()?;
        let Some(s) = &self.shard else {
            return Ok(());
        };
        let (i, part) = (s.levels(), s.part(s.levels()));
        // The level's topics, whole, as `push_row` kept them for this record (the row keeps
        // only the worst; memory, none once they are in topics.jsonl).
        let topics = std::mem::take(&mut self.shard_topics);
        // The capacity search's probes past the configured levels have no part: as before
        // the stream, a shard's levels are the configured ones.
        let (Some(row), Some(load)) = (self.report.levels.get(i), part) else {
            return Ok(());
        };
        let mut stats = row.stats.clone();
        stats.set_topics(dense(topics));
        let mut l = ShardLevel::new(&row.label, load, stats);
        l.first_failures.clone_from(&row.first_failures);
        l.topic_server.clone_from(&row.topic_server);
        l.topic_churn.clone_from(&row.topic_churn);
        l.delivery = self.deliveries.remove(&i);
        let rec = ShardRecord::Level(Box::new(l));
        match &mut self.shard {
            Some(s) => s.write(&rec),
            None => Ok(()),
        }
    }

    /// A shard's stream ends: the levels not yet written, then its end record.
    pub(super) fn end_shard_stream(&mut self) -> anyhow::Result<()> {
        while let Some(s) = &self.shard {
            if s.part(s.levels()).is_none() || s.levels() >= self.report.levels.len() {
                break;
            }
            self.shard_level_done()?;
        }
        self.shard_head()?;
        let end = ShardRecord::End(Box::new(ShardEnd {
            partial: self.report.partial,
            finished_at: self.report.finished_at.clone(),
            levels: self.shard.as_ref().map_or(0, |s| s.levels() as u32),
            servicebus: self.report.servicebus.clone(),
            unsubscription: self.report.unsubscription.clone(),
        }));
        match &mut self.shard {
            Some(s) if !s.has_ended() => s.write(&end),
            _ => Ok(()),
        }
    }
}

/// Topic rows (in topic order, each topic once) as statistics indexed by topic, moved.
fn dense(rows: Vec<crate::report::model::TopicReport>) -> Vec<crate::stats::TopicStats> {
    let mut v = Vec::new();
    v.resize_with(rows.last().map_or(0, |t| t.topic + 1), Default::default);
    for t in rows {
        v[t.topic] = t.stats;
    }
    v
}
