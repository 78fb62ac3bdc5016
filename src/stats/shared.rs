//! What all workers of a level record into together, beside their own stripe: the per-topic
//! table (atomics) and the per-second histograms (a few slots). Memory per level, not per
//! stripe: see [`TopicTable`] and [`SecondsRecorder`].

use std::time::Instant;

use super::{AttemptSpan, Clock, LevelStats, SecondsRecorder, TopicTable};
use crate::result::Class;

/// The shared recorders of one level.
#[derive(Debug)]
pub struct SharedLevel {
    topics: TopicTable,
    seconds: SecondsRecorder,
}

impl SharedLevel {
    /// Recorders for a level of `topics` topics whose measured time starts at `level_start`,
    /// recorded into by workers on `threads` runtime threads.
    pub fn new(topics: usize, clock: &Clock, level_start: Instant, threads: usize) -> Self {
        SharedLevel {
            topics: TopicTable::new(topics),
            seconds: SecondsRecorder::new(clock, level_start, SecondsRecorder::slots_for(threads)),
        }
    }

    /// Record one attempt of topic index `topic` by worker `worker`; `t` counts its second
    /// from the `level_start` given to [`new`](Self::new).
    pub fn record(&self, worker: usize, t: &AttemptSpan, class: Class, topic: usize) {
        self.topics.record(topic, class, t.us);
        self.seconds.record_span(worker, t);
        super::soak_leak::per_attempt();
    }

    /// Put what was recorded into `stats` (the stripes' merge): per-topic counts and
    /// histograms, and the per-second histograms. Call once the workers are done.
    pub fn finish(&self, stats: &mut LevelStats) {
        stats.topics = self.topics.snapshot();
        stats.topic_attempts = stats.topics.iter().map(|t| t.counts.total()).collect();
        stats.topic_accepted = stats
            .topics
            .iter()
            .map(|t| t.counts.get(Class::Accepted))
            .collect();
        stats.seconds = self.seconds.finish();
    }
}
