//! A load run from a validated `RunConfig`: targets set up, topics registered, levels run in
//! order, reports rewritten after every level, thresholds judged.

pub mod embedded;
mod progress;
pub mod record;
mod servicebus;
mod side_by_side;
pub mod signals;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use crate::config::{RunConfig, TargetKind};
use crate::engine::{run_level, JtlSink, LevelContext, LevelRun, LevelSpec, Live, Load};
use crate::judge::find_capacity;
use crate::report::build::level_report;
use crate::report::Report;
use crate::shard::Load as ShardLoad;
use crate::stats::Clock;
use crate::stats::LevelStats;
use crate::targets::websub::{HubEndpoint, WebSubClient, WebSubTarget};
use crate::targets::{PhaseResult, Target};
use crate::workload::{Topic, Workload};

pub use record::RunRecord;

/// How a run ended, for the exit code.
#[derive(Debug)]
pub struct RunOutcome {
    /// The final report (as written).
    pub report: Report,
    /// Some threshold failed.
    pub thresholds_failed: bool,
    /// Ctrl-C or SIGTERM cut the run short.
    pub interrupted: bool,
}

/// What a level run needs besides the target.
#[derive(Clone)]
pub(crate) struct Shared<'a> {
    pub cfg: &'a RunConfig,
    pub workload: Arc<Workload>,
    pub clock: Clock,
    pub cancel: CancellationToken,
    pub live: Arc<Live>,
    pub shard: (u64, u64),
    pub jtl: Option<JtlSink>,
    /// Sharded runs: when the measured load starts, on every shard at once.
    pub start_at: Option<std::time::SystemTime>,
}

/// How long after `HUBLOAD_START_AT` a shard may still join.
const START_GRACE: Duration = Duration::from_secs(10);

/// This shard's part of a level: the concurrency or rate split as floor plus remainder.
/// (`--requests` needs no split: each shard takes every `count`-th event of the level.)
pub(crate) fn shard_part(spec: &LevelSpec, (index, count): (u64, u64)) -> (LevelSpec, ShardLoad) {
    let split = |n: u64| crate::shard::split_count(n, index as u32, count as u32);
    match spec.load {
        Load::Closed { concurrency } => {
            let part = split(u64::from(concurrency));
            (
                LevelSpec {
                    load: Load::Closed {
                        concurrency: part as u32,
                    },
                    ..spec.clone()
                },
                ShardLoad::Concurrency(part),
            )
        }
        Load::Open { rate, max_inflight } => {
            let part = if rate.fract() == 0.0 {
                split(rate as u64) as f64
            } else {
                rate / count as f64
            };
            let mi = split(u64::from(max_inflight)).max(1) as u32;
            (
                LevelSpec {
                    load: Load::Open {
                        rate: part,
                        max_inflight: mi,
                    },
                    ..spec.clone()
                },
                ShardLoad::Rate(part),
            )
        }
    }
}

/// First sequence number of level `i`: consecutive blocks with `--requests`, so a run (or a set
/// of shards) with the same seed and count sends the same events; far-apart blocks otherwise.
fn seq_base(spec: &LevelSpec, i: usize) -> u64 {
    match spec.stop.requests {
        Some(n) => n * i as u64,
        None => (i as u64) << 40,
    }
}

/// Connections per host for a level: `--pool-per-host`, else the level's concurrency.
fn pool_size(cfg: &RunConfig, spec: &LevelSpec) -> usize {
    cfg.client
        .pool_per_host
        .map(|n| n as usize)
        .unwrap_or(match spec.load {
            Load::Closed { concurrency } => concurrency as usize,
            Load::Open { max_inflight, .. } => max_inflight as usize,
        })
}

/// Run one level against a fresh target built by `make`.
async fn run_spec<T: Target>(
    sh: &Shared<'_>,
    make: &impl Fn(&LevelSpec) -> T,
    spec: &LevelSpec,
    i: usize,
) -> LevelRun {
    let target = Arc::new(make(spec));
    let ctx = Arc::new(LevelContext {
        target: target.clone(),
        workload: sh.workload.clone(),
        clock: sh.clock,
        retries: sh.cfg.client.retries,
        arrivals: sh.cfg.arrivals,
        shard: sh.shard,
        cancel: sh.cancel.clone(),
        live: sh.live.clone(),
        jtl: sh.jtl.clone(),
        level_load: spec.load,
        open_model: matches!(spec.load, Load::Open { .. }),
        level_workers: match spec.load {
            Load::Closed { concurrency } => concurrency,
            Load::Open { max_inflight, .. } => max_inflight,
        },
    });
    let bar = progress::LevelProgress::start(
        progress::enabled(sh.cfg.output.quiet),
        spec,
        sh.live.clone(),
    );
    let mut run = run_level(ctx, spec, i as u64, seq_base(spec, i)).await;
    run.first_failures = target.first_failures();
    bar.finish();
    run
}

