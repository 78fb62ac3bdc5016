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
use crate::stats::{LevelStats, SharedLevel};
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
    let (driver, workers) = match spec.load {
        Load::Closed { concurrency } => (
            Driver::Closed {
                window,
                seqs,
                warm_seqs,
                issued: AtomicU64::new(0),
                warm_issued: AtomicU64::new(0),
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
            if let Some(s) = ctx.workload.surge() {
                let p = SurgeParams {
                    rate: rate * s.extra(),
                    start: measured_start + s.surge().from,
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
    // The runtime's threads, which decide how many recorders avoid contention (1 on the
    // current-thread runtime).
    let threads = tokio::runtime::Handle::current().metrics().num_workers();
    // Sized for the timeout (at most an hour's: any longer value still fits, by growing).
    let high_us = ctx.attempt_timeout.as_micros().min(3_600_000_000) as u64;
    let corrected_us = if ctx.open_model { high_us } else { 0 };
    let stripes = stripes(workers, threads, (high_us, corrected_us));
    let topics = ctx.workload.topics().len();
    let mut shared = SharedLevel::new(topics, &ctx.clock, measured_start.into_std(), threads);
    if ctx.workload.surge().is_some() {
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
mod tests {
    use super::*;
    use crate::engine::live::Live;
    use crate::engine::pacer::Arrivals;
    use crate::engine::plan::Stop;
    use crate::result::{Class, Outcome, TimeoutKind};
    use crate::shard_contract::ShardSlot;
    use crate::stats::Clock;
    use crate::targets::mock::MockTarget;
    use crate::workload::{Distribution, TopicLayout, Workload, WorkloadConfig};
    use tokio_util::sync::CancellationToken;

    fn ctx(mock: MockTarget, retries: u32, shard: ShardSlot) -> Arc<LevelContext<MockTarget>> {
        let workload = Workload::new(WorkloadConfig {
            tenants: 5,
            sps: 2,
            users: 3,
            channels: vec!["login".into(), "registration".into()],
            layout: TopicLayout::PerTenantChannel,
            payload_bytes: None,
            seed: 9,
            distribution: Distribution::Uniform,
        });
        Arc::new(LevelContext {
            target: Arc::new(mock),
            workload: Arc::new(workload),
            clock: Clock::new(),
            retries,
            arrivals: Arrivals::Constant,
            slice: crate::engine::Slice {
                index: shard.index,
                count: shard.count,
            },
            cancel: CancellationToken::new(),
            live: Arc::new(Live::default()),
            attempts: None,
            level_load: Load::Closed { concurrency: 1 },
            level_workers: 1,
            open_model: false,
            late_after: crate::stats::LATE_SEND,
            attempt_timeout: Duration::from_secs(10),
            observer: None,
            own_topics: None,
            control: None,
        })
    }

    fn closed(concurrency: u32, requests: Option<u64>, duration: Option<Duration>) -> LevelSpec {
        LevelSpec {
            load: Load::Closed { concurrency },
            stop: Stop { duration, requests },
            warmup: Duration::ZERO,
            ramp_up: Duration::ZERO,
        }
    }

    #[tokio::test]
    async fn requests_n_gives_exactly_n_attempts_and_counts_match_the_target() {
        let script = vec![
            Outcome::Accepted,
            Outcome::Accepted,
            Outcome::Http503,
            Outcome::Denied,
        ];
        let c = ctx(
            MockTarget::new(script, Duration::from_micros(200)),
            0,
            ShardSlot::WHOLE,
        );
        let run = run_level(c.clone(), &closed(7, Some(1000), None), 0, 0).await;
        assert_eq!(run.stats.attempts(), 1000);
        assert_eq!(run.stats.events, 1000);
        assert_eq!(run.stats.counts, c.target.counts());
        assert_eq!(run.stats.counts.get(Class::Http503), 250);
        assert_eq!(run.stats.counts.get(Class::Denied), 250);
        assert_eq!(run.stats.topic_attempts, c.target.per_topic());
        assert_eq!(run.stats.latency.len(), 1000);
        // The live display reads the same stripes after the level: the same counts and p99.
        let (live_counts, live_p99) = c.live.snapshot();
        assert_eq!(live_counts, run.stats.counts);
        assert_eq!(live_p99, run.stats.latency.value_at_quantile(0.99));
        assert!(
            live_p99 >= 200,
            "each attempt takes at least 200 µs: {live_p99}"
        );
    }

    #[tokio::test]
    async fn retries_count_attempts_and_events_separately() {
        // Every attempt times out: each event is tried 1 + 2 times and fails.
        let script = vec![Outcome::Timeout(TimeoutKind::PoolWait)];
        let c = ctx(MockTarget::new(script, Duration::ZERO), 2, ShardSlot::WHOLE);
        let run = run_level(c.clone(), &closed(4, Some(100), None), 0, 0).await;
        assert_eq!(run.stats.events, 100);
        assert_eq!(run.stats.events_failed, 100);
        assert_eq!(run.stats.attempts(), 300);
        assert_eq!(run.stats.retries, 200);
        // A denial is not retried; a 503 followed by an accept is one successful event.
        let script = vec![Outcome::Http503, Outcome::Accepted];
        let c = ctx(MockTarget::new(script, Duration::ZERO), 2, ShardSlot::WHOLE);
        let run = run_level(c.clone(), &closed(1, Some(50), None), 0, 0).await;
        assert_eq!(
            (
                run.stats.events,
                run.stats.events_failed,
                run.stats.attempts()
            ),
            (50, 0, 100)
        );
    }

    /// A throttled answer with `Retry-After: 2` is retried 2 s later (paused time: the mock's
    /// arrivals are exact) when that is before the attempt's deadline; past it, not at all.
    #[tokio::test(start_paused = true)]
    async fn a_retry_waits_for_retry_after_within_the_attempt_deadline() {
        let script = vec![Outcome::Throttled, Outcome::Accepted];
        let mock = || MockTarget::new(script.clone(), Duration::ZERO).retry_after(2);
        // Whole seconds since `t0` of each attempt's arrival.
        let secs = |m: &MockTarget, t0: tokio::time::Instant| -> Vec<u64> {
            let at = m.arrivals();
            at.iter().map(|t| t.duration_since(t0).as_secs()).collect()
        };
        let c = ctx(mock(), 1, ShardSlot::WHOLE);
        let t0 = tokio::time::Instant::now();
        let run = run_level(c.clone(), &closed(1, Some(3), None), 0, 0).await;
        assert_eq!(secs(&c.target, t0), [0, 2, 2, 4, 4, 6]);
        let s = &run.stats;
        assert_eq!(
            (s.events, s.events_failed, s.attempts(), s.retries),
            (3, 0, 6, 3)
        );
        assert_eq!(s.counts.get(Class::Throttled), 3);
        // A 1 s timeout: the 2 s wait would pass the deadline, so the event ends throttled.
        let mut c = ctx(mock(), 1, ShardSlot::WHOLE);
        Arc::get_mut(&mut c).unwrap().attempt_timeout = Duration::from_secs(1);
        let t0 = tokio::time::Instant::now();
        let run = run_level(c.clone(), &closed(1, Some(3), None), 0, 0).await;
        assert_eq!(secs(&c.target, t0), [0, 0, 0]);
        let s = &run.stats;
        assert_eq!(
            (s.events, s.events_failed, s.attempts(), s.retries),
            (3, 2, 3, 0)
        );
        // Without the field a retry goes at once, as before.
        let c = ctx(MockTarget::new(script, Duration::ZERO), 1, ShardSlot::WHOLE);
        let t0 = tokio::time::Instant::now();
        let run = run_level(c.clone(), &closed(1, Some(3), None), 0, 0).await;
        assert_eq!(secs(&c.target, t0), [0; 6]);
        assert_eq!(run.stats.attempts(), 6);
    }

    #[tokio::test]
    async fn shards_together_send_exactly_the_single_process_events() {
        let single = ctx(
            MockTarget::new(vec![Outcome::Accepted], Duration::ZERO),
            0,
            ShardSlot::WHOLE,
        );
        let one = run_level(single.clone(), &closed(3, Some(500), None), 1, 500).await;
        let mut merged = LevelStats::default();
        for i in 0..3 {
            let c = ctx(
                MockTarget::new(vec![Outcome::Accepted], Duration::ZERO),
                0,
                ShardSlot { index: i, count: 3 },
            );
            merged += &run_level(c, &closed(2, Some(500), None), 1, 500)
                .await
                .stats;
        }
        assert_eq!(merged.attempts(), 500);
        assert_eq!(merged.topic_attempts, one.stats.topic_attempts);
        assert_eq!(merged.bytes_sent, one.stats.bytes_sent);
    }

    /// Owner striping (sharded runs with subscribers): each shard sends only its own topics'
    /// events, and together they send exactly the single process's, in both models.
    #[tokio::test(start_paused = true)]
    async fn owner_striped_shards_send_their_topics_and_together_the_single_run() {
        let one = ctx(
            MockTarget::new(vec![Outcome::Accepted], Duration::ZERO),
            0,
            ShardSlot::WHOLE,
        );
        let single = run_level(one, &closed(3, Some(600), None), 1, 600).await;
        let open = LevelSpec {
            load: Load::Open {
                rate: 200.0,
                max_inflight: 50,
            },
            ..closed(1, Some(300), None)
        };
        let one = ctx(
            MockTarget::new(vec![Outcome::Accepted], Duration::ZERO),
            0,
            ShardSlot::WHOLE,
        );
        let single_open = run_level(one, &open, 2, 1200).await;
        let (mut merged, mut merged_open) = (LevelStats::default(), LevelStats::default());
        for index in 0..3 {
            let shard = ShardSlot { index, count: 3 };
            let mk = || {
                let mut c = ctx(
                    MockTarget::new(vec![Outcome::Accepted], Duration::ZERO),
                    0,
                    shard,
                );
                let w = c.workload.clone();
                let mine: Vec<usize> = w
                    .topics()
                    .iter()
                    .filter(|t| shard.owns_tenant(t.tenant.unwrap()))
                    .map(|t| t.index)
                    .collect();
                Arc::get_mut(&mut c).unwrap().own_topics =
                    Some(crate::engine::OwnTopics::new(w, mine.clone()));
                (c, mine)
            };
            let (c, mine) = mk();
            let run = run_level(c, &closed(2, Some(600), None), 1, 600).await;
            let (c, _) = mk();
            let run_open = run_level(c, &open, 2, 1200).await;
            for r in [&run, &run_open] {
                let sent: Vec<usize> = (0..r.stats.topic_attempts.len())
                    .filter(|t| r.stats.topic_attempts[*t] > 0)
                    .collect();
                assert!(!sent.is_empty());
                assert!(
                    sent.iter().all(|t| mine.contains(t)),
                    "shard {index}: {sent:?}"
                );
            }
            merged += &run.stats;
            merged_open += &run_open.stats;
        }
        assert_eq!(merged.attempts(), 600);
        assert_eq!(merged.topic_attempts, single.stats.topic_attempts);
        assert_eq!(merged.bytes_sent, single.stats.bytes_sent);
        assert_eq!(merged_open.attempts(), 300);
        assert_eq!(merged_open.topic_attempts, single_open.stats.topic_attempts);
    }

    /// A shard that owns no topic (fewer tenants than shards) sends nothing and ends its
    /// levels, in both models, rather than searching the endless stream for an event of its own.
    #[tokio::test(start_paused = true)]
    async fn a_shard_without_topics_sends_nothing() {
        let open = LevelSpec {
            load: Load::Open {
                rate: 100.0,
                max_inflight: 4,
            },
            ..closed(1, None, Some(Duration::from_secs(1)))
        };
        for spec in [closed(2, None, Some(Duration::from_secs(1))), open] {
            let mut c = ctx(
                MockTarget::new(vec![Outcome::Accepted], Duration::ZERO),
                0,
                ShardSlot { index: 1, count: 2 },
            );
            let w = c.workload.clone();
            Arc::get_mut(&mut c).unwrap().own_topics = Some(crate::engine::OwnTopics::new(w, []));
            let run = run_level(c.clone(), &spec, 0, 0).await;
            assert_eq!((run.stats.attempts(), c.target.counts().total()), (0, 0));
        }
    }

    /// Paused time: every attempt takes exactly 20 ms, so the counts follow from the schedule.
    #[tokio::test(start_paused = true)]
    async fn duration_levels_stop_and_await_in_flight_attempts() {
        let c = ctx(
            MockTarget::new(vec![Outcome::Accepted], Duration::from_millis(20)),
            0,
            ShardSlot::WHOLE,
        );
        let spec = LevelSpec {
            warmup: Duration::from_millis(100),
            ..closed(4, None, Some(Duration::from_millis(310)))
        };
        let run = run_level(c.clone(), &spec, 0, 0).await;
        // Each of 4 workers: warm-up attempts start at 0, 20, …, 80 ms (5, sent, not recorded);
        // measured ones at 100, 120, …, 400 ms (16: the deadline is 410 ms, and the attempt
        // started at 400 ms is awaited until 420 ms and counted).
        assert_eq!(c.target.counts().total(), 4 * (5 + 16));
        assert_eq!(run.stats.attempts(), 4 * 16);
        assert_eq!(run.stats.events, 4 * 16);
        assert_eq!(run.elapsed, Duration::from_millis(320));
        assert!(!run.interrupted);
    }

    /// Paused time: cancelled at 102 ms, 5 ms attempts. Those started at 0, 5, …, 95 ms finish;
    /// the one each worker started at 100 ms is abandoned at 102 ms and counted `cancelled`,
    /// and none starts after it.
    #[tokio::test(start_paused = true)]
    async fn cancellation_stops_the_level() {
        let c = ctx(
            MockTarget::new(vec![Outcome::Accepted], Duration::from_millis(5)),
            0,
            ShardSlot::WHOLE,
        );
        let cancel = c.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(102)).await;
            cancel.cancel();
        });
        let run = run_level(
            c.clone(),
            &closed(2, None, Some(Duration::from_secs(60))),
            0,
            0,
        )
        .await;
        assert!(run.interrupted);
        assert_eq!(run.stats.counts.get(Class::Accepted), 2 * 20);
        assert_eq!(run.stats.counts.get(Class::Cancelled), 2);
        assert_eq!(run.stats.attempts(), 2 * 21);
        // The target completed only the finished ones.
        assert_eq!(c.target.counts().total(), 2 * 20);
        assert_eq!(run.elapsed, Duration::from_millis(102));
    }

    /// Four workers, ten requests, each attempt held until the test lets it go: the live
    /// in-flight figure is the attempts started and not ended, exactly, at every step.
    #[tokio::test]
    async fn live_inflight_is_the_attempts_started_and_not_ended() {
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let c = ctx(
            MockTarget::new(vec![Outcome::Accepted], Duration::ZERO).gated(gate.clone()),
            0,
            ShardSlot::WHOLE,
        );
        let live = c.live.clone();
        let level = tokio::spawn({
            let c = c.clone();
            async move { run_level(c, &closed(4, Some(10), None), 0, 0).await }
        });
        // (released so far, attempts ended, in flight): 10 requests over 4 workers.
        for (release, ended, inflight) in [(0, 0, 4), (3, 3, 4), (3, 6, 4), (2, 8, 2)] {
            gate.add_permits(release);
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            loop {
                let now = (live.snapshot().0.total(), live.inflight());
                if now == (ended, inflight) {
                    break;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "(ended, in flight) = {now:?}, want {:?}",
                    (ended, inflight)
                );
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        gate.add_permits(2);
        let run = level.await.unwrap();
        assert_eq!(run.stats.attempts(), 10);
        assert_eq!(live.inflight(), 0);
    }

    /// The open model at 2/s (one send every 500 ms), on one thread. The third send blocks
    /// that thread for 1.7 s (1.0 → 2.7 s), so the sends meant for 1.5, 2.0 and 2.5 s start
    /// at about 2.7 s: 1.2 s, 0.7 s and 0.2 s late. With 450 ms as "late", exactly two are;
    /// a wake-up would have to be 250 ms late to change that (at 20/s and 40 ms, margins of
    /// 20–30 ms, a machine with a load of 12 once counted a third).
    #[tokio::test]
    async fn open_model_counts_the_sends_that_started_late() {
        let mock = MockTarget::new(vec![Outcome::Accepted], Duration::ZERO)
            .stalling(2, Duration::from_millis(1700));
        let base = ctx(mock, 0, ShardSlot::WHOLE);
        let c = Arc::new(LevelContext {
            target: base.target.clone(),
            workload: base.workload.clone(),
            clock: base.clock,
            retries: 0,
            arrivals: Arrivals::Constant,
            slice: base.slice,
            cancel: CancellationToken::new(),
            live: Arc::new(Live::default()),
            attempts: None,
            level_load: Load::Open {
                rate: 2.0,
                max_inflight: 10,
            },
            level_workers: 10,
            open_model: true,
            late_after: Duration::from_millis(450),
            attempt_timeout: Duration::from_secs(10),
            observer: None,
            own_topics: None,
            control: None,
        });
        let spec = LevelSpec {
            load: Load::Open {
                rate: 2.0,
                max_inflight: 10,
            },
            stop: Stop {
                duration: None,
                requests: Some(10),
            },
            warmup: Duration::ZERO,
            ramp_up: Duration::ZERO,
        };
        let run = run_level(c, &spec, 0, 0).await;
        assert_eq!((run.stats.events, run.stats.dropped), (10, 0));
        assert_eq!(run.stats.late_sends, 2);
    }
}
