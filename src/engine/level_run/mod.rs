//! Runs one level: starts the workers (and the pacer for the open model), waits, merges their stats.
//!
//! Level boundaries lose nothing: with `--requests N` exactly N measured events are issued; with
//! a duration, no event starts after the deadline, and events already in flight are awaited and
//! counted in this level (each attempt is bounded by the client timeout).

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use super::context::LevelContext;
use super::driver::{run_pacer, Driver, OpenParams, Seqs, Window};
use super::plan::{LevelSpec, Load};
use super::stripe::{merged, stripes};
use super::surge_pacer::{run_surge_pacer, SurgeParams};
use super::worker::worker_loop;
use crate::stats::{LevelStats, SharedLevel, Writers};
use crate::targets::Target;
use crate::workload::{surge_base, Workload};
use tokio::sync::Semaphore;
use tokio::time::Instant;

/// By topic index: whether the topic is a quiet tenant's (it has a tenant, and not a surging
/// one). Shared topics are no tenant's.
fn quiet_topics(w: &Workload) -> Vec<bool> {
    let surging = w.surge().map_or(&[][..], |s| &s.surge().tenants[..]);
    w.topics()
        .iter()
        .map(|t| t.tenant.is_some_and(|n| !surging.contains(&n)))
        .collect()
}

/// The result of one level.
#[derive(Debug)]
pub struct LevelRun {
    /// The merged statistics of every worker.
    pub stats: LevelStats,
    /// Open model: measured sends scheduled (sent + dropped).
    pub scheduled: Option<u64>,
    /// Measured time from its start to the last worker's end.
    pub elapsed: Duration,
    /// True when the level was cut short by cancellation.
    pub interrupted: bool,
    /// Time the level spent paused (`--web`), set by the run; left out of its rates.
    pub paused: Duration,
    /// The target's first failure of each class (class name → text), set by the run.
    pub first_failures: std::collections::BTreeMap<String, String>,
}

