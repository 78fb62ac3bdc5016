//! A load run from a validated `RunConfig`: one loop over the run's target kinds (one, or two
//! side by side), each set up, its levels run in order, its reports rewritten after every
//! level and its JTL synced, thresholds judged; then the side-by-side report when there are two.
//! The one arm that names each kind's path (`path_kind`) is here; nothing else matches on it.

pub mod embedded;
mod embedded_emulator;
mod levels;
mod local_limits;
mod one_path;
mod own_thread;
mod path;
pub mod record;
mod run_inputs;
mod serve_topics;
mod servicebus_path;
mod shard_seconds;
pub mod signals;
mod subscribers;
mod tenant_design;
mod topic_churn_cycles;
mod two_paths;
mod websub_path;

use std::sync::Arc;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use crate::check::{Step, Steps};
use crate::config::{RunConfig, TargetKind};
use crate::engine::{Control, LevelSpec, Live};
use crate::report::document::Report;
use crate::shard_contract::{ShardSlot, ShardSpec};
use crate::stats::Clock;
use crate::workload::Workload;

use embedded_emulator::EmbeddedEmulator;
use path::PathKind;
pub use record::RunRecord;
use run_inputs::Shared;
use two_paths::report_dir;

/// How a run ended, for the exit code.
#[derive(Debug)]
pub struct RunOutcome {
    /// The final report (as written); the first path's in a side-by-side run.
    pub report: Report,
    /// Some threshold failed (on any path).
    pub thresholds_failed: bool,
    /// Ctrl-C or SIGTERM cut the run short.
    pub interrupted: bool,
    /// The validated configuration the run used.
    pub config: RunConfig,
}

/// The path of a kind: the one arm a new kind adds (its target and path files do the rest).
fn path_kind(kind: TargetKind) -> &'static dyn PathKind {
    match kind {
        TargetKind::Websub => &websub_path::WebSub,
        TargetKind::Servicebus => &servicebus_path::ServiceBus,
    }
}

/// What the banner says of a kind after `target    `.
pub(crate) fn banner_line(cfg: &RunConfig, kind: TargetKind) -> String {
    path_kind(kind).banner_line(cfg)
}

/// `hubload check`: every target of `cfg`, in order, each kind its own steps.
pub async fn check(cfg: &RunConfig) -> Vec<Step> {
    let bound = crate::check::bound(cfg);
    let mut steps = Steps(Vec::new());
    for &kind in &cfg.target.kinds {
        path_kind(kind).check(cfg, bound, &mut steps).await;
    }
    steps.0
}

/// Run the load described by `cfg`; reports go to `cfg.output.out_dir` after every level.
pub async fn run_load(cfg: &RunConfig, cancel: CancellationToken) -> anyhow::Result<RunOutcome> {
    let workload = Arc::new(Workload::new(cfg.workload.clone()).with_surge(cfg.surge.clone()));
    // Read and validated once, in config (with the sharded capacity-search rule).
    let spec = cfg.shard.clone();
    let slot = spec.as_ref().map_or(ShardSlot::WHOLE, ShardSpec::slot);
    if spec.is_some() {
        // A shard's log must be one ordered stream (see console).
        crate::console::messages_to_stdout();
    }
    // Before any load: an invalid --server-query ends the run here (exit 2).
    let live = Arc::new(Live::default());
    // `--web`: the run's steering, counted by the exporter and driven by the live server.
    let control = cfg
        .web
        .as_ref()
        .map(|_| Arc::new(Control::for_levels(cancel.clone(), &cfg.levels)));
    // `--web` with scraping: every round goes down this channel to the page; shard 0 writes
    // them in its seconds, for the merge's page.
    let shard0 = spec.is_some() && slot.index == 0;
    let (server_tx, server_rx) = match (cfg.web.is_some() || shard0, cfg.observe.scrapes()) {
        (true, true) => {
            let (tx, rx) = tokio::sync::watch::channel(Default::default());
            (Some(tx), Some(rx))
        }
        _ => (None, None),
    };
    let observers =
        crate::observe::Observers::start(cfg, live.clone(), control.clone(), server_tx).await?;
    let web = match (&cfg.web, &control) {
        (Some(w), Some(c)) => {
            let token = cancel.clone();
            let on_stop = Box::new(move || signals::first_stop(&token));
            let sources = crate::web::Sources {
                live: live.clone(),
                control: c.clone(),
                cpu: Some(crate::web::CpuGauge {
                    read: crate::observe::cpu::process_cpu_s,
                    cores: crate::observe::cpu::allowance().0,
                    bound: crate::observe::monitor::CPU_BOUND,
                }),
                server: server_rx.clone(),
                delivery: Default::default(),
            };
            Some(crate::web::WebServer::start(w, cfg, sources, on_stop).await?)
        }
        _ => None,
    };
    crate::console::banner::print_banner(cfg, &workload, |k| banner_line(cfg, k));
    if let Some(w) = &web {
        crate::console::say!("hubload: live page and control API at {}", w.url());
    }
    local_limits::announce(cfg);
    for w in cfg.levels.iter().filter_map(LevelSpec::sparse_rate) {
        tracing::warn!("{w}");
    }
    let sh = Shared {
        cfg,
        workload: workload.clone(),
        clock: Clock::new(),
        cancel: cancel.clone(),
        live,
        shard: slot,
        jtl: None,
        start_at: spec.as_ref().and_then(|s| s.start_at),
        delivery: None,
        topic_churn: None,
        own_topics: None,
        topic_server: None,
        observers: Some(&observers),
        control,
        web: web.as_ref(),
        server_now: server_rx.filter(|_| shard0),
    };
    let out = &cfg.output.out_dir;
    let paths = cfg.target.kinds.len();
    let mut reports = Vec::with_capacity(paths);
    // `--hub-servicebus`: one embedded emulator for the whole run, the embedded hub's broker
    // and the Service Bus path's namespace both.
    let shared_emulator = if cfg.target.hub_servicebus {
        Some(EmbeddedEmulator::start().await?)
    } else {
        None
    };
    for &kind in &cfg.target.kinds {
        if cancel.is_cancelled() && !reports.is_empty() {
            break;
        }
        let dir = report_dir(out, kind, paths);
        let path = path_kind(kind);
        let report = path
            .run(&sh, shared_emulator.as_ref(), &dir, spec.as_ref())
            .await?;
        reports.push((path.role(), report));
    }
    if let Some(emu) = shared_emulator {
        emu.shutdown().await;
    }
    if paths > 1 {
        two_paths::write(out, &reports, cfg.output.quiet)?;
    }
    let thresholds_failed = reports
        .iter()
        .any(|(_, r)| r.verdicts.iter().any(|v| !v.passed));
    let report = reports
        .into_iter()
        .next()
        .map(|(_, r)| r)
        .context("the run was interrupted before any path ran")?;
    // Taken before the page lingers: a Ctrl-C that ends the linger does not make the run
    // an interrupted one.
    let interrupted = cancel.is_cancelled();
    if let Some(w) = web {
        w.finish(&report.total, report.partial, &cancel).await;
    }
    Ok(RunOutcome {
        report,
        thresholds_failed,
        interrupted,
        config: cfg.clone(),
    })
}
