//! Broker subscribers' dead-letter readers: one receiver per subscriber on its subscription's
//! dead-letter sub-queue (`<topic>/Subscriptions/hubload-<i>/$DeadLetterQueue`), so that a
//! message the broker gave up on (`MaxDeliveryCountExceeded`, an expired time-to-live) or the
//! subscriber dead-lettered (a 410 answer) is counted `dead_lettered`, with its
//! `DeadLetterReason`, instead of lost.
//!
//! Each message read is counted once (`SubState::dead_lettered`) and completed, so the next run
//! on these (hubload's own) subscriptions does not read it again and count it late.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use hubload_servicebus::{Received, ReceiverConfig, SbReceiver};
use tokio_util::sync::CancellationToken;

use super::fleet_shared::Shared;
use super::receive::check;

/// How long one receive call waits before the loop looks at its stop token again.
const RECEIVE_WAIT: Duration = Duration::from_millis(200);

/// The next message within RECEIVE_WAIT, or `None` (none came, or the receiver failed: it
/// waits RECEIVE_WAIT then, and the next receive re-attaches, counted in its restarts). The
/// subscription's receive loop (broker.rs) takes its messages the same way.
pub(super) async fn next_message(rx: &mut SbReceiver) -> Option<Received> {
    match rx.receive(RECEIVE_WAIT).await {
        Ok(m) => m,
        Err(_) => {
            tokio::time::sleep(RECEIVE_WAIT).await;
            None
        }
    }
}

/// The reason counted for a dead-lettered message that carries none.
const NO_REASON: &str = "(none)";

/// Read subscriber `i`'s dead-letter sub-queue (`cfg`, its subscription's receiver
/// settings) until `stop`: attach (again after each failure, RECEIVE_WAIT apart), count and
/// complete every message, then close.
pub(super) async fn dead_letter_loop(
    sh: Arc<Shared>,
    i: usize,
    mut cfg: ReceiverConfig,
    stop: CancellationToken,
    restarts: Arc<AtomicU64>,
) {
    let sub = &sh.subs[i];
    cfg.dead_letter = true;
    let mut rx = loop {
        let attached = tokio::select! {
            r = SbReceiver::connect(cfg.clone()) => r,
            _ = stop.cancelled() => return,
        };
        match attached {
            Ok(rx) => break rx,
            Err(e) => {
                tracing::debug!(entity = %cfg.entity(), "dead-letter receiver: {e}");
                tokio::select! {
                    _ = tokio::time::sleep(RECEIVE_WAIT) => {}
                    _ = stop.cancelled() => return,
                }
            }
        }
    };
    let mut seen_restarts = 0;
    while !stop.is_cancelled() {
        let Some(msg) = next_message(&mut rx).await else {
            continue;
        };
        let (base, w, t) = (sh.base.load(Relaxed), &sh.workload, &sh.tracker);
        let c = check(w, t, sub.topic, base, None, None, &msg.body);
        let reason = msg.property("DeadLetterReason").unwrap_or(NO_REASON);
        sub.state().dead_lettered(c, reason);
        if sh.closing.load(Relaxed) {
            // The level's close waits for what is missing: a dead-lettered event is not.
            sh.delivered.notify_one();
        }
        // A completion that fails leaves the message locked; it is read again when its lock
        // runs out, and `dead_lettered` does not count it twice.
        let _ = rx.complete(&msg).await;
        let r = rx.restarts();
        restarts.fetch_add(r - seen_restarts, Relaxed);
        seen_restarts = r;
    }
    rx.close().await;
}
