//! What all workers of a level record into together, beside their own stripe: the per-topic
//! table (atomics), and the per-second histograms, the timeline and the `Server-Timing`
//! durations (a few slots). Memory per level, not per stripe: see [`TopicTable`] and
//! [`SecondsRecorder`].

use std::time::Instant;

use super::{AttemptSpan, Clock, LevelStats, SecondsRecorder, TopicTable, Writers};
use crate::result::{Class, ServerTimings};

/// The shared recorders of one level.
#[derive(Debug)]
pub struct SharedLevel {
    topics: TopicTable,
    seconds: SecondsRecorder,
    /// `--surge`: the quiet tenants' attempts per second (a table row per second).
    quiet: Option<Quiet>,
    writers: Writers,
}

/// The quiet tenants' seconds: which topics are theirs, and a row per second.
#[derive(Debug)]
struct Quiet {
    topics: Vec<bool>,
    seconds: TopicTable,
    len: usize,
}

impl SharedLevel {
    /// Recorders for a level of `topics` topics whose measured time starts at `level_start`,
    /// recorded into by workers on `threads` runtime threads, as `writers` says.
    pub fn new(
        topics: usize,
        clock: &Clock,
        level_start: Instant,
        threads: usize,
        writers: Writers,
    ) -> Self {
        SharedLevel {
            topics: TopicTable::new(topics, writers),
            seconds: SecondsRecorder::new(clock, level_start, SecondsRecorder::slots_for(threads)),
            quiet: None,
            writers,
        }
    }

    /// Also record, per second, the attempts of the topics `quiet[i]` marks (the quiet
    /// tenants' of a surge), in `secs` seconds (later ones in the last): 1 KB a second.
    pub fn with_quiet(mut self, quiet: Vec<bool>, secs: usize) -> Self {
        let len = secs.max(1);
        self.quiet = Some(Quiet {
            topics: quiet,
            seconds: TopicTable::new(len, self.writers),
            len,
        });
        self
    }

    /// Record one attempt of topic index `topic` by worker `worker`; `t` counts its second
    /// from the `level_start` given to [`new`](Self::new); `server_timing`: what its response
    /// declared.
    pub fn record(
        &self,
        worker: usize,
        t: &AttemptSpan,
        class: Class,
        topic: usize,
        server_timing: &ServerTimings,
    ) {
        self.topics.record(topic, class, t.us);
        if let Some(q) = self
            .quiet
            .as_ref()
            .filter(|q| q.topics.get(topic) == Some(&true))
        {
            q.seconds.record(t.sec.min(q.len - 1), class, t.us);
        }
        self.seconds
            .record_span(worker, t, class.is_error(), server_timing);
        super::soak_leak::per_attempt();
    }

    /// Put what was recorded into `stats` (the stripes' merge): per-topic counts and
    /// histograms, the per-second histograms, the timeline and the `Server-Timing`
    /// durations. Call once the workers are done.
    pub fn finish(&self, stats: &mut LevelStats) {
        stats.set_topics(self.topics.snapshot());
        (stats.seconds, stats.timeline) = self.seconds.finish();
        if let Some(q) = &self.quiet {
            stats.quiet_seconds = q.seconds.snapshot();
        }
        stats.server_timing += &self.seconds.take_server_timing();
    }
}
