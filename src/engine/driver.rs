//! Hands out tickets (which event, and when it was meant to start) to the worker loop:
//! at once for the closed model, on a schedule for the open model.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::control::{Control, Steer};
use super::own_topics::{kept, OwnTopics};
use super::pacer::{Arrivals, Schedule};
use crate::stats::Writers;

/// Permission to send one event.
#[derive(Debug)]
pub(crate) struct Ticket {
    /// Event sequence number.
    pub seq: u64,
    /// When the event was meant to start (open model: its schedule; closed: when issued, a
    /// clock read made as [`Driver::next`] returned, which the worker starts the event at).
    pub intended: Instant,
    /// False during warm-up: sent but not recorded.
    pub measured: bool,
    /// Open model: holds one unit of `--max-inflight` until the event completes.
    _permit: Option<OwnedSemaphorePermit>,
}

/// The event sequence numbers one level (of one shard) owns: `first + k·stride`, below `end`.
#[derive(Debug, Clone, Copy)]
pub struct Seqs {
    /// First sequence number.
    pub first: u64,
    /// Step between sequence numbers (the shard count).
    pub stride: u64,
    /// Exclusive upper bound, when the level has a request count.
    pub end: Option<u64>,
}

impl Seqs {
    /// The numbers in `[base, base + count)` (or from `base` on) that are `≡ index (mod stride)`.
    pub fn striped(base: u64, count: Option<u64>, index: u64, stride: u64) -> Self {
        let first = base + (index + stride - base % stride) % stride;
        Seqs {
            first,
            stride,
            end: count.map(|c| base + c),
        }
    }

    /// The next number from the shared counter `issued` that `own` keeps (every one without);
    /// `writers`: how the workers add to the counter.
    fn next_kept(
        &self,
        issued: &AtomicU64,
        own: Option<&OwnTopics>,
        writers: Writers,
    ) -> Option<u64> {
        if own.is_some_and(|o| !o.owns_any()) {
            return None; // the search below would never end
        }
        loop {
            let s = self.nth(writers.add_u64(issued, 1))?;
            if kept(own, s) {
                return Some(s);
            }
        }
    }

    pub(crate) fn nth(&self, k: u64) -> Option<u64> {
        let s = self.first.checked_add(k.checked_mul(self.stride)?)?;
        match self.end {
            Some(end) if s >= end => None,
            _ => Some(s),
        }
    }
}

impl Ticket {
    /// A measured open-model ticket for `seq`, meant to start `at`, holding `permit`.
    pub(crate) fn scheduled(seq: u64, at: Instant, permit: OwnedSemaphorePermit) -> Self {
        Ticket {
            seq,
            intended: at,
            measured: true,
            _permit: Some(permit),
        }
    }
}

/// Timing of a level, shared by both models.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    /// Measured time starts here (after warm-up).
    pub measured_start: Instant,
    /// No new measured tickets at or after this instant.
    pub deadline: Option<Instant>,
}

pub(crate) enum Driver {
    Closed {
        window: Window,
        seqs: Seqs,
        warm_seqs: Seqs,
        issued: AtomicU64,
        warm_issued: AtomicU64,
        /// How the workers add to `issued` and `warm_issued`.
        writers: Writers,
        /// Owner striping: only these topics' events (see `own_topics`).
        own: Option<OwnTopics>,
        /// `--web`: pause, end the level, lower the concurrency.
        control: Option<Arc<Control>>,
    },
    Open {
        rx: async_channel::Receiver<Ticket>,
    },
}

