//! What every level of a run shares: the target, the workload, the clock and the knobs the
//! worker loop reads. Its own file so `level` (which builds it) and `worker` (which reads it)
//! both depend on it and not on each other.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::attempt::AttemptSender;
use super::live::Live;
use super::pacer::Arrivals;
use super::plan::Load;
use crate::shard_contract::ShardSlot;
use crate::stats::Clock;
use crate::subscriber::DeliveryTracker;
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
    /// This process's shard ([`ShardSlot::WHOLE`] when not sharded).
    pub shard: ShardSlot,
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
    /// With subscribers on: told of every measured publish and its acceptance.
    pub delivery: Option<Arc<DeliveryTracker>>,
    /// Sharded runs with subscribers: send only this shard's topics' events (owner striping).
    pub own_topics: Option<super::own_topics::OwnTopics>,
}

impl<T> std::fmt::Debug for LevelContext<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LevelContext")
            .field("retries", &self.retries)
            .field("shard", &self.shard)
            .finish_non_exhaustive()
    }
}
