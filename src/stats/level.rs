//! `LevelStats`: everything measured in one level, recorded worker-locally and merged with `+=`.

use std::collections::BTreeMap;
use std::ops::AddAssign;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{
    new_histogram, record, AttemptSpan, AttemptTimes, Clock, Counts, Histogram, Reasons,
    SecondHistograms, ServerTimingStats, TopicStats,
};
use crate::result::{Attempt, Class};

/// How far past its intended time an open-model send may start before it counts as late: the
/// scheduling granularity the generator's own ticker is judged at (`observe/monitor.rs`).
pub const LATE_SEND: std::time::Duration = std::time::Duration::from_millis(1);

/// One second of a level: enough for a latency-over-time chart, and mergeable.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct TimelineBucket {
    /// Attempts that ended in this second.
    pub count: u64,
    /// Of those, the ones not accepted.
    pub errors: u64,
    /// Sum of their latencies, µs.
    pub sum_us: u64,
    /// Largest latency, µs.
    pub max_us: u64,
}

impl TimelineBucket {
    /// Count one attempt of latency `us` µs, an error or not.
    pub fn record(&mut self, us: u64, error: bool) {
        self.count += 1;
        self.errors += u64::from(error);
        self.sum_us += us;
        self.max_us = self.max_us.max(us);
    }

    /// Whether no attempt was counted.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The bucket as 32 bytes (four little-endian u64s), as a level's spill file keeps it.
    pub(super) fn to_bytes(self) -> [u8; 32] {
        let mut out = [0u8; 32];
        for (i, v) in [self.count, self.errors, self.sum_us, self.max_us]
            .into_iter()
            .enumerate()
        {
            out[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        out
    }

    /// The bucket [`to_bytes`](Self::to_bytes) gave.
    pub(super) fn from_bytes(b: &[u8; 32]) -> Self {
        let at = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        TimelineBucket {
            count: at(0),
            errors: at(1),
            sum_us: at(2),
            max_us: at(3),
        }
    }
}

impl AddAssign<&TimelineBucket> for TimelineBucket {
    fn add_assign(&mut self, b: &TimelineBucket) {
        self.count += b.count;
        self.errors += b.errors;
        self.sum_us += b.sum_us;
        self.max_us = self.max_us.max(b.max_us);
    }
}

/// Everything measured in one level. Plain data: no IO, no locks; workers each own one and
/// the driver merges them with `+=`. Memory is bounded by the number of topics and seconds,
/// never by the number of requests.
///
/// It serializes itself (a shard artifact's `levels[].stats`): counters as they are, classes
/// and reasons by name, histograms in the HdrHistogram interchange encoding
/// ([`hist_serde`](super::hist_serde)), topics sparsely; reading it back is exact. A level
/// of summary.json holds it too (`levels[].stats`), without its per-topic vectors.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LevelStats {
    /// Latency of every attempt, actual start → end, µs.
    #[serde(with = "super::hist_serde")]
    #[schemars(with = "String")]
    pub latency: Histogram,
    /// Latency of every attempt from its *intended* start (open model; equals `latency` in the closed model), µs.
    #[serde(with = "super::hist_serde")]
    #[schemars(with = "String")]
    pub corrected: Histogram,
    /// Latency of accepted attempts only, µs.
    #[serde(with = "super::hist_serde")]
    #[schemars(with = "String")]
    pub accepted_latency: Histogram,
    /// Latency of whole events (first attempt's start → last attempt's end, retries included), µs.
    #[serde(with = "super::hist_serde")]
    #[schemars(with = "String")]
    pub event_latency: Histogram,
    /// Attempts per outcome class.
    pub counts: Counts,
    /// Attempts per reason, for the classes that carry one.
    #[serde(default, skip_serializing_if = "Reasons::is_empty")]
    pub reasons: Reasons,
    /// Attempts per HTTP status code for every non-2xx status seen.
    pub status_codes: BTreeMap<u16, u64>,
    /// Events (an event is one or more attempts).
    pub events: u64,
    /// Events whose every attempt failed.
    pub events_failed: u64,
    /// Attempts that were retries of an earlier failed attempt.
    pub retries: u64,
    /// Scheduled sends skipped because the in-flight bound was reached (open model).
    pub dropped: u64,
    /// Open model: measured events whose first attempt started [`LATE_SEND`] or more after
    /// its intended time (the generator, or its in-flight bound, held it back).
    #[serde(default)]
    pub late_sends: u64,
    /// Request bytes written (request line, headers, body).
    pub bytes_sent: u64,
    /// Response bytes read (status line, headers, body).
    pub bytes_received: u64,
    /// Exact sum of attempt latencies, µs (for an exact average).
    pub sum_us: u64,
    /// Exact smallest attempt latency, µs.
    pub min_us: Option<u64>,
    /// Exact largest attempt latency, µs.
    pub max_us: Option<u64>,
    /// Earliest attempt start, µs since the Unix epoch.
    pub first_start_us: Option<u64>,
    /// Latest attempt end, µs since the Unix epoch.
    pub last_end_us: Option<u64>,
    /// Attempts per topic index.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topic_attempts: Vec<u64>,
    /// Accepted attempts per topic index.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topic_accepted: Vec<u64>,
    /// Outcome counts and a compact latency histogram per topic index (grown on first use).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<serde_json::Value>")]
    pub topics: Vec<TopicStats>,
    /// One bucket per second since the level started (in the engine, kept once per level by
    /// its [`SharedLevel`](super::SharedLevel), not by the stripes).
    pub timeline: Vec<TimelineBucket>,
    /// Latency histograms per second since the level started, encoded (recorded by the
    /// level's [`SecondsRecorder`](super::SecondsRecorder), not by `record_attempt`).
    #[serde(
        default,
        skip_serializing_if = "SecondHistograms::is_empty",
        deserialize_with = "checked_seconds"
    )]
    pub seconds: SecondHistograms,
    /// What the responses declared in `Server-Timing`, per metric name.
    #[serde(default, skip_serializing_if = "ServerTimingStats::is_empty")]
    #[schemars(with = "Option<serde_json::Value>")]
    pub server_timing: ServerTimingStats,
    /// `--surge`: the quiet tenants' attempts per second since the level started (counts and
    /// a compact histogram each; empty without a surge), for the isolation verdict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<serde_json::Value>")]
    pub quiet_seconds: Vec<TopicStats>,
}

