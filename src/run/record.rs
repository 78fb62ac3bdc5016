//! `RunRecord`: the report of a run in progress; every change rewrites all report files.

use std::time::SystemTime;

use crate::config::RunConfig;
use crate::engine::{LevelRun, LevelSpec, Load};
use crate::judge::Threshold;
use crate::judge::{judge, what_if_for_rows, CapacityResult};
use crate::report::build::level_report;
use crate::report::csv::CsvReporter;
use crate::report::json::JsonReporter;
use crate::report::table::TableReporter;
use crate::report::whatif_csv::WhatIfCsvReporter;
use crate::report::writer::ReportWriter;
use crate::report::{HtmlReporter, LevelReport, PhaseReport, RateCheck, Report, Reporter};
use crate::stats::LevelStats;
use crate::target::PhaseResult;
use crate::workload::Workload;

/// The report being built, its merged TOTAL, and where it is written.
#[derive(Debug)]
pub struct RunRecord {
    report: Report,
    total: LevelStats,
    writer: ReportWriter,
    thresholds: Vec<Threshold>,
    what_if: Vec<std::time::Duration>,
    retries: u32,
    run_timeout: std::time::Duration,
}

/// Every reporter a run writes.
pub fn reporters() -> Vec<Box<dyn Reporter + Send + Sync>> {
    vec![
        Box::new(TableReporter),
        Box::new(CsvReporter),
        Box::new(JsonReporter),
        Box::new(WhatIfCsvReporter),
        Box::new(HtmlReporter),
    ]
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
        let report = Report {
            tool: "hubload".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            target: "websub".into(),
            target_url: String::new(),
            model: cfg.model.into(),
            started_at: now_rfc3339(),
            finished_at: now_rfc3339(),
            partial: true,
            config: cfg.shown.clone(),
            topics: workload
                .topics()
                .iter()
                .map(|t| t.name.to_string())
                .collect(),
            registration: None,
            deregistration: None,
            levels: Vec::new(),
            total: None,
            verdicts: Vec::new(),
            rate_checks: Vec::new(),
            what_if: None,
            capacity: None,
            servicebus: None,
        };
        let writer = ReportWriter::new(dir, reporters())?;
        Ok(RunRecord {
            report,
            total: LevelStats::default(),
            writer,
            thresholds: cfg.thresholds.clone(),
            what_if: cfg.what_if.clone(),
            retries: cfg.client.retries,
            run_timeout: cfg.client.timeout,
        })
    }

    /// The report directory.
    pub fn dir(&self) -> &std::path::Path {
        self.writer.dir()
    }

    /// Name the target (never a secret: URLs are shown without passwords).
    pub fn set_target(&mut self, kind: &str, url: &url::Url) {
        let mut u = url.clone();
        if u.password().is_some() {
            let _ = u.set_password(Some("redacted"));
        }
        self.report.target = kind.into();
        self.report.target_url = u.to_string();
    }

    /// Record the registration phase.
    pub fn set_registration(&mut self, p: &PhaseResult) -> anyhow::Result<()> {
        self.report.registration = Some(PhaseReport::from(p));
        self.write()
    }

    /// Record the deregistration phase.
    pub fn set_deregistration(&mut self, p: &PhaseResult) -> anyhow::Result<()> {
        self.report.deregistration = Some(PhaseReport::from(p));
        self.write()
    }

    /// Add a finished level, recompute TOTAL and verdicts, rewrite the reports.
    pub fn push_level(&mut self, spec: &LevelSpec, run: LevelRun) -> anyhow::Result<()> {
        let open = matches!(spec.load, Load::Open { .. });
        let (concurrency, rate) = match spec.load {
            Load::Closed { concurrency } => (Some(u64::from(concurrency)), None),
            Load::Open { rate, .. } => (None, Some(rate)),
        };
        let label = spec.load.label();
        let row = level_report(&label, concurrency, rate, &run.stats, open);
        if let (Some(target), Some(scheduled)) = (rate, run.scheduled) {
            let secs = spec
                .stop
                .duration
                .map_or(run.elapsed, |d| d.min(run.elapsed))
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
        self.total += &run.stats;
        self.report.levels.push(row);
        let open_run = self.report.model == "open";
        self.report.total = Some(level_report("TOTAL", None, None, &self.total, open_run));
        self.report.verdicts = judge(
            &self.thresholds,
            &self.report.levels,
            self.report.total.as_ref(),
        );
        self.report.what_if = Some(what_if_for_rows(
            self.report.levels.iter().chain(self.report.total.as_ref()),
            &self.what_if,
            self.retries,
            self.run_timeout,
        ));
        self.write()
    }

    /// The row of the level pushed last.
    pub fn last_level(&self) -> Option<&LevelReport> {
        self.report.levels.last()
    }

    /// Record the capacity finder's result.
    pub fn set_capacity(&mut self, c: CapacityResult) -> anyhow::Result<()> {
        self.report.capacity = Some(c);
        self.write()
    }

    /// Record what the Service Bus sender saw.
    pub fn set_servicebus(&mut self, info: crate::report::ServiceBusInfo) -> anyhow::Result<()> {
        self.report.servicebus = Some(info);
        self.write()
    }

    fn write(&mut self) -> anyhow::Result<()> {
        self.report.finished_at = now_rfc3339();
        self.writer.write_all(&self.report)
    }

    /// Mark the run finished (partial when interrupted), write, and hand back the report.
    pub fn finish(mut self, interrupted: bool) -> anyhow::Result<Report> {
        self.report.partial = interrupted;
        self.write()?;
        Ok(self.report)
    }
}
