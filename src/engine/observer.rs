//! Who else hears of a measured publish: the worker loop tells an observer when an event's
//! first attempt starts and when it is accepted (the subscriber fleet's delivery tracker is
//! one). The engine knows only this trait, not who implements it.

use std::time::Instant;

/// Told of every measured event as the worker loop sends it; called on the hot path, so an
/// implementation must not block.
pub trait PublishObserver: Send + Sync {
    /// Event `seq` of workload topic `topic` is about to be sent (its first attempt starts at
    /// `sent`); called before the request is written, so nothing the send causes comes first.
    fn published(&self, seq: u64, topic: usize, sent: Instant);
    /// Event `seq` was accepted; its answer was read at `at`.
    fn accepted(&self, seq: u64, at: Instant);
    /// Whether a refusal (404 or denied) of a publish to workload topic `topic`, sent at
    /// `start` and answered at `end`, is expected: its topic was deregistered meanwhile
    /// (`--topic-churn`). The worker then counts it `expected_refusal`. Called on refusals only.
    fn refusal_expected(&self, _topic: usize, _start: Instant, _end: Instant) -> bool {
        false
    }
}
