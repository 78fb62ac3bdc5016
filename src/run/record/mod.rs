//! `RunRecord`: the report of a run in progress; each change, or batch of changes, rewrites
//! the report files that are not appended to as each level ends.

use std::collections::BTreeMap;
use std::time::SystemTime;

use super::tenant_design::{design_of, surge_shape, surge_starts};
use crate::config::RunConfig;
use crate::engine::{LevelRun, LevelSpec, Load};
use crate::fairness::design::Design;
use crate::fairness::isolation::{self, Isolation, SurgeShape};
use crate::fairness::{figures, named, tenant_sums};
use crate::kind::{Model, TargetKind};
use crate::report::document::Report;
use crate::report::html::worst_topics::keep_worst;
use crate::report::judge::{judge, what_if, CapacityResult};
use crate::report::judge::{Scope, Threshold};
use crate::report::model::build::{level_report, level_row};
use crate::report::model::{LevelReport, PhaseReport, RateCheck, TopicReport};
use crate::report::topics_csv::{headers, write_level_rows, APPENDED};
use crate::report::writer::ReportWriter;
use crate::report::writer::{append_synced, append_synced_with, write_atomic};
use crate::report::{fairness_csv, fairness_file, formats, topics_file, Format};
use crate::report::{subscribers_file, topic_names};
use crate::stats::{LevelStats, TopicStats};
use crate::targets::PhaseResult;
use crate::workload::{tenant_name, Workload};
use std::path::Path;

mod delivery_fairness;
mod shards;

/// The report being built, the statistics its rows came from, and where it is written.
#[derive(Debug)]
pub struct RunRecord {
    report: Report,
    /// Every level's statistics added (seconds and topics apart), the TOTAL row's.
    total: LevelStats,
    /// Every level's per-tenant statistics added, by tenant number: TOTAL's fairness.
    total_tenants: BTreeMap<u32, TopicStats>,
    writer: ReportWriter,
    thresholds: Vec<Threshold>,
    what_if: Vec<std::time::Duration>,
    retries: u32,
    run_timeout: std::time::Duration,
    /// The registration phase as measured (for shard artifacts).
    registration: Option<PhaseResult>,
    /// Every level's deliveries added up, for the TOTAL row (`--subscribers`).
    delivery_total: Option<crate::report::model::delivery_report::LevelDelivery>,
    /// A shard's deliveries as measured, by level index, until its level record takes them.
    deliveries: BTreeMap<usize, crate::report::model::delivery_report::LevelDelivery>,
    /// Writes are held back until [`in_one_write`](Self::in_one_write)'s end.
    held: bool,
    /// Levels whose fairness rows are in fairness.jsonl and fairness.csv (the first ones).
    fairness_lines: usize,
    /// The run is over: the next write appends TOTAL's fairness rows too.
    ended: bool,
    /// `--surge`: what each level's isolation verdict names.
    surge: Option<SurgeShape>,
    /// `@levelN`: each level's surge start, s (`None`: a level without the surge); `None`
    /// for the time form, whose start is every level's.
    surge_from: Option<Vec<Option<u64>>>,
    /// The tenants' designed shares, and each level's duration (s) they depend on with a
    /// surge; `None` for a merged run.
    design: Option<(Design, Vec<Option<f64>>)>,
    /// A shard's stream of records, written as levels end (`None` unsharded).
    shard: Option<crate::shard::ShardOut>,
    /// The last level's topic rows, until a shard's level record takes them.
    shard_topics: Vec<TopicReport>,
}

fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

impl RunRecord {
    /// A new, empty report for `cfg`, written at once so the directory exists from the start.
    pub fn new(cfg: &RunConfig, workload: &Workload) -> anyhow::Result<Self> {
        Self::with_dir(cfg, workload, &cfg.output.out_dir)
    }

