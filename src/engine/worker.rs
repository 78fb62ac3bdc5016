//! The one worker loop both load models share: ticket → event → attempts (with retries) → stats.

use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::Poll;

use tokio::time::Instant;

use super::attempt::AttemptRecord;
use super::context::LevelContext;
use super::driver::Driver;
use super::retry_wait::{retry_wait, RetryWait};
use super::stop::StopWatch;
use super::stripe::StripeCell;
use crate::result::{Attempt, Class, Outcome};
use crate::stats::{AttemptSpan, SharedLevel, Stamp};
use crate::targets::Target;

/// Run tickets until the driver says stop, recording into stripe `worker % stripes.len()`,
/// from `join` after `level_start` (the closed model's ramp) or the stop, whichever is first.
///
/// The task's whole future: a wrapper around it (for the join) would be one more state
/// machine resumed on every wake.
pub(crate) async fn worker_loop<T: Target>(
    ctx: Arc<LevelContext<T>>,
    driver: Arc<Driver>,
    stripes: Arc<[StripeCell]>,
    shared: Arc<SharedLevel>,
    worker: usize,
    level_start: Instant,
    join: std::time::Duration,
) {
    if !join.is_zero() {
        tokio::select! {
            _ = ctx.cancel.cancelled() => return,
            _ = tokio::time::sleep_until(level_start + join) => {}
        }
    }
    let stripe = &stripes[worker % stripes.len()];
    let max_attempts = ctx.retries + 1;
    // A child token per worker: its waiter is this worker's alone, so watching for the stop on
    // every attempt never contends with the other workers.
    let mut stop = StopWatch::new(ctx.cancel.child_token());
    // The previous event's body, handed back so rendering the next one allocates nothing.
    let mut spare = Vec::new();
    // The target's buffers, reused by every attempt of this worker.
    let mut scratch = T::Scratch::default();
    let clock = &ctx.clock;
    let level_start = Stamp::of(clock, level_start.into_std());
    let renders_body = ctx.target.renders_body();
    while let Some(ticket) = driver.next(stop.is_stopped(), worker).await {
        if stop.is_stopped() {
            // A ticket queued before the stop: no request starts after it.
            break;
        }
        // One clock read stamps the event's send time and starts its first attempt (the
        // event is made inside the attempt, as its body always was): in the closed model the
        // driver's, made as it handed out the ticket (with no wait since).
        let (first, late) = match ctx.open_model {
            false => (Stamp::of(clock, ticket.intended.into_std()), false),
            true => {
                let now = Stamp::now(clock);
                let behind = now.at.saturating_duration_since(ticket.intended.into_std());
                (now, behind >= ctx.late_after)
            }
        };
        let sent_us = first.unix_us(clock) / 1000 * 1000;
        let event = if renders_body {
            ctx.workload.event_unrendered(ticket.seq, sent_us)
        } else {
            ctx.workload
                .event_into(ticket.seq, sent_us, std::mem::take(&mut spare))
        };
        let topic = &ctx.workload.topics()[event.topic];
        let mut attempt_no = 0u32;
        loop {
            let start = if attempt_no == 0 {
                if ticket.measured {
                    if let Some(t) = &ctx.observer {
                        // Before the request is written, so no delivery can come first.
                        t.published(ticket.seq, event.topic, first.at);
                    }
                }
                first
            } else {
                Stamp::now(clock)
            };
            // Stopped in flight: the attempt is abandoned and counted `cancelled`. The send is
            // pinned where it is made: passed by value, its whole state (over a KiB, with every
            // nested future's) would be copied once per attempt, and with a thousand workers
            // those are cache misses.
            // In a block of its own, so its state is gone before the record is queued below
            // (both live at once, the worker's state held the two side by side).
            if ticket.measured {
                stripe.start();
            }
            let mut a = {
                let send = pin!(ctx.target.send(topic, &event, start.at, &mut scratch));
                unless_stopped(send, &mut stop).await
            };
            let end = Stamp::now(clock);
            if a.outcome.is_topic_refusal()
                && ctx
                    .observer
                    .as_ref()
                    .is_some_and(|o| o.refusal_expected(event.topic, start.at, end.at))
            {
                // Its topic was deregistered meanwhile (--topic-churn): owed, not an error.
                a.outcome = Outcome::ExpectedRefusal;
            }
            attempt_no += 1;
            let class = a.outcome.class();
            let ok = class == Class::Accepted;
            // Retries are immediate, as the real publisher's client does (docs/protocol.md §3),
            // unless the answer said when to come back (`Retry-After`): then after that, if it
            // is before the attempt's deadline; else the event ends here.
            let mut last = ok || attempt_no >= max_attempts || !class.is_retryable();
            if !last {
                let elapsed = end.at.saturating_duration_since(start.at);
                match retry_wait(a.retry_after.secs(), elapsed, ctx.attempt_timeout) {
                    RetryWait::Now => {}
                    RetryWait::GiveUp => last = true,
                    // Before the attempt is recorded: a stop ends the wait, and the stop
                    // below then ends the event as recorded.
                    RetryWait::After(d) => sleep_unless_stopped(d, &mut stop).await,
                }
            }
            if ticket.measured {
                let intended = match (ctx.open_model, attempt_no) {
                    (false, _) => None,
                    (true, 1) => Some(Stamp::of(clock, ticket.intended.into_std())),
                    (true, _) => Some(start),
                };
                let span =
                    AttemptSpan::of_stamps(clock, &level_start, intended.as_ref(), &start, &end);
                // An event of one attempt: its latency is the attempt's (the stripe derives it).
                let whole = attempt_no == 1 && last;
                {
                    // One lock for the attempt and, when it is the event's last, the event.
                    let mut s = stripe.lock();
                    s.record_attempt(&span, &a, whole);
                    if last {
                        s.record_event(end.us_since(&first), attempt_no, ok, whole, late);
                    }
                }
                shared.record(worker, &span, class, event.topic, &a.server_timing);
                if let Some(out) = &ctx.attempts {
                    let r = AttemptRecord {
                        start_unix_us: span.start_unix_us,
                        elapsed_us: span.us,
                        outcome: a.outcome,
                        status: a.status,
                        bytes_received: a.bytes_received,
                        bytes_sent: a.bytes_sent,
                        channel: event.channel as u32,
                        worker: worker as u32,
                        load: ctx.level_load,
                        workers: ctx.level_workers,
                    };
                    // Fails only after the consumer stopped, which it reports at the end.
                    let _ = out.send(r).await;
                }
                if ok {
                    if let Some(t) = &ctx.observer {
                        t.accepted(ticket.seq, end.at);
                    }
                }
                if !last && stop.is_stopped() {
                    // Stopped before a retry: the event ends with this attempt.
                    // Never whole: its attempt was recorded as not ending it.
                    stripe.lock().record_event(
                        end.us_since(&first),
                        attempt_no,
                        false,
                        false,
                        late,
                    );
                    last = true;
                }
            }
            if last || stop.is_stopped() {
                break;
            }
        }
        spare = event.body;
    }
}

/// Sleep for `d`, or less if the stop comes first.
async fn sleep_unless_stopped(d: std::time::Duration, stop: &mut StopWatch) {
    let mut sleep = pin!(tokio::time::sleep(d));
    std::future::poll_fn(|cx| match sleep.as_mut().poll(cx).is_ready() {
        true => Poll::Ready(()),
        false if stop.poll_stopped(cx) => Poll::Ready(()),
        false => Poll::Pending,
    })
    .await
}

/// `send`, or [`Attempt::CANCELLED`] once the stop comes while it is in flight. A send that is
/// ready wins over a stop seen in the same poll, as with a `biased` select.
///
/// A plain future, not an `async fn`: that would be one more state machine between the
/// worker and its send, resumed on every wake.
fn unless_stopped<'a, F: Future<Output = Attempt>>(
    mut send: Pin<&'a mut F>,
    stop: &'a mut StopWatch,
) -> impl Future<Output = Attempt> + 'a {
    std::future::poll_fn(move |cx| {
        if let Poll::Ready(a) = send.as_mut().poll(cx) {
            return Poll::Ready(a);
        }
        if stop.poll_stopped(cx) {
            return Poll::Ready(Attempt::CANCELLED);
        }
        Poll::Pending
    })
}