/// Per-second histograms read back only when every one decodes in hubload's layout (they
/// are added encoded, so a bad one would surface only later, at a merge).
fn checked_seconds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<SecondHistograms, D::Error> {
    let s = SecondHistograms::deserialize(d)?;
    s.validate().map_err(serde::de::Error::custom)?;
    Ok(s)
}

impl Default for LevelStats {
    fn default() -> Self {
        LevelStats {
            latency: new_histogram(),
            corrected: new_histogram(),
            accepted_latency: new_histogram(),
            event_latency: new_histogram(),
            counts: Counts::default(),
            reasons: Reasons::default(),
            status_codes: BTreeMap::new(),
            events: 0,
            events_failed: 0,
            retries: 0,
            dropped: 0,
            late_sends: 0,
            bytes_sent: 0,
            bytes_received: 0,
            sum_us: 0,
            min_us: None,
            max_us: None,
            first_start_us: None,
            last_end_us: None,
            topic_attempts: Vec::new(),
            topic_accepted: Vec::new(),
            topics: Vec::new(),
            timeline: Vec::new(),
            seconds: SecondHistograms::default(),
            server_timing: ServerTimingStats::default(),
            quiet_seconds: Vec::new(),
        }
    }
}

impl LevelStats {
    /// Attempts recorded.
    pub fn attempts(&self) -> u64 {
        self.counts.total()
    }

    /// Record one attempt against topic index `topic`.
    pub fn record_attempt(&mut self, clock: &Clock, t: AttemptTimes, a: &Attempt, topic: usize) {
        self.record_attempt_without_topic(clock, t, a);
        let us = t.end.saturating_duration_since(t.start).as_micros() as u64;
        let class = a.outcome.class();
        if self.topic_attempts.len() <= topic {
            self.topic_attempts.resize(topic + 1, 0);
            self.topic_accepted.resize(topic + 1, 0);
        }
        self.topic_attempts[topic] += 1;
        if self.topics.len() <= topic {
            self.topics.resize_with(topic + 1, TopicStats::default);
        }
        self.topics[topic].record(class, us);
        if class == Class::Accepted {
            self.topic_accepted[topic] += 1;
        }
    }

    /// Record one attempt, except for its topic: the engine's stripes, whose level records
    /// topics once for all stripes ([`SharedLevel`](super::SharedLevel)).
    pub fn record_attempt_without_topic(&mut self, clock: &Clock, t: AttemptTimes, a: &Attempt) {
        self.record_span(&t.span(clock), a);
    }

    /// [`record_attempt_without_topic`](Self::record_attempt_without_topic) from the
    /// attempt's [`AttemptSpan`], worked out once for every recorder.
    pub fn record_span(&mut self, t: &AttemptSpan, a: &Attempt) {
        self.record_span_striped(t, a);
        if !a.server_timing.is_empty() {
            self.server_timing.record(&a.server_timing);
        }
        if self.timeline.len() <= t.sec {
            self.timeline.resize(t.sec + 1, TimelineBucket::default());
        }
        self.timeline[t.sec].record(t.us, a.outcome.class().is_error());
        if a.outcome.class() == Class::Accepted {
            record(&mut self.accepted_latency, t.us);
        }
    }

