//! What the publisher tells the fleet: which events were sent and accepted, and when.
//!
//! Hot-path cheap and lock-free: a ring indexed by `seq` holds the send and accepted instants
//! (sized by what can be in flight plus the grace window), and two atomic bitmaps hold which
//! sequence numbers of the level were published and accepted. A slot is overwritten by the
//! sequence number `capacity` later; a reader then sees a different `seq` and falls back to
//! the send time carried in the body.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

use super::bitmap::AtomicBitmap;

#[derive(Debug, Default)]
struct Slot {
    /// `seq + 1` of the event in the slot; 0 = empty.
    seq1: AtomicU64,
    /// Send instant, ns since the tracker's anchor.
    sent_ns: AtomicU64,
    /// Accepted-answer instant, ns since the anchor; 0 = not (yet) accepted.
    accepted_ns: AtomicU64,
    topic: AtomicU32,
}

/// The send-side facts of one event, as far as the ring still holds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SentEvent {
    /// Topic index.
    pub topic: usize,
    /// Send instant, ns since the tracker's anchor.
    pub sent_ns: u64,
    /// Accepted instant, ns since the anchor, once known.
    pub accepted_ns: Option<u64>,
}

/// The publisher's side of delivery checking. Share it (`&self` only) with every worker.
#[derive(Debug)]
pub struct DeliveryTracker {
    anchor: Instant,
    slots: Box<[Slot]>,
    mask: u64,
    published: AtomicBitmap,
    accepted: AtomicBitmap,
}

impl DeliveryTracker {
    /// A tracker whose ring holds at least `capacity` events (rounded up to a power of two).
    pub fn new(capacity: usize) -> Self {
        let n = capacity.max(2).next_power_of_two();
        DeliveryTracker {
            anchor: Instant::now(),
            slots: (0..n).map(|_| Slot::default()).collect(),
            mask: n as u64 - 1,
            published: AtomicBitmap::default(),
            accepted: AtomicBitmap::default(),
        }
    }

    /// ns since the anchor (0 for instants before it).
    pub fn ns(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.anchor).as_nanos() as u64
    }

    /// Start a level whose sequence numbers are `first_seq` and above. Between levels only:
    /// no publish may be in flight.
    pub fn open_level(&self, first_seq: u64) {
        self.published.reset(first_seq);
        self.accepted.reset(first_seq);
    }

    /// Event `seq` of `topic` is about to be sent (its first attempt starts at `sent`).
    /// Call it before the request is written, so no delivery can come first.
    pub fn note_published(&self, seq: u64, topic: usize, sent: Instant) {
        let s = &self.slots[(seq & self.mask) as usize];
        s.seq1.store(0, Ordering::Release);
        s.sent_ns.store(self.ns(sent).max(1), Ordering::Relaxed);
        s.accepted_ns.store(0, Ordering::Relaxed);
        s.topic.store(topic as u32, Ordering::Relaxed);
        s.seq1.store(seq + 1, Ordering::Release);
        self.published.set(seq);
    }

    /// The hub accepted event `seq`; hubload read the answer at `at`.
    pub fn note_accepted(&self, seq: u64, at: Instant) {
        let s = &self.slots[(seq & self.mask) as usize];
        if s.seq1.load(Ordering::Acquire) == seq + 1 {
            s.accepted_ns.store(self.ns(at).max(1), Ordering::Relaxed);
        }
        self.accepted.set(seq);
    }

    /// What the ring still knows of `seq`.
    pub fn sent(&self, seq: u64) -> Option<SentEvent> {
        let s = &self.slots[(seq & self.mask) as usize];
        if s.seq1.load(Ordering::Acquire) != seq + 1 {
            return None;
        }
        let e = SentEvent {
            topic: s.topic.load(Ordering::Relaxed) as usize,
            sent_ns: s.sent_ns.load(Ordering::Relaxed),
            accepted_ns: Some(s.accepted_ns.load(Ordering::Relaxed)).filter(|a| *a != 0),
        };
        // Overwritten while reading: the facts may be torn, so say nothing. The fence keeps
        // the field reads above before the second look at `seq1` (a seqlock's read side).
        std::sync::atomic::fence(Ordering::Acquire);
        (s.seq1.load(Ordering::Relaxed) == seq + 1).then_some(e)
    }

    /// Whether `seq` was published in this level.
    pub fn was_published(&self, seq: u64) -> bool {
        self.published.get(seq)
    }

    /// Call `f(seq)` for every accepted sequence number of the level, in order.
    pub fn for_each_accepted(&self, f: impl FnMut(u64)) {
        self.accepted.for_each(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_ring_remembers_until_overwritten() {
        let t = DeliveryTracker::new(3); // rounds up to 4
        t.open_level(10);
        let at = t.anchor + Duration::from_micros(5);
        t.note_published(10, 7, at);
        assert_eq!(
            t.sent(10),
            Some(SentEvent {
                topic: 7,
                sent_ns: 5_000,
                accepted_ns: None
            })
        );
        t.note_accepted(10, at + Duration::from_micros(2));
        assert_eq!(t.sent(10).unwrap().accepted_ns, Some(7_000));
        assert!(t.was_published(10) && !t.was_published(11));
        t.note_published(14, 1, at); // same slot
        assert_eq!(t.sent(10), None);
        assert_eq!(t.sent(14).unwrap().topic, 1);
        let mut acc = Vec::new();
        t.for_each_accepted(|s| acc.push(s));
        assert_eq!(acc, [10], "accepted survives the ring");
        t.open_level(20);
        assert!(!t.was_published(14));
    }
}
