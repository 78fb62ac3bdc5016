//! Adding one shard's part of a level or phase to the run's: counters add, spans are the
//! longest shard's (they ran at once), first errors the lowest-numbered shard's (the caller
//! adds shards in index order).

use super::super::artifact::Load;
use crate::report::model::delivery_report::{LevelDelivery, SubscriptionReport};
use crate::report::model::ServiceBusInfo;
use crate::targets::PhaseResult;

/// Add one shard's deliveries of a level to `acc`: counters, per-subscriber counters and both
/// histograms with `+=` (each shard checks the deliveries of its own topics, so nothing is
/// counted twice); the span is the longest shard's (they ran at once); backlogs add.
pub fn add_delivery(acc: &mut LevelDelivery, d: &LevelDelivery) {
    acc.stats += &d.stats;
    acc.seconds = acc.seconds.max(d.seconds);
    acc.backlog += d.backlog;
}

/// The shards' subscription phases added: counts add, the duration is the slowest shard's,
/// the first error the lowest-numbered shard's; `None` when no shard had one.
pub(super) fn add_subscriptions<'a>(
    phases: impl Iterator<Item = Option<&'a SubscriptionReport>>,
) -> Option<SubscriptionReport> {
    phases.flatten().fold(None, |acc, p| {
        let mut a = acc.unwrap_or_default();
        a.requested += p.requested;
        a.accepted += p.accepted;
        a.verified += p.verified;
        a.denied += p.denied;
        a.unverified += p.unverified;
        a.refused += p.refused;
        a.duration_s = a.duration_s.max(p.duration_s);
        if a.first_error.is_none() {
            a.first_error.clone_from(&p.first_error);
        }
        Some(a)
    })
}

pub(super) fn zero_like(l: Load) -> Load {
    match l {
        Load::Concurrency(_) => Load::Concurrency(0),
        Load::Rate(_) => Load::Rate(0.0),
    }
}

pub(super) fn add_load(a: Load, b: Load) -> Load {
    match (a, b) {
        (Load::Concurrency(x), Load::Concurrency(y)) => Load::Concurrency(x + y),
        (Load::Rate(x), Load::Rate(y)) => Load::Rate(x + y),
        // check_together rejected mixed kinds.
        (a, _) => a,
    }
}

/// Add one shard's Service Bus section to `acc`: counts add; endpoint, topic mapping and the
/// per-process connection setting are the run's (the same on every shard). Each shard ran its
/// own embedded emulator, so the emulators' counts add too; a shard without one clears them.
pub(super) fn add_servicebus(acc: &mut ServiceBusInfo, s: &ServiceBusInfo) {
    acc.reconnects += s.reconnects;
    acc.token_puts += s.token_puts;
    for (k, v) in &s.conditions {
        *acc.conditions.entry(k.clone()).or_default() += v;
    }
    acc.emulator = match (acc.emulator.take(), &s.emulator) {
        (Some(mut a), Some(e)) => {
            a.accepted += e.accepted;
            a.throttled += e.throttled;
            a.unauthorized += e.unauthorized;
            for (k, v) in &e.accepted_per_topic {
                *a.accepted_per_topic.entry(k.clone()).or_default() += v;
            }
            Some(a)
        }
        _ => None,
    };
}

pub(super) fn add_phase(acc: &mut PhaseResult, p: &PhaseResult) {
    acc.topics += p.topics;
    acc.counts += &p.counts;
    acc.reasons += &p.reasons;
    acc.already_registered += p.already_registered;
    // Shards register in parallel: the phase took as long as the slowest.
    acc.duration_s = acc.duration_s.max(p.duration_s);
    if acc.first_error.is_none() {
        acc.first_error.clone_from(&p.first_error);
    }
}
