//! Test support for the shard module: a seeded stream of synthetic events, an empty artifact to
//! build fixtures on, and a field-by-field equality check for [`LevelStats`] (which has no
//! `PartialEq`).

use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::result::{Attempt, ConnErrorKind, OtherReason, Outcome, TimeoutKind, TlsReason};
use crate::stats::{AttemptTimes, Clock, Histogram, LevelStats, SecondsRecorder};

/// One synthetic event: its topic and its attempts as (offset from level start µs, latency µs, outcome).
#[derive(Debug, Clone)]
pub struct SimEvent {
    pub topic: usize,
    pub attempts: Vec<(u64, u64, Outcome)>,
}

/// `n` events from `seed`: mostly accepted, every failure class represented, some retried,
/// latencies spread from 1 µs to ~10 s so the histograms resize.
pub fn random_events(seed: u64, n: usize) -> Vec<SimEvent> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let outcomes = [
        Outcome::Denied,
        Outcome::Http4xx(404),
        Outcome::Http502,
        Outcome::Http503,
        Outcome::Http504,
        Outcome::Http5xx(500),
        Outcome::Timeout(TimeoutKind::Connect),
        Outcome::Timeout(TimeoutKind::PoolWait),
        Outcome::Timeout(TimeoutKind::Response),
        Outcome::ConnError(ConnErrorKind::Reset),
        Outcome::Other(OtherReason::BadChunk),
        Outcome::TlsError(TlsReason::UnknownIssuer),
    ];
    (0..n)
        .map(|_| {
            let mut at = rng.gen_range(0..5_000_000u64);
            let tries = rng.gen_range(1..=3usize);
            let attempts = (0..tries)
                .map(|_| {
                    let lat = match rng.gen_range(0..10) {
                        0 => rng.gen_range(1..100),
                        1 => rng.gen_range(1_000_000..10_000_000),
                        _ => rng.gen_range(100..50_000),
                    };
                    let o = if rng.gen_bool(0.6) {
                        Outcome::Accepted
                    } else {
                        outcomes[rng.gen_range(0..outcomes.len())]
                    };
                    let a = (at, lat, o);
                    at += lat;
                    a
                })
                .collect();
            SimEvent {
                topic: rng.gen_range(0..40),
                attempts,
            }
        })
        .collect()
}

/// The times of an attempt `off` µs after the clock's anchor, taking `lat` µs.
fn times(clock: &Clock, off: u64, lat: u64) -> AttemptTimes {
    let t0 = clock.anchor();
    let start = t0 + Duration::from_micros(off);
    AttemptTimes {
        level_start: t0,
        intended: Some(start - Duration::from_micros(off % 7)),
        start,
        end: start + Duration::from_micros(lat),
    }
}

/// Record `e` (its attempts, then the event) into `s`, with times relative to the clock's anchor.
pub fn record(s: &mut LevelStats, clock: &Clock, e: &SimEvent) {
    let t0 = clock.anchor();
    for &(off, lat, outcome) in &e.attempts {
        let t = times(clock, off, lat);
        let a = Attempt {
            server_timing: crate::result::ServerTimings::NONE,
            retry_after: crate::result::RetryAfter::NONE,
            outcome,
            status: outcome.status().unwrap_or(200),
            bytes_sent: 500 + off % 100,
            bytes_received: 80,
        };
        s.record_attempt(clock, t, &a, e.topic);
    }
    let (first, _, _) = e.attempts[0];
    let &(last, lat, o) = e.attempts.last().expect("an event has an attempt");
    s.record_event(
        t0 + Duration::from_micros(first),
        t0 + Duration::from_micros(last + lat),
        e.attempts.len() as u32,
        o == Outcome::Accepted,
    );
}

/// A level with `n` random events recorded, per-second histograms included.
pub fn random_level(seed: u64, n: usize) -> LevelStats {
    let clock = Clock::new();
    let mut s = LevelStats::default();
    let seconds = SecondsRecorder::new(&clock, clock.anchor(), 2);
    let mut ends = Vec::new();
    for e in random_events(seed, n) {
        record(&mut s, &clock, &e);
        ends.extend(
            e.attempts
                .iter()
                .map(|&(off, lat, _)| (off + lat, off, lat)),
        );
    }
    // In end order, as a level records them (out-of-order seconds are exact but slow).
    ends.sort_unstable();
    for (i, (_, off, lat)) in ends.into_iter().enumerate() {
        seconds.record(i, &times(&clock, off, lat));
    }
    s.seconds = seconds.finish().0;
    s.record_drop();
    s
}

/// The recorded (value, count) pairs and layout: what equality of histograms means here,
/// independent of how far each one's counts array happens to have grown.
fn hist_key(h: &Histogram) -> (u64, u8, u64, u64, u64, Vec<(u64, u64)>) {
    let v = h
        .iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect();
    (h.low(), h.sigfig(), h.len(), h.min_nz(), h.max(), v)
}

/// Assert every field of `a` equals the same field of `b`.
pub fn assert_level_eq(a: &LevelStats, b: &LevelStats) {
    assert_eq!(hist_key(&a.latency), hist_key(&b.latency), "latency");
    assert_eq!(hist_key(&a.corrected), hist_key(&b.corrected), "corrected");
    assert_eq!(
        hist_key(&a.accepted_latency),
        hist_key(&b.accepted_latency),
        "accepted_latency"
    );
    assert_eq!(
        hist_key(&a.event_latency),
        hist_key(&b.event_latency),
        "event_latency"
    );
    assert_eq!(a.counts, b.counts, "counts");
    assert_eq!(a.reasons, b.reasons, "reasons");
    assert_eq!(a.status_codes, b.status_codes, "status_codes");
    assert_eq!(a.events, b.events, "events");
    assert_eq!(a.events_failed, b.events_failed, "events_failed");
    assert_eq!(a.retries, b.retries, "retries");
    assert_eq!(a.dropped, b.dropped, "dropped");
    assert_eq!(a.late_sends, b.late_sends, "late_sends");
    assert_eq!(a.bytes_sent, b.bytes_sent, "bytes_sent");
    assert_eq!(a.bytes_received, b.bytes_received, "bytes_received");
    assert_eq!(a.sum_us, b.sum_us, "sum_us");
    assert_eq!(a.min_us, b.min_us, "min_us");
    assert_eq!(a.max_us, b.max_us, "max_us");
    assert_eq!(a.first_start_us, b.first_start_us, "first_start_us");
    assert_eq!(a.last_end_us, b.last_end_us, "last_end_us");
    assert_eq!(a.topic_attempts, b.topic_attempts, "topic_attempts");
    assert_eq!(a.topic_accepted, b.topic_accepted, "topic_accepted");
    assert_eq!(a.topics, b.topics, "topics");
    assert_eq!(a.timeline, b.timeline, "timeline");
    assert_eq!(a.seconds, b.seconds, "seconds");
}

/// A websub, closed-model artifact of `spec` against `hub_url` with nothing in it: fixtures
/// set what they test with `..empty_artifact(..)`, so a field added later needs no edit here.
pub fn empty_artifact(
    spec: &crate::shard_contract::ShardSpec,
    hub_url: &str,
) -> super::ShardArtifact {
    super::ShardArtifact {
        meta: super::artifact::ShardMeta::new(
            spec,
            crate::kind::TargetKind::Websub,
            hub_url,
            crate::kind::Model::Closed,
        ),
        partial: false,
        config: serde_json::Value::Null,
        topics: vec![],
        registration: None,
        levels: vec![],
        servicebus: None,
        topic_tenants: vec![],
        subscription: None,
        unsubscription: None,
    }
}