    /// [`Self::new`], written into `dir` instead of `--out` (one path of a side-by-side run).
    pub fn with_dir(
        cfg: &RunConfig,
        workload: &Workload,
        dir: &std::path::Path,
    ) -> anyhow::Result<Self> {
        // Shared with the workload: 100,000 names are 12 MB.
        let topics = workload.topics().iter().map(|t| t.name.clone()).collect();
        let mut report = Report::new_empty(cfg.model, cfg.shown.clone(), topics);
        report.topic_tenants = workload.topics().iter().map(|t| t.tenant).collect();
        report.started_at = now_rfc3339();
        report.finished_at = report.started_at.clone();
        let writer = ReportWriter::new(dir, rewritten())?;
        start_appended(&mut report, dir)?;
        // Written at once, before anything is sent: a full or read-only directory is one
        // error before the first request, not after the registration.
        writer.write_all(&report)?;
        Ok(RunRecord {
            report,
            total: LevelStats::default(),
            total_tenants: BTreeMap::new(),
            writer,
            thresholds: cfg.thresholds.clone(),
            what_if: cfg.what_if.clone(),
            retries: cfg.client.retries,
            run_timeout: cfg.client.timeout,
            registration: None,
            delivery_total: None,
            deliveries: BTreeMap::new(),
            held: false,
            fairness_lines: 0,
            ended: false,
            surge: surge_shape(cfg.surge.as_ref(), cfg.workload.tenants, cfg.noise_floor),
            surge_from: surge_starts(cfg.surge.as_ref(), &cfg.levels),
            design: Some(design_of(cfg, workload)),
            shard: None,
            shard_topics: Vec::new(),
        })
    }

    /// The report directory.
    pub fn dir(&self) -> &std::path::Path {
        self.writer.dir()
    }

    /// Name the target (never a secret: URLs are shown without passwords).
    pub fn set_target(&mut self, kind: TargetKind, url: &url::Url) {
        let mut u = url.clone();
        if u.password().is_some() {
            let _ = u.set_password(Some("redacted"));
        }
        self.report.target = kind;
        self.report.target_url = u.to_string();
    }

    /// Record the hub's addresses in use and its TLS handshakes (WebSub runs).
    /// With one address nothing is counted per address: it carried every attempt.
    pub fn set_hub_host(&mut self, mut host: crate::report::model::HubHost) -> anyhow::Result<()> {
        if let ([only], Some(total)) = (host.addresses.as_mut_slice(), &self.report.total) {
            only.attempts = total.derived.samples;
        }
        self.report.hub = Some(host);
        self.write()
    }

    /// Record the registration phase.
    pub fn set_registration(&mut self, p: &PhaseResult) -> anyhow::Result<()> {
        self.report.registration = Some(PhaseReport::from(p));
        self.registration = Some(p.clone());
        self.write()
    }

    /// Record the deregistration phase.
    pub fn set_deregistration(&mut self, p: &PhaseResult) -> anyhow::Result<()> {
        self.report.deregistration = Some(PhaseReport::from(p));
        self.write()
    }

    /// Record the subscription phase (`--subscribers`).
    pub fn set_subscription(
        &mut self,
        p: &crate::subscriber::SubscriptionPhase,
    ) -> anyhow::Result<()> {
        self.report.subscription = Some(p.into());
        self.write()
    }

    /// Record the unsubscription phase at the end.
    pub fn set_unsubscription(
        &mut self,
        p: &crate::subscriber::SubscriptionPhase,
    ) -> anyhow::Result<()> {
        self.report.unsubscription = Some(p.into());
        self.write()
    }