impl Driver {
    /// The next ticket for `worker`, or `None` when the level is over for it. `stopped` is
    /// the worker's own view of the stop (cheaper to read than the shared token).
    pub async fn next(&self, stopped: bool, worker: usize) -> Option<Ticket> {
        match self {
            Driver::Closed {
                window,
                seqs,
                warm_seqs,
                issued,
                warm_issued,
                writers,
                own,
                control,
            } => {
                if stopped {
                    return None;
                }
                // Steered (`--web`): held while paused or above the concurrency now; the
                // deadline moves by the time paused.
                let mut window = *window;
                if let Some(c) = control.as_deref().filter(|c| c.engaged()) {
                    match c.steer(Some(worker)).await {
                        Steer::End => return None,
                        Steer::Go { paused, .. } => {
                            window.deadline = window.deadline.map(|d| d + paused);
                        }
                    }
                    if c.is_stopped() {
                        return None;
                    }
                }
                let now = Instant::now();
                if now < window.measured_start {
                    return Some(Ticket {
                        seq: warm_seqs.next_kept(warm_issued, own.as_ref(), *writers)?,
                        intended: now,
                        measured: false,
                        _permit: None,
                    });
                }
                if window.deadline.is_some_and(|d| now >= d) {
                    return level_over(control);
                }
                let Some(seq) = seqs.next_kept(issued, own.as_ref(), *writers) else {
                    return level_over(control);
                };
                Some(Ticket {
                    seq,
                    intended: now,
                    measured: true,
                    _permit: None,
                })
            }
            Driver::Open { rx } => rx.recv().await.ok(),
        }
    }
}

/// A closed level is over for the worker that saw its deadline pass (or its requests run
/// out): with `--web`, the workers held above the concurrency now wait for a change, not for
/// the deadline, so they are told to end too. Once per worker at the level's end.
fn level_over(control: &Option<Arc<Control>>) -> Option<Ticket> {
    if let Some(c) = control {
        c.level_over();
    }
    None
}

/// Open-model settings for the pacer.
#[derive(Debug, Clone)]
pub(crate) struct OpenParams {
    pub rate: f64,
    /// `--max-inflight` permits, shared with a surge's pacer.
    pub permits: Arc<Semaphore>,
    pub arrivals: Arrivals,
    pub ramp_up: Duration,
    pub seed: u64,
    /// Owner striping: the pacer keeps the whole schedule and sends only these topics' events.
    pub own: Option<OwnTopics>,
    /// `--web`: pause, end the level, change the rate.
    pub control: Option<Arc<Control>>,
}