    /// [`record_span`](Self::record_span) without `accepted_latency`, `timeline` and
    /// `server_timing`, for a recorder that derives the first (the engine's stripes:
    /// `engine/stripe.rs`) and whose level keeps the other two once for all its stripes
    /// ([`SharedLevel`](super::SharedLevel)): kept per stripe, they were most of what a long
    /// level's memory grew by (docs/soak.md).
    pub fn record_span_striped(&mut self, t: &AttemptSpan, a: &Attempt) {
        let us = t.us;
        let class = a.outcome.class();
        self.counts.bump(class);
        if let Some(reason) = a.outcome.reason() {
            self.reasons.add(reason, 1);
        }
        // `auto(true)` makes record infallible for any u64; saturate just in case.
        record(&mut self.latency, us);
        if let Some(corrected) = t.corrected_us {
            record(&mut self.corrected, corrected);
        }
        if let Some(code) = a.outcome.status() {
            *self.status_codes.entry(code).or_insert(0) += 1;
        }
        self.bytes_sent += a.bytes_sent;
        self.bytes_received += a.bytes_received;
        self.sum_us += us;
        self.min_us = Some(self.min_us.map_or(us, |m| m.min(us)));
        self.max_us = Some(self.max_us.map_or(us, |m| m.max(us)));
        let (s, e) = (t.start_unix_us, t.end_unix_us);
        self.first_start_us = Some(self.first_start_us.map_or(s, |m| m.min(s)));
        self.last_end_us = Some(self.last_end_us.map_or(e, |m| m.max(e)));
    }

    /// Record one finished event: `attempts` attempts from `first_start` to `end`, `ok` if one was accepted.
    pub fn record_event(&mut self, first_start: Instant, end: Instant, attempts: u32, ok: bool) {
        let us = end.saturating_duration_since(first_start).as_micros() as u64;
        self.record_event_us(us, attempts, ok);
    }

    /// [`record_event`](Self::record_event) from the event's latency, µs.
    pub fn record_event_us(&mut self, us: u64, attempts: u32, ok: bool) {
        self.count_event(attempts, ok);
        record(&mut self.event_latency, us);
    }

    /// [`record_event_us`](Self::record_event_us) without `event_latency`, for a recorder
    /// that derives it (the engine's stripes).
    pub fn count_event(&mut self, attempts: u32, ok: bool) {
        self.events += 1;
        self.events_failed += u64::from(!ok);
        self.retries += u64::from(attempts.saturating_sub(1));
    }

    /// Record a scheduled send that was skipped because the generator was saturated.
    pub fn record_drop(&mut self) {
        self.dropped += 1;
    }

    /// Set the per-topic statistics and the attempt and accepted counts read from them.
    pub fn set_topics(&mut self, topics: Vec<TopicStats>) {
        self.topic_attempts = topics.iter().map(|t| t.counts.total()).collect();
        self.topic_accepted = topics
            .iter()
            .map(|t| t.counts.get(Class::Accepted))
            .collect();
        self.topics = topics;
    }

    /// Take the per-topic statistics out, leaving the level's own (the per-topic vectors
    /// empty): what summary.json holds of a level, whose topics live in `topics.jsonl`.
    pub fn take_topics(&mut self) -> Vec<TopicStats> {
        self.topic_attempts = Vec::new();
        self.topic_accepted = Vec::new();
        std::mem::take(&mut self.topics)
    }

    /// Span from the first start to the last end, in seconds (0 when nothing was recorded).
    pub fn span_secs(&self) -> f64 {
        match (self.first_start_us, self.last_end_us) {
            (Some(s), Some(e)) if e > s => (e - s) as f64 / 1e6,
            _ => 0.0,
        }
    }
}

fn merge_opt(a: &mut Option<u64>, b: Option<u64>, f: fn(u64, u64) -> u64) {
    *a = match (*a, b) {
        (Some(x), Some(y)) => Some(f(x, y)),
        (x, None) => x,
        (None, y) => y,
    };
}

