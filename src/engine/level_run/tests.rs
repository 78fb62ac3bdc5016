//! The level runner against the mock target: boundaries, counts and pacing, exactly.

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