    /// Attach what the subscribers received to the level just pushed, and rewrite the reports.
    /// The TOTAL row gets every level's deliveries added up; thresholds are judged again.
    pub fn set_last_delivery(
        &mut self,
        d: &crate::report::model::delivery_report::LevelDelivery,
    ) -> anyhow::Result<()> {
        let level = self.report.levels.len().saturating_sub(1);
        let surge = self.surge_at(level);
        let tenants = &self.report.topic_tenants;
        if let Some(l) = self.report.levels.last_mut() {
            l.delivery = Some(d.into());
            if let Some(f) = &mut l.fairness {
                f.delivery = delivery_fairness::figures(&d.stats, tenants);
            }
            l.delivery_isolation = surge.and_then(|(s, n)| {
                isolation::delivery_verdict(&s, &d.stats.quiet_seconds, &d.stats.quiet_lost)
                    .map(|v| Isolation { level: n, ..v })
            });
            if self.shard.is_some() {
                self.deliveries.insert(level, d.clone());
            }
        }
        let total = self.delivery_total.get_or_insert_with(Default::default);
        *total += d;
        if let Some(t) = self.report.total.as_mut() {
            t.delivery = Some((&*total).into());
            if let Some(f) = &mut t.fairness {
                f.delivery = delivery_fairness::figures(&total.stats, tenants);
            }
        }
        self.report.verdicts = self.judged();
        self.write()
    }

    /// Attach what the observers saw of the level just pushed (server series, the generator's
    /// health), and rewrite the reports.
    pub fn set_last_observation(
        &mut self,
        o: crate::observe::LevelObservation,
    ) -> anyhow::Result<()> {
        if let Some(l) = self.report.levels.last_mut() {
            l.generator_bound = o.generator.as_ref().map(|g| !g.bound_because.is_empty());
            l.generator = o.generator;
            l.server = o.server;
        }
        self.write()
    }

    /// Record how the pushes to Prometheus went.
    pub fn set_exporter(
        &mut self,
        e: crate::report::model::observations::ExporterReport,
    ) -> anyhow::Result<()> {
        self.report.exporter = Some(e);
        self.write()
    }

    /// Add a finished level, recompute TOTAL and verdicts, rewrite the reports.
    ///
    /// `label` names the row: the level as the user asked for it, which for a shard is the whole
    /// run's load while `spec` is this shard's part.
    pub fn push_level(
        &mut self,
        spec: &LevelSpec,
        label: &str,
        run: LevelRun,
        topic_server: Option<crate::topic_server::TopicFetchStats>,
        topic_churn: Option<crate::stats::TopicChurnStats>,
    ) -> anyhow::Result<()> {
        let (concurrency, rate) = match spec.load {
            Load::Closed { concurrency } => (Some(u64::from(concurrency)), None),
            Load::Open { rate, .. } => (None, Some(rate)),
        };
        let label = label.to_string();
        if let (Some(target), Some(scheduled)) = (rate, run.scheduled) {
            // Paused time (`--web`) is left out: the level's deadline moved by it.
            let secs = spec
                .stop
                .duration
                .map_or(run.elapsed.saturating_sub(run.paused), |d| {
                    d.min(run.elapsed.saturating_sub(run.paused))
                })
                .as_secs_f64();
            let achieved = if secs > 0.0 {
                run.stats.events as f64 / secs
            } else {
                0.0
            };
            let below_target = achieved < 0.95 * target;
            if below_target {
                tracing::warn!(level = %label, achieved, target, "achieved rate below 95% of the target");
            }
            self.report.rate_checks.push(RateCheck {
                level: label.clone(),
                target,
                achieved,
                scheduled,
                dropped: run.stats.dropped,
                below_target,
            });
        }
        let extra = RowExtra {
            first_failures: run.first_failures,
            topic_server,
            topic_churn,
            paused: run.paused,
        };
        self.push_row(&label, concurrency, rate, run.stats, extra)
    }

    /// Add a level's row from its statistics, recompute TOTAL, verdicts and the what-if table,
    /// and rewrite the reports.
    pub fn push_stats(
        &mut self,
        label: &str,
        concurrency: Option<u64>,
        rate: Option<f64>,
        stats: LevelStats,
    ) -> anyhow::Result<()> {
        self.push_row(label, concurrency, rate, stats, RowExtra::default())
    }

