//! A record's side of sharding: the artifact a shard hands to `hubload merge`, and the
//! reports of a merged run written from the shards' artifacts.

use std::collections::BTreeMap;
use std::path::Path;

use super::{rewritten, start_appended, RowExtra, RunRecord};
use crate::judge::Threshold;
use crate::report::writer::ReportWriter;
use crate::run::level_topics::dense_topics;
use crate::run::tenant_design::surge_shape;
use crate::run_report::Report;
use crate::shard::{Load as ShardLoad, MergedRun, ShardArtifact, ShardLevel, ShardMeta};
use crate::shard_contract::ShardSpec;
use crate::stats::LevelStats;
use crate::summary::PhaseReport;

impl RunRecord {
    /// Write the reports of a merged, sharded run into `dir`; thresholds are judged on the
    /// merged data only.
    pub fn from_merged(
        m: &MergedRun,
        dir: &Path,
        thresholds: Vec<Threshold>,
    ) -> anyhow::Result<Report> {
        let cfg = &m.config;
        let secs = |k: &str| {
            cfg.get("client")
                .and_then(|c| c.get(k))
                .and_then(|v| v.as_str())
                .and_then(|s| humantime::parse_duration(s).ok())
        };
        let mut report = Report::new_empty(m.meta.model, cfg.clone(), m.topics.clone());
        report.target = m.meta.target;
        report.target_url = m.meta.target_url.clone();
        report.started_at = m.meta.started_at.clone();
        report.finished_at = m.meta.finished_at.clone();
        report.partial = m.partial;
        report.registration = m.registration.as_ref().map(PhaseReport::from);
        report.servicebus = m.servicebus.clone();
        report.topic_tenants = m.topic_tenants.clone();
        report.subscription = m.subscription.clone();
        report.unsubscription = m.unsubscription.clone();
        let writer = ReportWriter::new(dir, rewritten())?;
        start_appended(&mut report, dir)?;
        let mut rec = RunRecord {
            report,
            levels: Vec::new(),
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
            design: None,
        };
        rec.write()?;
        rec.ended = true;
        // One write for all the levels: a merge can be run again, and its cost no longer grows
        // with the square of the levels.
        rec.in_one_write(|rec| rec.push_merged_levels(m))?;
        Ok(rec.report)
    }

    /// Push a merged run's levels, with their deliveries.
    fn push_merged_levels(&mut self, m: &MergedRun) -> anyhow::Result<()> {
        for l in &m.levels {
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
        }
        Ok(())
    }

    /// Everything a shard hands to `hubload merge`.
    pub fn shard_artifact(
        &self,
        spec: &ShardSpec,
        parts: &[ShardLoad],
    ) -> anyhow::Result<ShardArtifact> {
        let mut meta = ShardMeta::new(
            spec,
            self.report.target,
            &self.report.target_url,
            self.report.model,
        );
        meta.started_at = self.report.started_at.clone();
        meta.finished_at = self.report.finished_at.clone();
        // The levels' topics as topics.jsonl holds them (memory keeps only TOTAL's).
        let mut topics = vec![Vec::new(); self.levels.len()];
        crate::report::topics_file::for_each_level(self.dir(), |i, rows| {
            if let Some(t) = topics.get_mut(i) {
                *t = dense_topics(&rows);
            }
        })?;
        let mut topics = topics.into_iter();
        let levels = self
            .report
            .levels
            .iter()
            .zip(&self.levels)
            .zip(parts)
            .enumerate()
            .map(|(i, ((row, stats), load))| {
                let mut stats = stats.clone();
                stats.topics = topics.next().unwrap_or_default();
                let mut l = ShardLevel::new(&row.label, *load, stats);
                l.first_failures.clone_from(&row.first_failures);
                l.topic_server.clone_from(&row.topic_server);
                l.topic_churn.clone_from(&row.topic_churn);
                l.delivery = self.deliveries.get(&i).cloned();
                l
            })
            .collect();
        Ok(ShardArtifact {
            meta,
            partial: self.report.partial,
            config: self.report.config.clone(),
            topics: self.report.topics.clone(),
            registration: self.registration.clone(),
            levels,
            servicebus: self.report.servicebus.clone(),
            topic_tenants: self.report.topic_tenants.clone(),
            subscription: self.report.subscription.clone(),
            unsubscription: self.report.unsubscription.clone(),
        })
    }
}
