//! A load run from a validated `RunConfig`: one loop over the run's target kinds (one, or two
//! side by side), each set up, its levels run in order, its reports rewritten after every
//! level and its JTL synced, thresholds judged; then the side-by-side report when there are two.

pub mod embedded;
mod embedded_emulator;
mod levels;
mod local_limits;
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

use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use crate::config::{RunConfig, TargetKind};
use crate::engine::{Control, LevelSpec, Live};
use crate::report::jtl::{channel_writer, JtlNames};
use crate::run_report::Report;
use crate::shard::Load as ShardLoad;
use crate::shard_contract::{ShardSlot, ShardSpec};
use crate::stats::Clock;
use crate::workload::Workload;

use embedded::HubBroker;
use levels::{run_levels, shard_part};
use path::TargetPath;
pub use record::RunRecord;
use run_inputs::{check_phase, owned_topics, Shared};
use servicebus_path::ServiceBusPath;
use two_paths::{jtl_file, report_dir};
use websub_path::WebSubPath;

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

/// Run one opened target path into `dir`: JTL, set-up, levels, its section, tear-down, and
/// (sharded) the shard's stream of records. Every kind goes through here.
async fn run_path<P: TargetPath>(
    sh: &Shared<'_>,
    path: P,
    dir: &Path,
    shard: Option<&ShardSpec>,
) -> anyhow::Result<Report> {
    let cfg = sh.cfg;
    let paths = cfg.target.kinds.len();
    let mut rec = RunRecord::with_dir(cfg, &sh.workload, dir)
        .with_context(|| format!("cannot prepare the reports in {}", dir.display()))?;
    if sh.shard.is_sharded() {
        // Shards do not judge thresholds: only the merged run is judged (`hubload merge`).
        rec.clear_thresholds();
    }
    if let Some(spec) = shard {
        // Each level's part of the artifact goes out as the level ends (file and stdout).
        let parts: Vec<ShardLoad> = cfg
            .levels
            .iter()
            .map(|l| shard_part(l, spec.slot()).1)
            .collect();
        rec.stream_shard(spec, parts)?;
    }
    rec.set_target(P::KIND, path.url());
    for w in sh.observers.iter().flat_map(|o| &o.warnings) {
        rec.add_warning(w.clone());
    }
    for w in cfg.levels.iter().filter_map(LevelSpec::sparse_rate) {
        rec.add_warning(w);
    }
    let mut writer = None;
    let mut jtl = None;
    if let Some(file) = &cfg.output.jtl {
        let file = jtl_file(file, P::KIND, paths);
        let names = JtlNames {
            url: path.jtl_url(),
            channels: cfg.workload.channels.clone(),
        };
        let (tx, handle) = channel_writer(&file, names)
            .with_context(|| format!("cannot write the JTL file {}", file.display()))?;
        jtl = Some(tx);
        writer = Some(handle);
    }
    let sh = Shared {
        jtl,
        topic_server: path.topic_server(),
        ..sh.clone()
    };
    // Everything that can fail between opening the JTL file and joining its writer, so that
    // every exit (an error included) joins the writer and its last rows reach the file.
    let ran: anyhow::Result<()> = async {
        let mine = owned_topics(&sh.workload, sh.shard);
        if let Some(prepared) = path.prepare(&mine, &sh.cancel).await {
            // Recorded first, so a failed registration's counts and reasons are in summary.json.
            rec.set_registration(&prepared)?;
            // A phase cut short by the signal is not the hub's failure: the run ends with 130.
            if !sh.cancel.is_cancelled() {
                path.refuse_prepared()?;
                check_phase(&prepared, P::PREPARE, &path.endpoint())?;
            }
        }
        let fleet = subscribers::start_for(
            cfg,
            &sh.workload,
            &sh.cancel,
            P::KIND,
            &mine,
            (path.url(), path.topic_url_prefix()),
            path.sb_connection(),
            &mut rec,
        )
        .await?;
        if let (Some(w), Some(f)) = (sh.web, &fleet) {
            w.watch_delivery(f.live_view());
        }
        let churn = match (cfg.topic_churn, path.topic_registry()) {
            (Some(rate), Some(registry)) => Some(topic_churn_cycles::TopicChurnRun::new(
                registry,
                // The shards together churn at the run's rate, each its own topics.
                rate / f64::from(sh.shard.count.max(1)),
                &mine,
                sh.workload.topics().len(),
                fleet.as_ref().map(|f| f.topic_subscribers()),
            )),
            _ => None,
        };
        let sh = Shared {
            // Topic churn stripes too: a shard churns its own topics, so only it can tell a
            // refusal of theirs inside a window (docs/topic-churn.md).
            own_topics: subscribers::own_topics(
                fleet.is_some() || churn.is_some(),
                &sh.workload,
                sh.shard,
                &mine,
            ),
            delivery: fleet.as_ref(),
            topic_churn: churn.as_ref(),
            ..sh.clone()
        };
        let levels = run_levels(&sh, &mut rec, |spec| path.target(spec)).await;
        path.add_section(&mut rec)?;
        if let Some(e) = match sh.observers {
            Some(o) => o.finish().await,
            None => None,
        } {
            rec.set_exporter(e)?;
        }
        levels?;
        if let Some(unsub) = match &fleet {
            Some(f) => f.finish(&sh.cancel).await,
            None => None,
        } {
            rec.set_unsubscription(&unsub)?;
        }
        if let Some(dereg) = path.teardown(&mine, &sh.cancel).await {
            rec.set_deregistration(&dereg)?;
        }
        path.close().await;
        Ok(())
    }
    .await;
    let interrupted = sh.cancel.is_cancelled();
    drop(sh);
    let joined = join_jtl(writer).await;
    ran?;
    joined?;
    // A shard's stream ends with its end record (partial when interrupted).
    rec.finish(interrupted)
}