/// Runs the open model's pacer until the level ends; returns (scheduled, dropped) measured sends.
///
/// At each scheduled instant it takes an in-flight permit without waiting; when none is free the
/// send is counted as dropped (generator saturated) rather than delayed, so a slow hub can never
/// silently lower the offered load.
pub(crate) async fn run_pacer(
    p: OpenParams,
    window: Window,
    warmup_start: Instant,
    seqs: Seqs,
    warm_seqs: Seqs,
    tx: async_channel::Sender<Ticket>,
    cancel: CancellationToken,
) -> (u64, u64) {
    if p.own.as_ref().is_some_and(|o| !o.owns_any()) {
        return (0, 0); // a shard without topics has no slot of the schedule
    }
    let permits = p.permits.clone();
    let mut dropped = 0u64;
    let mut scheduled = 0u64;
    // Warm-up at the full rate, unmeasured.
    let mut warm = Schedule::new(p.rate, Duration::ZERO, p.arrivals, p.seed ^ 1);
    let mut wk = 0u64;
    loop {
        let at = warmup_start + warm.next_offset();
        if at >= window.measured_start {
            break;
        }
        let Some(seq) = warm_seqs.nth(wk) else { break };
        wk += 1;
        if !kept(p.own.as_ref(), seq) {
            continue;
        }
        tokio::select! {
            _ = cancel.cancelled() => return (scheduled, dropped),
            _ = tokio::time::sleep_until(at) => {}
        }
        if let Ok(permit) = permits.clone().try_acquire_owned() {
            let t = Ticket {
                seq,
                intended: at,
                measured: false,
                _permit: Some(permit),
            };
            if tx.send(t).await.is_err() {
                return (scheduled, dropped);
            }
        }
    }
    let mut sched = Schedule::new(p.rate, p.ramp_up, p.arrivals, p.seed);
    let mut k = 0u64;
    // Steered (`--web`): the schedule restarts at the new rate from the moment of a change
    // or a resume, and the deadline moves by the time paused.
    let mut origin = window.measured_start;
    let mut deadline = window.deadline;
    let mut plan = None;
    loop {
        if let Some(c) = p.control.as_deref().filter(|c| c.engaged()) {
            match c.steer(None).await {
                Steer::End => break,
                Steer::Go {
                    offered,
                    paused,
                    generation,
                } => {
                    if plan != Some(generation) {
                        let rate = match offered {
                            super::plan::Load::Open { rate, .. } => rate,
                            super::plan::Load::Closed { .. } => p.rate,
                        };
                        sched =
                            Schedule::new(rate, Duration::ZERO, p.arrivals, p.seed ^ generation);
                        origin = Instant::now().max(window.measured_start);
                        deadline = window.deadline.map(|d| d + paused);
                        plan = Some(generation);
                    }
                }
            }
        }
        let at = origin + sched.next_offset();
        if deadline.is_some_and(|d| at >= d) {
            break;
        }
        let Some(seq) = seqs.nth(k) else { break };
        if !kept(p.own.as_ref(), seq) {
            k += 1;
            continue; // another shard's slot of the schedule
        }
        let steered = async {
            match p.control.as_deref() {
                Some(c) => c.changed().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep_until(at) => {}
            // A change while asleep on a slot: plan again (the slot is not sent).
            _ = steered => continue,
        }
        if p.control
            .as_deref()
            .is_some_and(|c| c.engaged() && plan != Some(c.generation()))
        {
            continue; // changed as the slot came: plan again first
        }
        k += 1;
        scheduled += 1;
        match permits.clone().try_acquire_owned() {
            Ok(permit) => {
                let t = Ticket {
                    seq,
                    intended: at,
                    measured: true,
                    _permit: Some(permit),
                };
                if tx.send(t).await.is_err() {
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

    #[test]
    fn striped_seqs_partition_the_range_exactly() {
        for (base, count, stride) in [(0u64, 100u64, 3u64), (7, 10, 4), (1000, 1, 5), (5, 0, 2)] {
            let mut all: Vec<u64> = (0..stride)
                .flat_map(|i| {
                    let s = Seqs::striped(base, Some(count), i, stride);
                    (0..).map_while(move |k| s.nth(k))
                })
                .collect();
            all.sort_unstable();
            assert_eq!(all, (base..base + count).collect::<Vec<_>>());
        }
    }

    #[tokio::test(start_paused = true)]
    async fn pacer_sends_on_schedule_and_counts_drops_when_saturated() {
        let (tx, rx) = async_channel::unbounded::<Ticket>();
        let start = Instant::now();
        let window = Window {
            measured_start: start,
            deadline: Some(start + Duration::from_secs(1)),
        };
        let p = OpenParams {
            rate: 100.0,
            permits: Arc::new(Semaphore::new(1)),
            arrivals: Arrivals::Constant,
            ramp_up: Duration::ZERO,
            seed: 1,
            own: None,
            control: None,
        };
        let seqs = Seqs::striped(0, None, 0, 1);
        // One consumer that holds each ticket for 25 ms: 1 send in 3 fits, the rest are dropped.
        let consumer = tokio::spawn(async move {
            let mut got = Vec::new();
            while let Ok(t) = rx.recv().await {
                got.push((t.seq, t.intended - start));
                tokio::time::sleep(Duration::from_millis(25)).await;
                drop(t);
            }
            got
        });
        let (scheduled, dropped) =
            run_pacer(p, window, start, seqs, seqs, tx, CancellationToken::new()).await;
        let got = consumer.await.unwrap();
        assert_eq!(scheduled, 100);
        assert_eq!(scheduled, got.len() as u64 + dropped);
        assert_eq!(got.len(), 34, "every third slot: 0, 30, 60 … 990 ms");
        assert_eq!(got[1], (3, Duration::from_millis(30)));
    }
}
