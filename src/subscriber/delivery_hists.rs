//! The delivery histograms of a level (end-to-end latencies and `Hub-Timing` stages), kept in
//! a few slots shared by the subscribers rather than one set per subscriber.

use std::sync::{Mutex, MutexGuard};

use crate::stats::{new_histogram, Histogram, ServerTimingStats, TopicStats};

/// Slots the subscribers share: subscriber `i` records into slot `i % SLOTS`. Enough that two
/// threads delivering to different subscribers rarely meet on one.
const SLOTS: usize = 4;

/// What a level's deliveries record besides counts: added up over every subscriber in the
/// report, so nothing is lost by sharing them.
#[derive(Debug)]
pub struct DeliveryHists {
    /// Publish start → received, µs.
    pub e2e_from_start: Histogram,
    /// Accepted → received, µs.
    pub e2e_from_accepted: Histogram,
    /// The hub's `Hub-Timing` stages of the deliveries counted delivered (`stages.rs`).
    pub stages: ServerTimingStats,
    /// With a surge: the quiet tenants' delivered events' latency (µs) by the second of the
    /// level each was sent in (the delivery isolation verdict's input).
    pub quiet_seconds: Vec<TopicStats>,
}

impl Default for DeliveryHists {
    fn default() -> Self {
        DeliveryHists {
            e2e_from_start: new_histogram(),
            e2e_from_accepted: new_histogram(),
            stages: ServerTimingStats::default(),
            quiet_seconds: Vec::new(),
        }
    }
}

/// Add `b` into `a` second by second.
pub fn add_seconds(a: &mut Vec<TopicStats>, b: &[TopicStats]) {
    if a.len() < b.len() {
        a.resize(b.len(), TopicStats::default());
    }
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

/// The level's delivery histograms in [`SLOTS`] slots.
///
/// Why not a set per subscriber (as before): each histogram grows to the largest latency it
/// has seen, so every subscriber's set widened on its own at each new worst delivery latency
/// (two end-to-end histograms and one per stage, up to ~112 KB each at 5 s): the largest heap
/// growth of a long level with subscribers once the publish side's was gone, and a cost that
/// grew with the subscribers (docs/soak.md).
#[derive(Debug)]
pub struct SharedHists {
    slots: Box<[Mutex<DeliveryHists>]>,
}

impl Default for SharedHists {
    fn default() -> Self {
        SharedHists {
            slots: (0..SLOTS).map(|_| Mutex::default()).collect(),
        }
    }
}

impl SharedHists {
    /// Subscriber `i`'s slot, locked (a poisoned lock still holds good counts).
    pub fn slot(&self, i: usize) -> MutexGuard<'_, DeliveryHists> {
        self.slots[i % SLOTS]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The level's publish start → received histogram so far (every slot's, added up).
    pub fn e2e_from_start_now(&self) -> Histogram {
        let mut all = new_histogram();
        for i in 0..SLOTS {
            // Same layout and auto-resize: adding cannot fail.
            let _ = all.add(&self.slot(i).e2e_from_start);
        }
        all
    }

    /// Every slot's histograms added up, and the slots emptied for the next level.
    pub fn take(&self) -> DeliveryHists {
        let mut all = DeliveryHists::default();
        for i in 0..SLOTS {
            let h = std::mem::take(&mut *self.slot(i));
            // Same layout and auto-resize: adding cannot fail.
            let _ = all.e2e_from_start.add(&h.e2e_from_start);
            let _ = all.e2e_from_accepted.add(&h.e2e_from_accepted);
            all.stages += &h.stages;
            add_seconds(&mut all.quiet_seconds, &h.quiet_seconds);
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::record;

    /// Subscribers spread over the slots give, taken, what one set recording all gives; the
    /// slots are empty afterwards.
    #[test]
    fn taken_slots_equal_one_recorder() {
        let shared = SharedHists::default();
        let mut one = DeliveryHists::default();
        for i in 0..50u64 {
            let (e2e, acc) = (100 + i * 977, 50 + i * 13);
            let mut h = shared.slot(i as usize);
            record(&mut h.e2e_from_start, e2e);
            record(&mut h.e2e_from_accepted, acc);
            h.stages
                .record_us(if i % 3 == 0 { "hub" } else { "queue" }, i);
            record(&mut one.e2e_from_start, e2e);
            record(&mut one.e2e_from_accepted, acc);
            one.stages
                .record_us(if i % 3 == 0 { "hub" } else { "queue" }, i);
        }
        let got = shared.take();
        assert_eq!(got.e2e_from_start, one.e2e_from_start);
        assert_eq!(got.e2e_from_accepted, one.e2e_from_accepted);
        assert_eq!(got.stages, one.stages);
        assert_eq!(got.e2e_from_start.len(), 50);
        assert!(shared.take().e2e_from_start.is_empty());
    }
}