/// `template` with its load set to `x` (a concurrency, or a rate).
fn with_load(cfg: &RunConfig, template: &LevelSpec, x: f64) -> LevelSpec {
    let load = match template.load {
        Load::Closed { .. } => Load::Closed {
            concurrency: x.round().max(1.0) as u32,
        },
        Load::Open { max_inflight, .. } => {
            let need = (x * cfg.client.timeout.as_secs_f64())
                .ceil()
                .clamp(64.0, 20_000.0) as u32;
            Load::Open {
                rate: x,
                max_inflight: max_inflight.max(need),
            }
        }
    };
    LevelSpec {
        load,
        ..template.clone()
    }
}

/// Run every level (or the capacity search) against targets built by `make`, recording into `rec`.
pub(crate) async fn run_levels<T: Target>(
    sh: &Shared<'_>,
    rec: &mut RunRecord,
    make: impl Fn(&LevelSpec) -> T,
) -> anyhow::Result<()> {
    if let Some(cap) = &sh.cfg.capacity {
        return find(sh, rec, &make, cap).await;
    }
    if let Some(at) = sh.start_at {
        // Every shard registered its topics; now all start the measured load together.
        crate::shard::wait_for_start(at, START_GRACE).await?;
    }
    for (i, spec) in sh.cfg.levels.iter().enumerate() {
        if sh.cancel.is_cancelled() {
            break;
        }
        let (part, _) = shard_part(spec, sh.shard);
        let run = run_spec(sh, &make, &part, i).await;
        rec.push_level(&part, &spec.load.label(), run)?;
    }
    Ok(())
}

/// The capacity finder: each probe is one level, recorded like any other.
async fn find<T: Target>(
    sh: &Shared<'_>,
    rec: &mut RunRecord,
    make: &impl Fn(&LevelSpec) -> T,
    cap: &crate::config::CapacityConfig,
) -> anyhow::Result<()> {
    let template = &sh.cfg.levels[0];
    let (start, integer) = match template.load {
        Load::Closed { concurrency } => (f64::from(concurrency), true),
        Load::Open { rate, .. } => (rate, false),
    };
    // Mutex and atomic rather than cells: they keep the run's future `Send`.
    let rec_cell = std::sync::Mutex::new(&mut *rec);
    let probes = std::sync::atomic::AtomicUsize::new(0);
    let failed_write = std::sync::Mutex::new(None::<anyhow::Error>);
    let probe = |x: f64| {
        let spec = with_load(sh.cfg, template, x);
        let (rec_cell, probes, failed_write) = (&rec_cell, &probes, &failed_write);
        async move {
            if sh.cancel.is_cancelled() {
                // An empty row fails every SLO: the search winds down without sending load.
                return level_report("cancelled", None, None, &LevelStats::default(), false);
            }
            let i = probes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let run = run_spec(sh, make, &spec, i).await;
            let mut rec = rec_cell.lock().unwrap_or_else(|e| e.into_inner());
            if let Err(e) = rec.push_level(&spec, &spec.load.label(), run) {
                *failed_write.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
            }
            rec.last_level().cloned().expect("a level was just pushed")
        }
    };
    let result = find_capacity(probe, start, cap.max, &cap.slo, cap.budget, integer).await;
    if let Some(e) = failed_write.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    rec.set_capacity(result)
}

/// Register (or deregister) and check that the hub answered at all.
fn check_phase(p: &PhaseResult, url: &url::Url) -> anyhow::Result<()> {
    if p.topics > 0 && p.ok() == 0 {
        let why = p.first_error.as_deref().unwrap_or("no answer");
        anyhow::bail!("cannot register topics at the hub {url}: {why}");
    }
    if p.failed() > 0 {
        tracing::warn!(
            failed = p.failed(),
            first = p.first_error.as_deref().unwrap_or(""),
            "some topics failed to register; publishes to them will be counted as they are answered"
        );
    }
    Ok(())
}

/// The topics this process registers: its own tenants' when sharded (tenants are striped).
pub(crate) fn owned_topics(w: &Workload, shard: (u64, u64)) -> Vec<Topic> {
    let (index, count) = shard;
    w.topics()
        .iter()
        .filter(|t| match t.tenant {
            Some(tenant) => u64::from(tenant) % count == index,
            None => index == 0,
        })
        .cloned()
        .collect()
}

