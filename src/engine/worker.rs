//! The one worker loop both load models share: ticket → event → attempts (with retries) → stats.

use std::sync::{Arc, Mutex};

use tokio::time::Instant;

use super::attempt::AttemptRecord;
use super::context::LevelContext;
use super::driver::Driver;
use super::stripe::Stripe;
use crate::result::{Attempt, Class};
use crate::stats::{AttemptTimes, SharedLevel};
use crate::targets::Target;

/// Run tickets until the driver says stop, recording into stripe `worker % stripes.len()`.
pub(crate) async fn worker_loop<T: Target>(
    ctx: Arc<LevelContext<T>>,
    driver: Arc<Driver>,
    stripes: Arc<[Mutex<Stripe>]>,
    shared: Arc<SharedLevel>,
    worker: usize,
    level_start: Instant,
) {
    let stripe = &stripes[worker % stripes.len()];
    let lock = || stripe.lock().unwrap_or_else(|e| e.into_inner());
    let max_attempts = ctx.retries + 1;
    // A child token per worker: its waiter is this worker's alone, so watching for the stop on
    // every attempt never contends with the other workers.
    let stop = ctx.cancel.child_token();
    let stopped = stop.cancelled();
    tokio::pin!(stopped);
    while let Some(ticket) = driver.next().await {
        if stop.is_cancelled() {
            // A ticket queued before the stop: no request starts after it.
            break;
        }
        let iat_ms = ctx.clock.unix_us(Instant::now().into_std()) / 1000;
        let event = ctx.workload.event(ticket.seq, iat_ms);
        let topic = &ctx.workload.topics()[event.topic];
        let mut attempt_no = 0u32;
        let mut first_start = None;
        let mut end;
        let mut ok = false;
        loop {
            let start = Instant::now();
            // The event starts with its first attempt.
            if first_start.is_none() && ticket.measured {
                if let Some(t) = &ctx.delivery {
                    // Before the request is written, so no delivery can come first.
                    t.note_published(ticket.seq, event.topic, start.into_std());
                }
            }
            first_start.get_or_insert(start);
            // Stopped in flight: the attempt is abandoned and counted `cancelled`.
            let a = tokio::select! {
                biased;
                a = ctx.target.send(topic, &event) => a,
                _ = &mut stopped => Attempt::CANCELLED,
            };
            end = Instant::now();
            attempt_no += 1;
            let class = a.outcome.class();
            if ticket.measured {
                let intended = if attempt_no == 1 {
                    ticket.intended
                } else {
                    start
                };
                let times = AttemptTimes {
                    level_start: level_start.into_std(),
                    intended: ctx.open_model.then(|| intended.into_std()),
                    start: start.into_std(),
                    end: end.into_std(),
                };
                let us = (end - start).as_micros() as u64;
                lock()
                    .stats
                    .record_attempt_without_topic(&ctx.clock, times, &a);
                shared.record(worker, times, class, event.topic);
                if let Some(out) = &ctx.attempts {
                    let r = AttemptRecord {
                        start_unix_us: ctx.clock.unix_us(start.into_std()),
                        elapsed_us: us,
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
            }
            if class == Class::Accepted {
                if let (Some(t), true) = (&ctx.delivery, ticket.measured) {
                    t.note_accepted(ticket.seq, end.into_std());
                }
                ok = true;
                break;
            }
            // Retries are immediate, as the real publisher's client does (docs/protocol.md §3).
            if attempt_no >= max_attempts || !class.is_retryable() || stop.is_cancelled() {
                break;
            }
        }
        if ticket.measured {
            lock().stats.record_event(
                first_start.unwrap_or(end).into_std(),
                end.into_std(),
                attempt_no,
                ok,
            );
        }
    }
}
