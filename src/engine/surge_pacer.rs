//! The surge's pacer (`--surge`): extra measured tickets for the surging tenants, on a
//! schedule of their own from the surge's start to the level's deadline, beside the level's
//! own pacer, which it leaves untouched (the quiet tenants' load is the same with and without).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::driver::{Seqs, Ticket};
use super::own_topics::{kept, OwnTopics};
use super::pacer::{Arrivals, Schedule};

/// What the surge's pacer needs.
#[derive(Debug, Clone)]
pub(crate) struct SurgeParams {
    /// Extra events per second: the level's rate × (K − 1) × the surging tenants' share.
    pub rate: f64,
    /// The first extra event's intended start.
    pub start: Instant,
    /// No extra event at or after this instant (the level's deadline).
    pub deadline: Option<Instant>,
    pub arrivals: Arrivals,
    pub seed: u64,
    /// The level's `--max-inflight` permits, shared with its own pacer.
    pub permits: Arc<Semaphore>,
    /// Owner striping: send only these topics' extra events.
    pub own: Option<OwnTopics>,
}

/// Sends the surge's tickets (numbers from `seqs`, the surge's space) until the deadline;
/// returns (scheduled, dropped), counted as the level's own pacer counts them.
pub(crate) async fn run_surge_pacer(
    p: SurgeParams,
    seqs: Seqs,
    tx: async_channel::Sender<Ticket>,
    cancel: CancellationToken,
) -> (u64, u64) {
    let (mut scheduled, mut dropped) = (0u64, 0u64);
    if p.rate <= 0.0 {
        return (0, 0);
    }
    let mut sched = Schedule::new(p.rate, Duration::ZERO, p.arrivals, p.seed);
    let mut k = 0u64;
    loop {
        let at = p.start + sched.next_offset();
        if p.deadline.is_some_and(|d| at >= d) {
            break;
        }
        let Some(seq) = seqs.nth(k) else { break };
        k += 1;
        if !kept(p.own.as_ref(), seq) {
            continue; // another shard's slot of the schedule
        }
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep_until(at) => {}
        }
        scheduled += 1;
        match p.permits.clone().try_acquire_owned() {
            Ok(permit) => {
                if tx.send(Ticket::scheduled(seq, at, permit)).await.is_err() {
                    break;
                }
            }
            Err(_) => dropped += 1,
        }
    }
    (scheduled, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::surge_base;

    #[tokio::test(start_paused = true)]
    async fn extra_tickets_run_from_the_start_to_the_deadline_on_their_own_numbers() {
        let (tx, rx) = async_channel::unbounded::<Ticket>();
        let t0 = Instant::now();
        let p = SurgeParams {
            rate: 50.0,
            start: t0 + Duration::from_millis(400),
            deadline: Some(t0 + Duration::from_secs(1)),
            arrivals: Arrivals::Constant,
            seed: 1,
            permits: Arc::new(Semaphore::new(1000)),
            own: None,
        };
        let seqs = Seqs::striped(surge_base(2), None, 0, 1);
        let (scheduled, dropped) = run_surge_pacer(p, seqs, tx, CancellationToken::new()).await;
        let ms = |d: Duration| (d.as_secs_f64() * 1000.0).round() as u64;
        let got: Vec<(u64, u64)> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|t| (t.seq - surge_base(2), ms(t.intended - t0)))
            .collect();
        // 50/s from 400 ms to 1 s: 400, 420, … 980 ms, 30 tickets numbered 0..30.
        assert_eq!((scheduled, dropped), (30, 0));
        assert_eq!(got.len(), 30);
        assert_eq!(got[0], (0, 400));
        assert_eq!(got[29], (29, 980));
    }
}
