//! What every level of a run shares: the target, the workload, the clock and the knobs the
//! worker loop reads. Its own file so `level` (which builds it) and `worker` (which reads it)
//! both depend on it and not on each other.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::attempt::AttemptSender;
use super::live::Live;
use super::observer::PublishObserver;
use super::pacer::Arrivals;
use super::plan::Load;
use crate::stats::Clock;
use crate::workload::Workload;

/// What every level of a run shares.
pub struct LevelContext<T> {
    /// Where the load goes.
    pub target: Arc<T>,
    /// Topics and the event generator.
    pub workload: Arc<Workload>,
    /// Maps instants to wall-clock µs.
    pub clock: Clock,
    /// Immediate retries after a retryable failure.
    pub retries: u32,
    /// Open model: inter-arrival law.
    pub arrivals: Arrivals,
    /// This process's share of every level's events ([`Slice::WHOLE`]: all of them).
    pub slice: Slice,
    /// Cancelled on Ctrl-C / SIGTERM: no new events, no more retries.
    pub cancel: CancellationToken,
    /// Live counts for the progress display.
    pub live: Arc<Live>,
    /// Receives every measured attempt (`--jtl`).
    pub attempts: Option<AttemptSender>,
    /// The load of the level being run (carried in each attempt record).
    pub level_load: Load,
    /// Workers in the level being run (carried in each attempt record).
    pub level_workers: u32,
    /// Open model: record latency from the intended start too.
    pub open_model: bool,
    /// Open model: a send that starts this long or longer after its intended time is counted
    /// late ([`LATE_SEND`](crate::stats::LATE_SEND) in a run; tests choose a coarser one).
    pub late_after: std::time::Duration,
    /// The client's `--timeout`, which bounds every attempt: sizes the recording stripes'
    /// latency histograms from the level's start (`stripe.rs`).
    pub attempt_timeout: std::time::Duration,
    /// Told of every measured publish and its acceptance (with subscribers on, their tracker).
    pub observer: Option<Arc<dyn PublishObserver>>,
    /// Sharded runs with subscribers: send only this shard's topics' events (owner striping).
    pub own_topics: Option<super::own_topics::OwnTopics>,
    /// `--web`: the run's steering (pause, end the level, change the load); `None` without.
    pub control: Option<Arc<super::control::Control>>,
}

/// Which share of every level's sequence numbers this process sends: every `count`-th, from
/// `index`. A sharded run sets it from its shard; the engine knows only the numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slice {
    /// Which of the `count` shares, from 0.
    pub index: u32,
    /// How many shares the events are split into.
    pub count: u32,
}

impl Slice {
    /// Every event: one share of one.
    pub const WHOLE: Slice = Slice { index: 0, count: 1 };
}

impl<T> std::fmt::Debug for LevelContext<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LevelContext")
            .field("retries", &self.retries)
            .field("slice", &self.slice)
            .finish_non_exhaustive()
    }
}