    /// [`push_stats`](Self::push_stats) with what the target adds to the level's row.
    fn push_row(
        &mut self,
        label: &str,
        concurrency: Option<u64>,
        rate: Option<f64>,
        stats: LevelStats,
        extra: RowExtra,
    ) -> anyhow::Result<()> {
        let mut row = level_row(label, concurrency, rate, stats, rate.is_some());
        row.first_failures = extra.first_failures;
        row.topic_server = extra.topic_server;
        row.topic_churn = extra.topic_churn;
        let by_topic = row.topics.iter().map(|t| (t.topic, &t.stats));
        let tenants = tenant_sums(by_topic, &self.report.topic_tenants);
        for (t, s) in &tenants {
            *self.total_tenants.entry(*t).or_default() += s;
        }
        // Named as they are, not copied: 25,000 tenants' sums at 100,000 topics.
        row.fairness = figures(&named(tenants, tenant_name));
        let level = self.report.levels.len();
        self.set_designed(&mut row.fairness, Some(level));
        row.isolation = self.surge_at(level).and_then(|(s, n)| {
            isolation::verdict(&s, &row.stats.quiet_seconds).map(|v| Isolation { level: n, ..v })
        });
        if !extra.paused.is_zero() {
            unpause_rates(&mut row, extra.paused.as_secs_f64());
        }
        // On disk before the summary.json that lists the level: nothing measured is lost.
        topics_file::append(self.dir(), self.report.levels.len(), label, &row.topics)?;
        self.total.add_all_but_seconds(&row.stats);
        self.report.levels.push(row);
        let last = self.report.levels.len() - 1;
        for (k, name) in APPENDED.iter().enumerate() {
            let report = &self.report;
            append_synced_with(&self.dir().join(name), |out| {
                write_level_rows(report, last, k, out)
            })?;
        }
        // A level's topics leave memory once its rows are in the files, but for the worst
        // (report.html); TOTAL keeps its tenants' sums (`total_tenants`), not its topics: no
        // file has TOTAL's topic rows. A shard keeps them until its level record is written
        // (`shard_level_done`). Freed before the reports are rewritten: 25 MB at 100,000 topics.
        if let Some(l) = self.report.levels.last_mut() {
            let all = keep_worst(l);
            if self.shard.is_some() {
                self.shard_topics = all;
            }
        }
        let open_run = self.report.model == Model::Open;
        let mut total = level_report("TOTAL", None, None, &self.total, open_run);
        let sums = self.total_tenants.iter().map(|(t, s)| (*t, s.clone()));
        total.fairness = figures(&named(sums, tenant_name));
        // The levels' time paused (`--web`) is left out of TOTAL's rates as of theirs.
        let paused: f64 = self.report.levels.iter().filter_map(|l| l.paused_s).sum();
        if paused > 0.0 {
            unpause_rates(&mut total, paused);
        }
        // TOTAL's design is one level's: the base shares, or with a surge a single level's.
        let one = self.report.levels.len() == 1;
        let surged = self.design.as_ref().is_some_and(|(d, _)| d.surge.is_some());
        if one || !surged {
            self.set_designed(&mut total.fairness, one.then_some(0));
        }
        self.report.total = Some(total);
        self.report.verdicts = self.judged();
        let rows = self.report.levels.iter();
        let levels: Vec<(String, &LevelStats)> = rows
            .map(|r| (r.label.clone(), &r.stats))
            .chain([("TOTAL".to_string(), &self.total)])
            .collect();
        self.report.what_if = Some(what_if(
            &levels,
            &self.what_if,
            self.retries,
            self.run_timeout,
        ));
        self.write()
    }

    /// Set the designed shares of `f`'s tenants, for level number `level` (`None`: no level's
    /// duration, the base shares).
    fn set_designed(&self, f: &mut Option<crate::fairness::Fairness>, level: Option<usize>) {
        if let (Some(f), Some((design, secs))) = (f, &self.design) {
            let secs = level.and_then(|i| secs.get(i).or(secs.first()).copied().flatten());
            let from = level.and_then(|i| self.surge_at(i)).map(|(s, _)| s.from_s);
            let design = design.with_surge_from(from);
            design.apply(f, secs, |name| name.strip_prefix("tenant")?.parse().ok());
        }
    }