fn add_vec(a: &mut Vec<u64>, b: &[u64]) {
    if a.len() < b.len() {
        a.resize(b.len(), 0);
    }
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

impl AddAssign<&LevelStats> for LevelStats {
    fn add_assign(&mut self, rhs: &LevelStats) {
        self.add_all_but_seconds(rhs);
        self.seconds += &rhs.seconds;
        if self.quiet_seconds.len() < rhs.quiet_seconds.len() {
            self.quiet_seconds
                .resize_with(rhs.quiet_seconds.len(), TopicStats::default);
        }
        for (a, b) in self.quiet_seconds.iter_mut().zip(&rhs.quiet_seconds) {
            *a += b;
        }
    }
}

impl LevelStats {
    /// `+=` without the per-second histograms: for a run's TOTAL, where seconds of different
    /// levels do not belong together.
    pub fn add_all_but_seconds(&mut self, rhs: &LevelStats) {
        // Same layout everywhere, so `add` cannot fail on bounds; auto-resize covers ranges.
        self.latency
            .add(&rhs.latency)
            .expect("same histogram layout");
        self.corrected
            .add(&rhs.corrected)
            .expect("same histogram layout");
        self.accepted_latency
            .add(&rhs.accepted_latency)
            .expect("same histogram layout");
        self.event_latency
            .add(&rhs.event_latency)
            .expect("same histogram layout");
        self.counts += &rhs.counts;
        self.reasons += &rhs.reasons;
        for (k, v) in &rhs.status_codes {
            *self.status_codes.entry(*k).or_insert(0) += v;
        }
        self.events += rhs.events;
        self.events_failed += rhs.events_failed;
        self.retries += rhs.retries;
        self.dropped += rhs.dropped;
        self.late_sends += rhs.late_sends;
        self.bytes_sent += rhs.bytes_sent;
        self.bytes_received += rhs.bytes_received;
        self.sum_us += rhs.sum_us;
        merge_opt(&mut self.min_us, rhs.min_us, u64::min);
        merge_opt(&mut self.max_us, rhs.max_us, u64::max);
        merge_opt(&mut self.first_start_us, rhs.first_start_us, u64::min);
        merge_opt(&mut self.last_end_us, rhs.last_end_us, u64::max);
        self.server_timing += &rhs.server_timing;
        add_vec(&mut self.topic_attempts, &rhs.topic_attempts);
        add_vec(&mut self.topic_accepted, &rhs.topic_accepted);
        if self.topics.len() < rhs.topics.len() {
            self.topics
                .resize_with(rhs.topics.len(), TopicStats::default);
        }
        for (a, b) in self.topics.iter_mut().zip(&rhs.topics) {
            *a += b;
        }
        if self.timeline.len() < rhs.timeline.len() {
            self.timeline
                .resize(rhs.timeline.len(), TimelineBucket::default());
        }
        for (a, b) in self.timeline.iter_mut().zip(&rhs.timeline) {
            *a += b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{Outcome, TimeoutKind};
    use std::time::Duration;

    fn attempt(outcome: Outcome) -> Attempt {
        Attempt {
            server_timing: crate::result::ServerTimings::NONE,
            retry_after: crate::result::RetryAfter::NONE,
            outcome,
            status: 0,
            bytes_sent: 100,
            bytes_received: 20,
        }
    }

    #[test]
    fn merge_equals_single_recorder() {
        let clock = Clock::new();
        let t0 = clock.anchor();
        let mut single = LevelStats::default();
        let mut parts = [LevelStats::default(), LevelStats::default()];
        for i in 0..1000u64 {
            let start = t0 + Duration::from_micros(i * 37);
            let end = start + Duration::from_micros(100 + (i * 7919) % 50_000);
            let o = match i % 5 {
                0 => Outcome::Http503,
                1 => Outcome::Timeout(TimeoutKind::PoolWait),
                _ => Outcome::Accepted,
            };
            let t = AttemptTimes {
                level_start: t0,
                intended: Some(start),
                start,
                end,
            };
            single.record_attempt(&clock, t, &attempt(o), (i % 7) as usize);
            parts[(i % 2) as usize].record_attempt(&clock, t, &attempt(o), (i % 7) as usize);
        }
        let mut merged = LevelStats::default();
        for p in &parts {
            merged += p;
        }
        assert_eq!(merged.latency, single.latency);
        assert_eq!(merged.counts, single.counts);
        assert_eq!(merged.min_us, single.min_us);
        assert_eq!(merged.max_us, single.max_us);
        assert_eq!(merged.first_start_us, single.first_start_us);
        assert_eq!(merged.last_end_us, single.last_end_us);
        assert_eq!(merged.topic_attempts, single.topic_attempts);
        assert_eq!(merged.topics, single.topics);
        assert_eq!(merged.topics.len(), 7);
        let per_topic: u64 = merged.topics.iter().map(|t| t.counts.total()).sum();
        assert_eq!(per_topic, 1000);
        assert_eq!(merged.timeline, single.timeline);
        assert_eq!(merged.status_codes, single.status_codes);
        assert_eq!(merged.counts.get(Class::Http503), 200);
        assert_eq!(merged.status_codes[&503], 200);
    }
}
