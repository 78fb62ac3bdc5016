//! Matching one delivery to the event it names: signature, identity, exact body, then the
//! subscriber's bitmaps decide delivered, duplicate or redelivery (docs/delivery.md).

use std::cell::RefCell;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::behaviour::{Answer, Behaviour};
use super::bitmap::SeqBitmap;
use super::delivery_hists::DeliveryHists;
use super::second_series::SecondSeries;
use super::stats::DeliveryCounts;
use super::tracker::{DeliveryTracker, SentEvent};
use crate::stats::record;
use crate::workload::Workload;

/// What the content of one delivery is, decided without the subscriber's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// `X-Hub-Signature` missing, malformed or wrong.
    BadSignature,
    /// Not one of our events, or not one published to this subscriber's topic.
    Unexpected,
    /// One of our events from an earlier level.
    Late,
    /// Names one of our events but differs from it.
    BodyMismatch,
    /// Exactly event `seq` (as the level tracks it: `tracker::tracked`), sent at `sent_us`
    /// (wall clock).
    Event {
        /// Sequence number.
        seq: u64,
        /// Send time from the body, µs since the Unix epoch.
        sent_us: u64,
    },
}

/// A subscriber secret as a keyed HMAC-SHA256 state: the key is absorbed once, each check
/// clones the state and hashes the body only.
#[derive(Clone)]
pub struct SignatureKey(Hmac<Sha256>);

impl std::fmt::Debug for SignatureKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The keyed state is the secret: never printed.
        f.write_str("SignatureKey(..)")
    }
}

impl SignatureKey {
    /// The key for `secret`.
    pub fn new(secret: &[u8]) -> SignatureKey {
        // HMAC accepts keys of any length, so this cannot fail.
        SignatureKey(
            <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes any key length"),
        )
    }

    /// Whether `header` (`sha256=<64 hex digits>`) is the HMAC-SHA256 of `body` under this key.
    pub fn verify(&self, header: Option<&[u8]>, body: &[u8]) -> bool {
        let Some(hex_sig) = header.and_then(|h| h.strip_prefix(b"sha256=")) else {
            return false;
        };
        let mut sig = [0u8; 32];
        if hex::decode_to_slice(hex_sig, &mut sig).is_err() {
            return false;
        }
        let mut mac = self.0.clone();
        mac.update(body);
        // Constant time: how long this takes says nothing about the secret.
        mac.verify_slice(&sig).is_ok()
    }
}

/// Whether `header` (`sha256=<hex>`) is the HMAC-SHA256 of `body` under `secret`.
pub fn signature_ok(secret: &[u8], header: Option<&[u8]>, body: &[u8]) -> bool {
    SignatureKey::new(secret).verify(header, body)
}

/// Classify one delivery to a subscriber of `topic` (level sequence numbers from `base`);
/// with a `key`, the signature is checked first.
pub fn check(
    workload: &Workload,
    tracker: &DeliveryTracker,
    topic: usize,
    base: u64,
    key: Option<&SignatureKey>,
    signature: Option<&[u8]>,
    body: &[u8],
) -> Check {
    if key.is_some_and(|k| !k.verify(signature, body)) {
        return Check::BadSignature;
    }
    let Some((seq, sent_us)) = workload.parse_identity(body) else {
        return Check::Unexpected;
    };
    if seq < base {
        return Check::Late;
    }
    // The level's bitmaps hold a surge's extra events too, under a number of their span.
    let tracked = super::tracker::tracked(seq, base);
    if !tracker.was_published(tracked) {
        return Check::Unexpected;
    }
    let its_topic = tracker
        .sent(tracked)
        .map_or_else(|| workload.topic_of_seq(seq), |s| s.topic);
    if its_topic != topic {
        return Check::Unexpected;
    }
    if !is_exact(workload, seq, sent_us, body) {
        return Check::BodyMismatch;
    }
    Check::Event {
        seq: tracked,
        sent_us,
    }
}