    /// The thresholds judged on the rows. With `@levelN`, a per-level `quiet_*` rule judges
    /// the surged levels only: a level before N has no verdict by design, not for want of
    /// quiet attempts.
    fn judged(&self) -> Vec<crate::report::judge::Verdict> {
        let (levels, total) = (&self.report.levels, self.report.total.as_ref());
        let Some(by) = &self.surge_from else {
            return judge(&self.thresholds, levels, total);
        };
        let surged: Vec<LevelReport> = (levels.iter().zip(by))
            .filter(|(_, from)| from.is_some())
            .map(|(l, _)| l.clone())
            .collect();
        let rows = |t: &Threshold| match t.metric.is_isolation() && t.scope == Scope::EachLevel {
            true => &surged[..],
            false => &levels[..],
        };
        (self.thresholds.iter())
            .flat_map(|t| judge(std::slice::from_ref(t), rows(t), total))
            .collect()
    }

    /// The surge as level `index` (0-based) has it, with its number (1-based) under
    /// `@levelN`; `None` without a surge in that level.
    fn surge_at(&self, index: usize) -> Option<(SurgeShape, Option<u32>)> {
        let s = self.surge.as_ref()?;
        let Some(by) = &self.surge_from else {
            return Some((s.clone(), None));
        };
        let from_s = (*by.get(index)?)?;
        let shape = SurgeShape {
            from_s,
            ..s.clone()
        };
        Some((shape, Some(index as u32 + 1)))
    }

    /// The row of the level pushed last.
    pub fn last_level(&self) -> Option<&LevelReport> {
        self.report.levels.last()
    }

    /// The control API's changes so far (`--web`); the reports are rewritten when they grew.
    pub fn set_control(&mut self, events: Vec<crate::engine::ControlEvent>) -> anyhow::Result<()> {
        if self.report.control == events {
            return Ok(());
        }
        self.report.control = events;
        self.write()
    }

    /// Record the capacity finder's result.
    pub fn set_capacity(&mut self, c: CapacityResult) -> anyhow::Result<()> {
        self.report.capacity = Some(c);
        self.write()
    }

    /// Record what the Service Bus sender saw.
    pub fn set_servicebus(
        &mut self,
        info: crate::report::model::ServiceBusInfo,
    ) -> anyhow::Result<()> {
        self.report.servicebus = Some(info);
        self.write()
    }

    /// The report as it stands.
    pub fn report(&self) -> &Report {
        &self.report
    }

    /// Add a run warning (written with the next change).
    pub fn add_warning(&mut self, w: String) {
        self.report.warnings.push(w);
    }

    /// Run `f` with the record's writes held back, then write once: a level's row, what its
    /// subscribers received and what the observers saw cost one rewrite of the reports, not
    /// three. Nothing is awaited in between, so a crash or Ctrl-C loses nothing by it.
    pub fn in_one_write(
        &mut self,
        f: impl FnOnce(&mut Self) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        self.held = true;
        let done = f(self);
        self.held = false;
        done.and(self.write())
    }

    fn write(&mut self) -> anyhow::Result<()> {
        if self.held {
            return Ok(());
        }
        self.append_fairness()?;
        self.report.finished_at = now_rfc3339();
        self.report.knee = crate::observe::knee::knee(&self.report);
        self.writer.write_all(&self.report)
    }