async fn run_websub(sh: &Shared<'_>, rec: &mut RunRecord) -> anyhow::Result<()> {
    let cfg = sh.cfg;
    let embedded = match &cfg.target.hub_url {
        Some(_) => None,
        None => Some(embedded::EmbeddedHub::start(
            hubload_hub::HubConfig::default(),
        )?),
    };
    let url = match (&cfg.target.hub_url, &embedded) {
        (Some(u), _) => u.clone(),
        (None, Some(h)) => h.url.clone(),
        (None, None) => unreachable!("embedded hub started above"),
    };
    rec.set_target(TargetKind::Websub, &url);
    let endpoint = HubEndpoint::resolve(&url).await?;
    // JTL rows name the publish URL (a thin ping names its mode in the body).
    let sh = &Shared {
        jtl: sh.jtl.as_ref().map(|j| JtlSink {
            sender: j.sender.clone(),
            url: match cfg.websub.dialect {
                crate::config::Dialect::Ballerina => format!("{url}?hub.mode=publish"),
                crate::config::Dialect::Websub => url.to_string(),
            }
            .into(),
        }),
        ..sh.clone()
    };
    let client = |max_conns: usize| WebSubClient {
        timeout: cfg.client.timeout,
        connect_timeout: cfg.client.connect_timeout,
        pool_timeout: cfg.client.pool_timeout,
        max_conns,
        headers: cfg.target.hub_headers.clone(),
        dialect: cfg.websub.dialect,
        topic_url_prefix: cfg
            .websub
            .topic_url_prefix
            .as_ref()
            .map_or(String::new(), |u| u.to_string()),
        phase_concurrency: cfg.register_concurrency as usize,
    };
    // Registration gets its own pool and at least 5 s per request: it is set-up, not load.
    let phase_client = WebSubClient {
        timeout: cfg.client.timeout.max(Duration::from_secs(5)),
        connect_timeout: cfg.client.connect_timeout.max(Duration::from_secs(5)),
        pool_timeout: Duration::from_secs(60),
        ..client(cfg.register_concurrency as usize)
    };
    let phase_target = WebSubTarget::new(endpoint.clone(), sh.workload.topics(), &phase_client);
    let mine = owned_topics(&sh.workload, sh.shard);
    if cfg.websub.register {
        let reg = phase_target.prepare(&mine).await;
        check_phase(&reg, &url)?;
        rec.set_registration(&reg)?;
    }
    let topics = sh.workload.topics();
    run_levels(sh, rec, |spec| {
        WebSubTarget::new(endpoint.clone(), topics, &client(pool_size(cfg, spec)))
    })
    .await?;
    if cfg.deregister && cfg.websub.register {
        let dereg = phase_target.teardown(&mine).await;
        rec.set_deregistration(&dereg)?;
    }
    Ok(())
}

/// Run the load described by `cfg`; reports go to `cfg.output.out_dir` after every level.
pub async fn run_load(cfg: &RunConfig, cancel: CancellationToken) -> anyhow::Result<RunOutcome> {
    let workload = Arc::new(Workload::new(cfg.workload.clone()));
    let spec = cfg.shard.clone();
    let shard = spec
        .as_ref()
        .map_or((0, 1), |s| (u64::from(s.index), u64::from(s.count)));
    let sh = Shared {
        cfg,
        workload: workload.clone(),
        clock: Clock::new(),
        cancel: cancel.clone(),
        live: Arc::new(Live::default()),
        shard,
        jtl: None,
        start_at: spec.as_ref().and_then(|s| s.start_at),
    };
    if cfg.target.kinds.len() > 1 {
        return side_by_side::run_each(&sh).await;
    }
    let mut jtl_writer = None;
    let mut sh = sh;
    if let Some(path) = &cfg.output.jtl {
        let (sender, handle) = crate::report::jtl::channel_writer(path)
            .with_context(|| format!("cannot write the JTL file {}", path.display()))?;
        sh.jtl = Some(JtlSink {
            sender,
            url: "".into(),
        });
        jtl_writer = Some(handle);
    }
    let mut rec = RunRecord::new(cfg, &workload).context("cannot prepare the reports")?;
    if shard.1 > 1 {
        // Shards do not judge thresholds: only the merged run is judged (`hubload merge`).
        rec.clear_thresholds();
    }
    for kind in &cfg.target.kinds {
        match kind {
            TargetKind::Websub => run_websub(&sh, &mut rec).await?,
            TargetKind::Servicebus => servicebus::run_servicebus(&sh, &mut rec).await?,
        }
    }
    drop(sh);
    if let Some(h) = jtl_writer {
        let rows = tokio::task::spawn_blocking(move || h.join())
            .await
            .ok()
            .and_then(|r| r.ok())
            .transpose()
            .context("writing the JTL file")?;
        tracing::info!(rows = rows.unwrap_or(0), "JTL written");
    }
    let interrupted = cancel.is_cancelled();
    let shard_parts: Vec<ShardLoad> = cfg.levels.iter().map(|l| shard_part(l, shard).1).collect();
    let (report, artifact) = match &spec {
        Some(spec) => {
            let (report, artifact) = rec.finish_shard(interrupted, spec, &shard_parts)?;
            (report, Some(artifact))
        }
        None => (rec.finish(interrupted)?, None),
    };
    if let Some(a) = artifact {
        crate::shard::write_artifact(&cfg.output.out_dir, &a).with_context(|| {
            format!(
                "cannot write the shard artifact in {}",
                cfg.output.out_dir.display()
            )
        })?;
        // Collectable with `kubectl logs … --tail=-1`: one self-contained line per chunk.
        let mut out = std::io::stdout().lock();
        for line in crate::shard::to_log_lines(&a) {
            use std::io::Write;
            let _ = writeln!(out, "{line}");
        }
    }
    let thresholds_failed = report.verdicts.iter().any(|v| !v.passed);
    Ok(RunOutcome {
        report,
        thresholds_failed,
        interrupted,
    })
}
