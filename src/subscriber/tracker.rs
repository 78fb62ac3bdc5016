//! What the publisher tells the fleet: which events were sent and accepted, and when.
//!
//! Hot-path cheap and lock-free: a ring indexed by `seq` holds the send and accepted instants
//! (a reader that finds a later `seq` in the slot falls back to the send time in the body), and
//! two atomic bitmaps hold which of the level's sequence numbers were published and accepted;
//! a surge's events use the upper half of the span. Once [`DeliveryTracker::count_owed`] is
//! known, each accepted answer adds its owed deliveries to its second: the `expected` series.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

use super::bitmap::{AtomicBitmap, MAX_SPAN};
use super::second_series::SecondSeries;
use crate::workload::{is_surge_seq, surge_base};

/// Where a surge's extra events are tracked: the upper half of the level's span.
const SURGE_HALF: u64 = MAX_SPAN / 2;

/// The number `seq` is tracked under in a level starting at `base` (its bitmaps and ring): the
/// level's own events as they are; a surge's extra events, numbered in a space of their own
/// (`workload::surge`), from `base + MAX_SPAN / 2` on, so both fit the level's span. A tracked
/// number maps to itself. (A level of more than `MAX_SPAN / 2` own events would meet them.)
pub fn tracked(seq: u64, base: u64) -> u64 {
    if is_surge_seq(seq) {
        base + SURGE_HALF + crate::workload::surge_offset(seq)
    } else {
        seq
    }
}

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
    /// The same for a surge's extra events (tracked numbers in the span's upper half), so the
    /// two numberings never share a slot.
    surge_slots: Box<[Slot]>,
    mask: u64,
    published: AtomicBitmap,
    accepted: AtomicBitmap,
    /// Listening subscribers per topic for the open level; unset: nothing owed is counted.
    fanout: OnceLock<Box<[AtomicU32]>>,
    /// Deliveries owed per second since `origin_ns` (the last second takes everything later).
    owed: SecondSeries,
    /// The level's measured start, ns since the anchor.
    origin_ns: AtomicU64,
    /// The level's first sequence number, and its surge's first extra one (a surge needs
    /// duration levels, whose first number is `level << 40`).
    base: AtomicU64,
    surge_base: AtomicU64,
}

impl DeliveryTracker {
    /// A tracker whose ring holds at least `capacity` events (rounded up to a power of two).
    pub fn new(capacity: usize) -> Self {
        let n = capacity.max(2).next_power_of_two();
        DeliveryTracker {
            anchor: Instant::now(),
            slots: (0..n).map(|_| Slot::default()).collect(),
            surge_slots: (0..n).map(|_| Slot::default()).collect(),
            mask: n as u64 - 1,
            published: AtomicBitmap::default(),
            accepted: AtomicBitmap::default(),
            fanout: OnceLock::new(),
            owed: SecondSeries::default(),
            origin_ns: AtomicU64::new(0),
            base: AtomicU64::new(0),
            surge_base: AtomicU64::new(surge_base(0)),
        }
    }

    /// The ring slot of tracked number `seq`.
    fn slot(&self, seq: u64) -> &Slot {
        let ring = match seq.checked_sub(self.base.load(Ordering::Relaxed)) {
            Some(i) if i >= SURGE_HALF => &self.surge_slots,
            _ => &self.slots,
        };
        &ring[(seq & self.mask) as usize]
    }

    /// `seq` as the level tracks it (the module's `tracked`).
    pub fn tracked(&self, seq: u64) -> u64 {
        tracked(seq, self.base.load(Ordering::Relaxed))
    }

    /// The event a tracked number stands for: the surge's extra event for one in the upper
    /// half of the level's span, else itself.
    pub fn untracked(&self, seq: u64) -> u64 {
        let base = self.base.load(Ordering::Relaxed);
        match seq.checked_sub(base + SURGE_HALF) {
            Some(k) if k < SURGE_HALF => self.surge_base.load(Ordering::Relaxed) + k,
            _ => seq,
        }
    }

