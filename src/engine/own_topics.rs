//! Owner striping: in a sharded run with subscribers, a shard sends only the events of the topics it owns.
//!
//! Every shard walks the whole level's sequence numbers (and, in the open model, the whole
//! schedule) and keeps those whose topic it owns, so the shards together send exactly the
//! events one process would, each event by the shard that subscribes to its topic
//! (docs/delivery.md, "Sharded runs").

use std::sync::Arc;

use crate::workload::Workload;

/// Which events this shard sends: those of its own topics.
#[derive(Clone)]
pub struct OwnTopics {
    workload: Arc<Workload>,
    /// By workload topic index: owned by this shard.
    mine: Arc<[bool]>,
}

impl std::fmt::Debug for OwnTopics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let owned = self.mine.iter().filter(|m| **m).count();
        write!(f, "OwnTopics({owned} of {})", self.mine.len())
    }
}

impl OwnTopics {
    /// The topics with these workload indices are this shard's.
    pub fn new(workload: Arc<Workload>, owned: impl IntoIterator<Item = usize>) -> Self {
        let mut mine = vec![false; workload.topics().len()];
        for i in owned {
            if let Some(m) = mine.get_mut(i) {
                *m = true;
            }
        }
        OwnTopics {
            workload,
            mine: mine.into(),
        }
    }

    /// Whether this shard owns any topic (one that owns none sends nothing).
    pub fn owns_any(&self) -> bool {
        self.mine.contains(&true)
    }

    /// Whether this shard sends event `seq`.
    pub fn keeps(&self, seq: u64) -> bool {
        self.mine
            .get(self.workload.topic_of_seq(seq))
            .copied()
            .unwrap_or(false)
    }
}

/// Whether a shard with `own` (or every event, without) sends `seq`.
pub(crate) fn kept(own: Option<&OwnTopics>, seq: u64) -> bool {
    own.is_none_or(|o| o.keeps(seq))
}