thread_local! {
    /// The expected body of the delivery being checked: one buffer per thread, rendered over
    /// and over, so a delivery costs no allocation here.
    static EXPECTED: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Whether `body` is byte for byte event `seq` sent at `sent_us`, regenerated into this
/// thread's buffer.
fn is_exact(workload: &Workload, seq: u64, sent_us: u64, body: &[u8]) -> bool {
    EXPECTED.with(|cell| {
        let e = workload.event_into(seq, sent_us, cell.take());
        let same = e.body == body;
        cell.replace(e.body);
        same
    })
}

/// One subscriber's state for the open level (kept under its own lock).
#[derive(Debug)]
pub struct SubState {
    /// Events acknowledged (2xx) this level.
    pub acked: SeqBitmap,
    /// Events answered with an error and not yet acknowledged.
    pub refused: SeqBitmap,
    /// Broker subscribers: events read from the subscription's dead-letter sub-queue.
    pub dead: SeqBitmap,
    /// Broker subscribers: `counts.dead_lettered` by `DeadLetterReason`.
    pub dead_reasons: std::collections::BTreeMap<String, u64>,
    /// The level's counters so far.
    pub counts: DeliveryCounts,
    /// The end-to-end latency (µs) of the last delivery counted delivered.
    pub last_e2e_us: u64,
    /// The level's delivered events' end-to-end latencies (µs) in the compact per-topic
    /// layout (each counted `accepted`): the per-tenant delivery figures read these.
    pub latency: crate::stats::TopicStats,
    /// Its topic is a quiet tenant's while a surge runs: its deliveries also count by the
    /// second their event was sent in (`DeliveryHists::quiet_seconds`).
    pub quiet: bool,
    /// The level's measured start on the tracker's clock (ns).
    pub origin_ns: u64,
    /// Latest send instant (tracker ns) among events delivered so far, for the order check.
    max_sent_ns: u64,
    /// When the level's last delivery was acknowledged (tracker ns).
    last_delivery_ns: Option<u64>,
    /// The level's longest interval between two consecutive acknowledged deliveries, ns.
    pub longest_gap_ns: u64,
    /// Deliveries received over the run (the knobs count these).
    receipts: u64,
    /// Deliveries acknowledged over the run.
    acked_total: u64,
    /// Answered 410 at least once.
    pub gone: bool,
    /// Subscription churn: events of the level accepted while this subscriber was between its
    /// unsubscribe request and its re-verification (not owed to it: `ambiguous`).
    pub gap: SeqBitmap,
    /// While a churn gap is open: the accepted events when its unsubscribe request went out.
    pub gap_from: Option<SeqBitmap>,
    /// The hub verified an unsubscribe and no subscribe since (deliveries: `after_unsubscribe`).
    pub after_unsub: bool,
    /// Re-verified by churn at this instant (tracker ns), no delivery acknowledged since.
    pub first_from_ns: Option<u64>,
    /// Re-verified by churn, the gap still open: the events published by then. The first
    /// delivery of a later event proves the hub has the subscription in force again.
    pub reverified: Option<SeqBitmap>,
}

impl SubState {
    /// A fresh state for a level starting at `base`.
    pub fn new(base: u64) -> Self {
        SubState {
            acked: SeqBitmap::new(base),
            refused: SeqBitmap::new(base),
            dead: SeqBitmap::new(base),
            dead_reasons: std::collections::BTreeMap::new(),
            counts: DeliveryCounts::default(),
            last_e2e_us: 0,
            latency: crate::stats::TopicStats::default(),
            quiet: false,
            origin_ns: 0,
            max_sent_ns: 0,
            last_delivery_ns: None,
            longest_gap_ns: 0,
            receipts: 0,
            acked_total: 0,
            gone: false,
            gap: SeqBitmap::new(base),
            gap_from: None,
            after_unsub: false,
            first_from_ns: None,
            reverified: None,
        }
    }

    /// Start a new level at `base`: bitmaps cleared; counters and histograms were taken.
    pub fn reset(&mut self, base: u64) {
        self.acked.reset(base);
        self.refused.reset(base);
        self.dead.reset(base);
        self.max_sent_ns = 0;
        self.last_delivery_ns = None;
        self.longest_gap_ns = 0;
        self.gap.reset(base);
        self.gap_from = None;
        self.first_from_ns = None;
        self.reverified = None;
    }

    /// Whether accepted event `seq` fell in a churn gap of this subscriber (an open gap holds
    /// every event accepted after its unsubscribe request went out).
    pub fn in_gap(&self, seq: u64) -> bool {
        self.gap.get(seq) || self.gap_from.as_ref().is_some_and(|from| !from.get(seq))
    }

    /// Close an open churn gap at the accepted events `now`: what was accepted since its
    /// unsubscribe request went out is not owed. Returns whether a gap was open.
    pub fn close_gap(&mut self, now: &SeqBitmap) -> bool {
        self.reverified = None;
        let Some(from) = self.gap_from.take() else {
            return false;
        };
        self.gap.add_difference(now, &from);
        true
    }

    /// Whether acknowledging `seq` now closes the churn gap: the first delivery of an event
    /// published after the re-verification.
    pub fn closes_gap(&self, seq: u64) -> bool {
        self.reverified.as_ref().is_some_and(|p| !p.get(seq))
    }

    /// Record one message read from the subscription's dead-letter sub-queue, dead-lettered
    /// for `reason`: an event of the level counts once in `dead_lettered` (and so not in
    /// `lost`); one of an earlier level was counted lost there and counts `late`; anything
    /// else is not ours (`unexpected`). Not a delivery: `received` is left alone.
    pub fn dead_lettered(&mut self, check: Check, reason: &str) {
        let c = &mut self.counts;
        match check {
            Check::Event { seq, .. } if !self.dead.get(seq) => {
                self.dead.set(seq);
                c.dead_lettered += 1;
                *self.dead_reasons.entry(reason.to_string()).or_default() += 1;
            }
            // Read again (its completion was lost): already counted.
            Check::Event { .. } => {}
            Check::Late => c.late += 1,
            Check::BadSignature | Check::Unexpected | Check::BodyMismatch => c.unexpected += 1,
        }
    }

    /// Record one delivery: decide its answer with `behaviour` (subscriber id `id`) and count it.
    /// `sent` is what the tracker still knows of the event; `received_ns` is on the tracker's
    /// clock; one delivered is counted in its second of `delivered_per_second` and its latencies
    /// in `hists` (the level's, shared by the subscribers).
    #[allow(clippy::too_many_arguments)]
    pub fn receive(
        &mut self,
        id: u64,
        behaviour: &Behaviour,
        check: Check,
        sent: Option<SentEvent>,
        received_ns: u64,
        delivered_per_second: &SecondSeries,
        hists: &mut DeliveryHists,
    ) -> Answer {
        self.receipts += 1;
        let answer = behaviour.answer(id, self.receipts, self.acked_total);
        let c = &mut self.counts;
        c.received += 1;
        match answer {
            Answer::Ok => {}
            Answer::Error => c.answered_error += 1,
            Answer::Gone => {
                c.answered_gone += 1;
                self.gone = true;
            }
        }
        let (seq, sent_us) = match check {
            Check::BadSignature => {
                c.bad_signature += 1;
                return answer;
            }
            Check::Unexpected => {
                c.unexpected += 1;
                return answer;
            }
            Check::Late => {
                c.late += 1;
                return answer;
            }
            Check::BodyMismatch => {
                c.body_mismatch += 1;
                return answer;
            }
            Check::Event { seq, sent_us } => (seq, sent_us),
        };
        if self.acked.get(seq) {
            c.duplicates += 1;
            return answer;
        }
        let retried = self.refused.get(seq);
        if retried {
            c.redeliveries += 1;
        }
        if answer != Answer::Ok {
            self.refused.set(seq);
            return answer;
        }
        self.acked.set(seq);
        self.acked_total += 1;
        c.delivered += 1;
        if let Some(last) = self.last_delivery_ns {
            self.longest_gap_ns = self.longest_gap_ns.max(received_ns.saturating_sub(last));
        }
        self.last_delivery_ns = Some(received_ns);
        let second = received_ns.saturating_sub(self.origin_ns) / 1_000_000_000;
        delivered_per_second.add(second as usize, 1);
        match sent {
            Some(s) => {
                self.last_e2e_us = received_ns.saturating_sub(s.sent_ns) / 1000;
                record(&mut hists.e2e_from_start, self.last_e2e_us);
                match s.accepted_ns {
                    Some(a) if a <= received_ns => {
                        record(&mut hists.e2e_from_accepted, (received_ns - a) / 1000);
                    }
                    _ => c.before_accepted += 1,
                }
                // Out of order: this event was accepted before an already delivered one was sent.
                if !retried && s.accepted_ns.is_some_and(|a| a < self.max_sent_ns) {
                    c.out_of_order += 1;
                }
                self.max_sent_ns = self.max_sent_ns.max(s.sent_ns);
                if self.quiet {
                    let sec = (s.sent_ns.saturating_sub(self.origin_ns) / 1_000_000_000) as usize;
                    // Bounded like the level's own series (`second_series::SERIES_SECONDS`).
                    let sec = sec.min(super::second_series::SERIES_SECONDS - 1);
                    let q = &mut hists.quiet_seconds;
                    if q.len() <= sec {
                        q.resize(sec + 1, crate::stats::TopicStats::default());
                    }
                    q[sec].record(crate::result::Class::Accepted, self.last_e2e_us);
                }
            }
            None => {
                // Another process (or a ring too small) sent it: the body's wall clock, skew included.
                c.e2e_from_body += 1;
                self.last_e2e_us = unix_us().saturating_sub(sent_us);
                record(&mut hists.e2e_from_start, self.last_e2e_us);
            }
        }
        self.latency
            .record(crate::result::Class::Accepted, self.last_e2e_us);
        answer
    }
}

/// Wall clock, µs since the Unix epoch.
fn unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// `Instant::now()` on the tracker's clock.
pub fn now_ns(tracker: &DeliveryTracker) -> u64 {
    tracker.ns(Instant::now())
}

/// Tests: the `X-Hub-Signature` value a hub sends for `body` under `secret`, computed
/// directly with HMAC-SHA256 (not through [`SignatureKey`]).
#[cfg(test)]
pub(crate) fn test_signature(secret: &[u8], body: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret).unwrap();
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests;