/// Run `spec` as level number `index`. `seq_base` is the first event sequence number of the level.
pub async fn run_level<T: Target>(
    ctx: Arc<LevelContext<T>>,
    spec: &LevelSpec,
    index: u64,
    seq_base: u64,
) -> LevelRun {
    // Owner striping walks every number and keeps its own topics'; otherwise every count-th.
    let (shard, shards) = match ctx.own_topics {
        Some(_) => (0, 1),
        None => (u64::from(ctx.slice.index), u64::from(ctx.slice.count)),
    };
    let seqs = Seqs::striped(seq_base, spec.stop.requests, shard, shards);
    // Warm-up events come from their own sequence space so they never shift the measured stream.
    let warm_base = (1u64 << 62) + (index << 40);
    let warm_seqs = Seqs::striped(warm_base, None, shard, shards);
    let begin = Instant::now();
    let measured_start = begin + spec.warmup;
    let window = Window {
        measured_start,
        deadline: spec.stop.duration.map(|d| measured_start + d),
    };
    let mut pacer = None;
    let mut surge_pacer = None;
    // Where this level's surge starts; `None`: no surge in this level.
    let surge_from =
        (ctx.workload.surge()).and_then(|s| s.surge().from_in(index as usize, spec.stop.duration));
    // The runtime the workers are spawned on: its threads decide how many recorders avoid
    // contention (1 on the current-thread runtime), and one thread running every worker
    // adds to the shared counters without atomic read-modify-writes.
    let runtime = tokio::runtime::Handle::current();
    let threads = runtime.metrics().num_workers();
    let writers = match runtime.runtime_flavor() {
        tokio::runtime::RuntimeFlavor::CurrentThread => Writers::OneThread,
        _ => Writers::Threads,
    };
    let (driver, workers) = match spec.load {
        Load::Closed { concurrency } => (
            Driver::Closed {
                window,
                seqs,
                warm_seqs,
                issued: AtomicU64::new(0),
                warm_issued: AtomicU64::new(0),
                writers,
                own: ctx.own_topics.clone(),
                control: ctx.control.clone(),
            },
            // `--web`: enough workers for the run's highest concurrency, so the control can
            // raise this level's; those above its load wait in the driver until it does.
            ctx.control
                .as_ref()
                .map_or(concurrency, |c| c.closed_workers(concurrency)) as usize,
        ),
        Load::Open { rate, max_inflight } => {
            let (tx, rx) = async_channel::bounded(max_inflight as usize);
            let permits = Arc::new(Semaphore::new(max_inflight as usize));
            if let (Some(s), Some(from)) = (ctx.workload.surge(), surge_from) {
                let p = SurgeParams {
                    rate: rate * s.extra(),
                    start: measured_start + from,
                    deadline: window.deadline,
                    arrivals: ctx.arrivals,
                    seed: seq_base ^ index ^ 0x5e,
                    permits: permits.clone(),
                    own: ctx.own_topics.clone(),
                };
                let seqs = Seqs::striped(surge_base(index), None, shard, shards);
                surge_pacer = Some(tokio::spawn(run_surge_pacer(
                    p,
                    seqs,
                    tx.clone(),
                    ctx.cancel.clone(),
                )));
            }
            let p = OpenParams {
                rate,
                permits,
                arrivals: ctx.arrivals,
                ramp_up: spec.ramp_up,
                seed: seq_base ^ index,
                own: ctx.own_topics.clone(),
                control: ctx.control.clone(),
            };
            pacer = Some(tokio::spawn(run_pacer(
                p,
                window,
                begin,
                seqs,
                warm_seqs,
                tx,
                ctx.cancel.clone(),
            )));
            (Driver::Open { rx }, max_inflight as usize)
        }
    };
    let driver = Arc::new(driver);
    let ramp_over = match spec.load {
        Load::Closed { concurrency } => (concurrency as usize).max(1),
        Load::Open { .. } => workers.max(1),
    };
    let ramp = match spec.load {
        Load::Closed { .. } => spec.ramp_up,
        Load::Open { .. } => Duration::ZERO, // the pacer ramps the rate
    };
    // Sized for the timeout (at most an hour's: any longer value still fits, by growing).
    let high_us = ctx.attempt_timeout.as_micros().min(3_600_000_000) as u64;
    let corrected_us = if ctx.open_model { high_us } else { 0 };
    let stripes = stripes(workers, threads, (high_us, corrected_us), writers);
    let topics = ctx.workload.topics().len();
    let start = measured_start.into_std();
    let mut shared = SharedLevel::new(topics, &ctx.clock, start, threads, writers);
    if surge_from.is_some() {
        // The quiet tenants' seconds, for the isolation verdict: the level's and the tail of
        // attempts still in flight at its end (in the last second).
        let secs = spec.stop.duration.map_or(1, |d| d.as_secs() as usize + 2);
        shared = shared.with_quiet(quiet_topics(&ctx.workload), secs);
    }
    let shared = Arc::new(shared);
    ctx.live.watch(stripes.clone());
    let mut handles = Vec::with_capacity(workers);
    for w in 0..workers {
        let (ctx, driver, stripes) = (ctx.clone(), driver.clone(), stripes.clone());
        let shared = shared.clone();
        // Closed-model ramp: worker w joins at w/C of the ramp, after the warm-up (a worker
        // above C, started for a raise, at the ramp's end).
        let delay = ramp.mul_f64((w as f64 / ramp_over as f64).min(1.0));
        handles.push(tokio::spawn(worker_loop(
            ctx,
            driver,
            stripes,
            shared,
            w,
            measured_start,
            delay,
        )));
    }
    let mut stats = LevelStats::default();
    let scheduled = match pacer {
        Some(p) => {
            let (mut scheduled, mut dropped) = p.await.unwrap_or((0, 0));
            if let Some(s) = surge_pacer {
                let (more, lost) = s.await.unwrap_or((0, 0));
                scheduled += more;
                dropped += lost;
            }
            stats.dropped += dropped;
            Some(scheduled)
        }
        None => None,
    };
    for h in handles {
        // A worker panic is a bug; surface it rather than silently losing its counts.
        h.await.expect("worker task panicked");
    }
    stats += &merged(&stripes);
    shared.finish(&mut stats);
    LevelRun {
        stats,
        scheduled,
        elapsed: Instant::now().saturating_duration_since(measured_start),
        interrupted: ctx.cancel.is_cancelled(),
        paused: Duration::ZERO,
        first_failures: Default::default(),
    }
}

#[cfg(test)]
mod tests;