/// Wait for the JTL writer (every sender dropped) to write its last rows and close the file.
async fn join_jtl(writer: Option<JoinHandle<std::io::Result<u64>>>) -> anyhow::Result<()> {
    let Some(h) = writer else {
        return Ok(());
    };
    let rows = tokio::task::spawn_blocking(move || h.join())
        .await
        .ok()
        .and_then(|r| r.ok())
        .transpose()
        .context("writing the JTL file")?;
    tracing::info!(rows = rows.unwrap_or(0), "JTL written");
    Ok(())
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
    // `--web` with scraping: every round goes down this channel to the page.
    let (server_tx, server_rx) = match (&cfg.web, cfg.observe.scrapes()) {
        (Some(_), true) => {
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
                server: server_rx,
                delivery: Default::default(),
            };
            Some(crate::web::WebServer::start(w, cfg, sources, on_stop).await?)
        }
        _ => None,
    };
    crate::console::banner::print_banner(cfg, &workload);
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
    };
    let out = &cfg.output.out_dir;
    let paths = cfg.target.kinds.len();
    let mut reports: Vec<(TargetKind, Report)> = Vec::with_capacity(paths);
    // `--hub-servicebus`: one embedded emulator for the whole run, the embedded hub's broker
    // and the Service Bus path's namespace both.
    let shared_emulator = if cfg.target.hub_servicebus {
        Some(servicebus_path::start_emulator().await?)
    } else {
        None
    };
    let shared_cs = shared_emulator
        .as_ref()
        .map(|e| e.connection_string_parsed());
    let hub_broker = shared_emulator.as_ref().map(|e| HubBroker {
        cs: e.connection_string_parsed(),
        admin: e.admin_url(),
    });
    for &kind in &cfg.target.kinds {
        if cancel.is_cancelled() && !reports.is_empty() {
            break;
        }
        let dir = report_dir(out, kind, paths);
        let report = match kind {
            TargetKind::Websub => {
                let p = WebSubPath::open(cfg, &workload, hub_broker.clone()).await?;
                run_path(&sh, p, &dir, spec.as_ref()).await?
            }
            TargetKind::Servicebus => {
                let p = ServiceBusPath::open(cfg, &workload, shared_cs.clone()).await?;
                run_path(&sh, p, &dir, spec.as_ref()).await?
            }
        };
        reports.push((kind, report));
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
