//! The levels of one target path, in order (or as the capacity search's probes): each level
//! split to this shard, run on a fresh target, its JTL rows synced, its row recorded.

use std::sync::Arc;
use std::time::Duration;

use super::local_limits;
use super::record::RunRecord;
use super::run_inputs::Shared;
use super::shard_seconds::{Panels, ShardSeconds};
use crate::config::RunConfig;
use crate::console::progress;
use crate::engine::{max_concurrency, run_level, LevelContext, LevelRun, LevelSpec, Load, Slice};
use crate::observe::LevelObservation;
use crate::report::judge::find_capacity;
use crate::report::model::build::level_report;
use crate::report::model::delivery_report::LevelDelivery;
use crate::shard::Load as ShardLoad;
use crate::shard_contract::ShardSlot;
use crate::stats::{LevelStats, TopicChurnStats};
use crate::targets::Target;
use crate::topic_server::TopicFetchStats;

/// How long after `HUBLOAD_START_AT` a shard may still join.
const START_GRACE: Duration = Duration::from_secs(10);

/// This shard's part of a level: the concurrency or rate split as floor plus remainder.
/// (`--requests` needs no split: each shard takes every `count`-th event of the level.)
pub(crate) fn shard_part(spec: &LevelSpec, shard: ShardSlot) -> (LevelSpec, ShardLoad) {
    let split = |n: u64| shard.part(n);
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
                rate / f64::from(shard.count)
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

/// What the engine runs of this shard's `part` of `spec`: the part itself, except that with
/// owner striping an open-model pacer keeps the whole rate's schedule and sends only its own
/// topics' slots of it (so the shards together send the single run's schedule).
fn engine_part(sh: &Shared<'_>, spec: &LevelSpec, part: &LevelSpec) -> LevelSpec {
    match (&sh.own_topics, spec.load, part.load) {
        (Some(_), Load::Open { rate, .. }, Load::Open { max_inflight, .. }) => LevelSpec {
            load: Load::Open { rate, max_inflight },
            ..part.clone()
        },
        _ => part.clone(),
    }
}

/// The part a shard records for a level it ran owner-striped in the open model: the rate of
/// its own slots of the schedule (scheduled over the measured span), so its rate check
/// judges what it was asked to send rather than `rate / count` of an uneven split.
fn recorded_part(sh: &Shared<'_>, part: &LevelSpec, run: &LevelRun) -> LevelSpec {
    match (&sh.own_topics, part.load, run.scheduled) {
        (Some(_), Load::Open { max_inflight, .. }, Some(scheduled)) => {
            let span = part
                .stop
                .duration
                .map_or(run.elapsed, |d| d.min(run.elapsed));
            let rate = match span.as_secs_f64() {
                s if s > 0.0 => scheduled as f64 / s,
                _ => 0.0,
            };
            LevelSpec {
                load: Load::Open { rate, max_inflight },
                ..part.clone()
            }
        }
        _ => part.clone(),
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
/// With `--web`, a closed level's pool is sized for the run's highest concurrency, which the
/// control may raise it to (connections open only as they are needed).
pub(crate) fn pool_size(cfg: &RunConfig, spec: &LevelSpec) -> usize {
    cfg.client
        .pool_per_host
        .map(|n| n as usize)
        .unwrap_or(match spec.load {
            Load::Closed { concurrency } if cfg.web.is_some() => {
                concurrency.max(max_concurrency(&cfg.levels)) as usize
            }
            Load::Closed { concurrency } => concurrency as usize,
            Load::Open { max_inflight, .. } => max_inflight as usize,
        })
}

/// Run one level against a fresh target built by `make`; `label` names the row (the whole
/// level's load, where `spec` is this shard's part).
async fn run_spec<T: Target>(
    sh: &Shared<'_>,
    make: &impl Fn(&LevelSpec) -> T,
    spec: &LevelSpec,
    i: usize,
    label: &str,
) -> Ran {
    let target = Arc::new(make(spec));
    let ctx = Arc::new(LevelContext {
        target: target.clone(),
        workload: sh.workload.clone(),
        clock: sh.clock,
        retries: sh.cfg.client.retries,
        arrivals: sh.cfg.arrivals,
        slice: Slice {
            index: sh.shard.index,
            count: sh.shard.count,
        },
        cancel: sh.cancel.clone(),
        live: sh.live.clone(),
        attempts: sh.jtl.clone(),
        level_load: spec.load,
        open_model: matches!(spec.load, Load::Open { .. }),
        late_after: crate::stats::LATE_SEND,
        attempt_timeout: sh.cfg.client.timeout,
        level_workers: match spec.load {
            Load::Closed { concurrency } => concurrency,
            Load::Open { max_inflight, .. } => max_inflight,
        },
        observer: observer(sh),
        own_topics: sh.own_topics.clone(),
        control: sh.control.clone(),
    });
    let bar = progress::LevelProgress::start(
        progress::enabled(sh.cfg.output.quiet),
        spec,
        sh.live.clone(),
    );
    if let Some(d) = sh.delivery {
        d.open_level(seq_base(spec, i), spec.warmup);
    }
    if let Some(c) = sh.topic_churn {
        c.open_level();
    }
    if let Some(o) = sh.observers {
        let (load, bound) = match spec.load {
            Load::Closed { concurrency } => (f64::from(concurrency), f64::from(concurrency)),
            Load::Open { rate, max_inflight } => (rate, f64::from(max_inflight)),
        };
        o.level_start(label, load, bound).await;
    }
    if let Some(c) = &sh.control {
        c.begin_level(i, label, spec.load);
    }
    let mut run = run_level(ctx, spec, i as u64, seq_base(spec, i)).await;
    if let Some(w) = sh.web {
        w.level_ended();
    }
    if let Some(c) = &sh.control {
        run.paused = c.end_level();
    }
    let observed = match sh.observers {
        Some(o) => {
            let mut seen = o.level_end(run.stats.latency.value_at_quantile(0.5)).await;
            if let (Some(g), Load::Open { .. }) = (seen.generator.as_mut(), spec.load) {
                g.late_sends = Some(run.stats.late_sends);
            }
            Some(seen)
        }
        None => None,
    };
    run.first_failures = target.first_failures();
    if sh.topic_churn.is_some() {
        // The target noted a refusal as `denied` or `http_4xx` before the worker found it
        // inside a churn window (`expected_refusal`): keep the classes the level counted.
        let counts = &run.stats.counts;
        run.first_failures.retain(|class, _| {
            crate::result::Class::ALL
                .iter()
                .find(|c| c.name() == class)
                .is_none_or(|c| counts.get(*c) > 0)
        });
    }
    let fetches = sh.topic_server.as_ref().map(|ts| ts.take_stats());
    bar.finish();
    // Before the fleet closes the level: the churned topics' subscribers settle first.
    let churn = match sh.topic_churn {
        Some(c) => {
            let mut s = c.close_level(&sh.cancel).await;
            s.expected_refusals = run.stats.counts.get(crate::result::Class::ExpectedRefusal);
            Some(s)
        }
        None => None,
    };
    let delivery = match sh.delivery {
        Some(d) => Some(d.close_level(run.elapsed, &sh.cancel).await),
        None => None,
    };
    if let Some(jtl) = &sh.jtl {
        // The level's rows reach the file before its row reaches summary.json, so a killed
        // run's JTL holds every row of every level the summary lists. A failed writer is
        // reported when it is joined at the end of the path.
        let _ = jtl.sync().await;
    }
    (run, delivery, (fetches, churn), observed)
}

/// What the workers tell: the fleet's tracker, and with `--topic-churn` the churn's windows.
fn observer(sh: &Shared<'_>) -> Option<Arc<dyn crate::engine::PublishObserver>> {
    let tracker = sh
        .delivery
        .map(|d| d.tracker() as Arc<dyn crate::engine::PublishObserver>);
    match sh.topic_churn {
        Some(c) => Some(c.observer(tracker)),
        None => tracker,
    }
}

/// A level as run: the engine's result, what its subscribers received, the topic server's
/// fetches during it (websub dialect) and its topic churn, and what the observers saw.
type Ran = (
    LevelRun,
    Option<LevelDelivery>,
    (Option<TopicFetchStats>, Option<TopicChurnStats>),
    Option<LevelObservation>,
);

/// Record a level's row, then what its subscribers received and what the observers saw.
fn push(
    rec: &mut RunRecord,
    spec: &LevelSpec,
    label: &str,
    (run, delivery, (fetches, churn), observed): Ran,
) -> anyhow::Result<()> {
    rec.in_one_write(|rec| {
        rec.push_level(spec, label, run, fetches, churn)?;
        if let Some(o) = observed {
            rec.set_last_observation(o)?;
        }
        match delivery {
            Some(d) => rec.set_last_delivery(&d),
            None => Ok(()),
        }
    })?;
    // A shard writes the level as soon as it is recorded: `merge --follow` merges it then.
    rec.shard_level_done()
}

/// `--web`: the live page gets the level's row, and summary.json the control's changes.
fn live_hooks(sh: &Shared<'_>, rec: &mut RunRecord) -> anyhow::Result<()> {
    if let (Some(w), Some(row)) = (sh.web, rec.last_level()) {
        w.level_recorded(row);
        w.judged(&rec.report().verdicts, &rec.report().knee);
    }
    match &sh.control {
        Some(c) => rec.set_control(c.events()),
        None => Ok(()),
    }
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
            let need = cfg.descriptors.map_or(need, |d| d.cap(need));
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
    // A shard's head goes out before its load, and its seconds from the load's start.
    let seconds = rec.shard_seconds()?;
    if let Some(at) = sh.start_at {
        // Every shard registered its topics; now all start the measured load together.
        crate::shard_contract::wait_for_start(at, START_GRACE).await?;
    }
    let seconds = seconds.map(|out| {
        ShardSeconds::start(out, sh.live.clone()).with_panels(Panels {
            control: sh.control.clone(),
            delivery: sh.delivery.map(|d| d.live_view()),
            server: sh.server_now.clone(),
        })
    });
    for (i, spec) in sh.cfg.levels.iter().enumerate() {
        if sh.cancel.is_cancelled() {
            break;
        }
        let (part, _) = shard_part(spec, sh.shard);
        let label = spec.load.label();
        if let Some(s) = &seconds {
            s.begin_level(
                i,
                &label,
                offered(part.load),
                matches!(spec.load, Load::Open { .. }),
            );
        }
        let run = run_spec(sh, &make, &engine_part(sh, spec, &part), i, &label).await;
        if let Some(s) = &seconds {
            s.end_level();
        }
        if let Some(w) = local_limits::warn_client_errors(&spec.load.label(), &run.0.stats) {
            rec.add_warning(w);
        }
        let part = recorded_part(sh, &part, &run.0);
        push(rec, &part, &spec.load.label(), run)?;
        if let Some(o) = sh.observers {
            o.level_recorded(rec.last_level());
        }
        live_hooks(sh, rec)?;
    }
    if let Some(s) = seconds {
        s.finish();
    }
    Ok(())
}

/// This shard's part of a level's load, as its seconds show it: a rate or a concurrency.
fn offered(load: Load) -> f64 {
    match load {
        Load::Closed { concurrency } => f64::from(concurrency),
        Load::Open { rate, .. } => rate,
    }
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
            let run = run_spec(sh, make, &spec, i, &spec.load.label()).await;
            let warning = local_limits::warn_client_errors(&spec.load.label(), &run.0.stats);
            let mut rec = rec_cell.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(w) = warning {
                rec.add_warning(w);
            }
            if let Err(e) = push(&mut rec, &spec, &spec.load.label(), run) {
                *failed_write.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
            }
            if let Some(o) = sh.observers {
                o.level_recorded(rec.last_level());
            }
            if let Err(e) = live_hooks(sh, &mut rec) {
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