    /// ns since the anchor (0 for instants before it).
    pub fn ns(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.anchor).as_nanos() as u64
    }

    /// Start a level whose sequence numbers are `first_seq` and above. Between levels only:
    /// no publish may be in flight.
    pub fn open_level(&self, first_seq: u64) {
        self.base.store(first_seq, Ordering::Relaxed);
        self.surge_base
            .store(surge_base(first_seq >> 40), Ordering::Relaxed);
        self.published.reset(first_seq);
        self.accepted.reset(first_seq);
    }

    /// Event `seq` of `topic` is about to be sent (its first attempt starts at `sent`).
    /// Call it before the request is written, so no delivery can come first.
    pub fn note_published(&self, seq: u64, topic: usize, sent: Instant) {
        let seq = self.tracked(seq);
        let s = self.slot(seq);
        s.seq1.store(0, Ordering::Release);
        s.sent_ns.store(self.ns(sent).max(1), Ordering::Relaxed);
        s.accepted_ns.store(0, Ordering::Relaxed);
        s.topic.store(topic as u32, Ordering::Relaxed);
        s.seq1.store(seq + 1, Ordering::Release);
        self.published.set(seq);
    }

    /// The hub accepted event `seq`; hubload read the answer at `at`.
    pub fn note_accepted(&self, seq: u64, at: Instant) {
        let seq = self.tracked(seq);
        let s = self.slot(seq);
        if s.seq1.load(Ordering::Acquire) == seq + 1 {
            let at_ns = self.ns(at).max(1);
            s.accepted_ns.store(at_ns, Ordering::Relaxed);
            self.owe(s.topic.load(Ordering::Relaxed) as usize, at_ns);
        }
        self.accepted.set(seq);
    }

    /// Add what an accepted event of `topic`, read at `at_ns`, owes to its second.
    fn owe(&self, topic: usize, at_ns: u64) {
        let Some(fanout) = self.fanout.get() else {
            return;
        };
        let n = fanout.get(topic).map_or(0, |f| f.load(Ordering::Relaxed));
        if n > 0 {
            let origin = self.origin_ns.load(Ordering::Relaxed);
            let s = (at_ns.saturating_sub(origin) / 1_000_000_000) as usize;
            self.owed.add(s, u64::from(n));
        }
    }

    /// Count deliveries owed per second for the level just opened: `fanout[topic]` listening
    /// subscribers per topic, seconds from `origin` (the level's measured start). Between levels only.
    pub fn count_owed(&self, origin: Instant, fanout: &[u32]) {
        let f = self
            .fanout
            .get_or_init(|| fanout.iter().map(|_| AtomicU32::new(0)).collect());
        for (slot, n) in f.iter().zip(fanout) {
            slot.store(*n, Ordering::Relaxed);
        }
        self.owed.reset();
        self.origin_ns.store(self.ns(origin), Ordering::Relaxed);
    }

    /// The level's deliveries owed per second, up to the last second with any.
    pub fn owed_per_second(&self) -> Vec<u64> {
        self.owed.to_vec()
    }

    /// What the ring still knows of `seq`.
    pub fn sent(&self, seq: u64) -> Option<SentEvent> {
        let seq = self.tracked(seq);
        let s = self.slot(seq);
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
        self.published.get(self.tracked(seq))
    }

    /// The level's accepted sequence numbers so far (subscription churn: what a subscriber
    /// was owed before its unsubscribe request went out).
    pub fn accepted_snapshot(&self) -> super::bitmap::SeqBitmap {
        self.accepted.snapshot()
    }

    /// The level's published sequence numbers so far (subscription churn: what was already
    /// on its way when a re-subscription was verified).
    pub fn published_snapshot(&self) -> super::bitmap::SeqBitmap {
        self.published.snapshot()
    }

    /// Call `f(seq)` for every accepted sequence number of the level, in order, as tracked
    /// (a surge's extra events after the level's own; [`DeliveryTracker::untracked`] gives
    /// the event).
    pub fn for_each_accepted(&self, f: impl FnMut(u64)) {
        self.accepted.for_each(f);
    }
}

/// The worker loop tells the tracker of every measured publish through the engine's trait.
impl crate::engine::PublishObserver for DeliveryTracker {
    fn published(&self, seq: u64, topic: usize, sent: Instant) {
        self.note_published(seq, topic, sent);
    }
    fn accepted(&self, seq: u64, at: Instant) {
        self.note_accepted(seq, at);
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

    /// A surge's extra events share the level's bitmaps and ring, apart from its own events,
    /// and map back to themselves.
    #[test]
    fn a_surge_s_extra_events_are_tracked_in_the_upper_half_of_the_span() {
        let t = DeliveryTracker::new(16);
        let base = 3 << 40;
        t.open_level(base);
        let extra = surge_base(3) + 5;
        assert_eq!(t.tracked(extra), base + SURGE_HALF + 5);
        assert_eq!(t.tracked(t.tracked(extra)), t.tracked(extra));
        assert_eq!(t.untracked(t.tracked(extra)), extra);
        assert_eq!(
            (t.tracked(base + 5), t.untracked(base + 5)),
            (base + 5, base + 5)
        );
        t.note_published(base + 5, 1, t.anchor);
        t.note_published(extra, 2, t.anchor);
        t.note_accepted(extra, t.anchor);
        assert!(t.was_published(base + 5) && t.was_published(extra));
        assert_eq!(t.sent(extra).unwrap().topic, 2);
        assert_eq!(t.sent(base + 5).unwrap().topic, 1);
        let mut acc = Vec::new();
        t.for_each_accepted(|s| acc.push(t.untracked(s)));
        assert_eq!(acc, [extra]);
    }

    #[test]
    fn accepted_answers_owe_their_topics_fanout_by_second() {
        let t = DeliveryTracker::new(16);
        t.open_level(0);
        // Nothing is owed before the fleet says who listens.
        t.note_published(0, 1, t.anchor);
        t.note_accepted(0, t.anchor);
        assert!(t.owed_per_second().is_empty());
        let origin = t.anchor + Duration::from_secs(10);
        t.count_owed(origin, &[0, 2, 3]);
        let at = |ms| origin + Duration::from_millis(ms);
        for (seq, topic, ms) in [
            (1, 1, 0),
            (2, 2, 999),
            (3, 0, 1_000),
            (4, 2, 2_500),
            (5, 1, 2_999),
        ] {
            t.note_published(seq, topic, origin);
            t.note_accepted(seq, at(ms));
        }
        // Second 0: topics 1 and 2 (2 + 3); second 1: topic 0, nobody listens; second 2: 3 + 2.
        assert_eq!(t.owed_per_second(), [5, 0, 5]);
        // An answer before the origin counts in second 0; the next level starts from zero.
        t.count_owed(origin, &[1, 0, 0]);
        t.note_published(6, 0, t.anchor);
        t.note_accepted(6, t.anchor);
        assert_eq!(t.owed_per_second(), [1]);
    }
}