    /// Append the fairness rows of the levels pushed since the last write, with all that was
    /// attached to them in between, to fairness.jsonl and fairness.csv, and their subscribers'
    /// counts to subscribers.jsonl, synced before the summary.json that lists them; once the
    /// run is over, TOTAL's to fairness.jsonl and subscribers.jsonl.
    fn append_fairness(&mut self) -> anyhow::Result<()> {
        let dir = self.writer.dir();
        // subscribers.jsonl only in a run with deliveries, started with the first of them.
        let report = &self.report;
        let delivered = report
            .levels
            .iter()
            .chain(&report.total)
            .any(|r| r.delivery.is_some());
        if delivered && report.subscribers_file.is_none() {
            self.report.subscribers_file = Some(subscribers_file::create(dir)?);
        }
        for (i, row) in self
            .report
            .levels
            .iter()
            .enumerate()
            .skip(self.fairness_lines)
        {
            if let Some(f) = &row.fairness {
                fairness_file::append(dir, Some(i), &row.label, f)?;
                append_synced(
                    &dir.join(fairness_csv::FILE_NAME),
                    &fairness_csv::level_rows(row)?,
                )?;
            }
            if let Some(d) = &row.delivery {
                subscribers_file::append(dir, Some(i), &row.label, &d.per_subscriber)?;
            }
        }
        self.fairness_lines = self.report.levels.len();
        let Some(total) = self.report.total.as_ref().filter(|_| self.ended) else {
            return Ok(());
        };
        if let Some(f) = &total.fairness {
            fairness_file::append(dir, None, &total.label, f)?;
        }
        if let Some(d) = &total.delivery {
            subscribers_file::append(dir, None, &total.label, &d.per_subscriber)?;
        }
        Ok(())
    }

    /// Judge no thresholds (a shard of a larger run).
    pub fn clear_thresholds(&mut self) {
        self.thresholds.clear();
        self.report.verdicts.clear();
    }

    /// Mark the run finished (partial when interrupted), write, and hand back the report.
    /// A shard's stream gets its end record.
    pub fn finish(mut self, interrupted: bool) -> anyhow::Result<Report> {
        self.report.partial = interrupted;
        self.ended = true;
        self.write()?;
        self.end_shard_stream()?;
        Ok(self.report)
    }
}

/// The reports rewritten whole with every change: all but those a level's rows are appended to.
fn rewritten() -> Vec<Box<dyn Format + Send + Sync>> {
    let mut all = formats::all();
    all.retain(|r| !APPENDED.contains(&r.file_name()) && r.file_name() != fairness_csv::FILE_NAME);
    all
}

/// Write `topic-names.jsonl` and start the files each level's rows are appended to:
/// `topics.jsonl` and `fairness.jsonl` empty (all named in `report`), topics.csv, tenants.csv and fairness.csv with their headers. A
/// reused directory keeps none of an earlier run's rows.
fn start_appended(report: &mut Report, dir: &Path) -> anyhow::Result<()> {
    report.topic_names_file = Some(topic_names::create(dir, report)?);
    report.topics_file = Some(topics_file::create(dir)?);
    report.fairness_file = Some(fairness_file::create(dir)?);
    for (name, head) in APPENDED.iter().zip(headers(report)?) {
        write_atomic(&dir.join(name), &head)?;
    }
    write_atomic(&dir.join(fairness_csv::FILE_NAME), &fairness_csv::header()?)
}

/// What the target adds to a level's row beyond its statistics.
#[derive(Default)]
struct RowExtra {
    /// The first failure of each class (class name → one line).
    first_failures: BTreeMap<String, String>,
    /// The topic server's fetches (websub dialect).
    topic_server: Option<crate::topic_server::TopicFetchStats>,
    /// The level's topic churn (`--topic-churn`).
    topic_churn: Option<crate::stats::TopicChurnStats>,
    /// Time paused through the control API (`--web`): left out of the row's rates.
    paused: std::time::Duration,
}

/// A row's rates over its span less the time it was paused (`--web`), and that time noted.
fn unpause_rates(row: &mut LevelReport, paused: f64) {
    row.paused_s = Some((paused * 1000.0).round() / 1000.0);
    row.derived.unpause(paused);
}
