//! Broker subscribers (`--target servicebus --subscribers N`): each subscriber of the fleet is
//! a peek-lock receiver on subscription `hubload-<i>` of its topic, and every message it gets
//! is checked and counted exactly like a WebSub delivery (`server::deliver`).
//!
//! The behaviour knobs' answer is the settlement: 2xx completes, 500 abandons, 410
//! dead-letters. A message delivered again after it was acknowledged is a redelivery (the
//! broker's delivery count says so), not a duplicate; dead-lettered ones are read from the
//! dead-letter sub-queue and counted, not lost (`broker_dlq.rs`).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use hubload_servicebus::{ConnectionString, ReceiverConfig, SbReceiver};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::behaviour::Answer;
use super::broker_dlq::{dead_letter_loop, next_message};
use super::fleet::Fleet;
use super::fleet_shared::{Intent, Shared};
use super::receive;
use super::server::deliver;
use super::subscribe::SubscriptionPhase;

/// Receivers attached at once while subscribing.
const ATTACH_CONCURRENCY: usize = 16;

/// Where and how the broker subscribers receive.
#[derive(Debug, Clone)]
pub struct BrokerSettings {
    /// The namespace (or emulator) and its key (Listen rights).
    pub connection: ConnectionString,
    /// Link credit of each receiver (prefetch).
    pub credit: u32,
    /// Bound on connecting and attaching one receiver.
    pub connect_timeout: Duration,
    /// Bound on one settlement.
    pub settle_timeout: Duration,
}

/// The running receive loops of a fleet's broker subscribers.
#[derive(Debug)]
pub struct BrokerReceivers {
    stop: CancellationToken,
    tasks: JoinSet<()>,
    restarts: Arc<AtomicU64>,
}

/// The subscription subscriber `index` of a topic receives from.
pub fn subscription_name(index: usize) -> String {
    format!("hubload-{index}")
}

impl Fleet {
    /// Attach one receiver per subscriber (its topic's `hub_topic` is the Service Bus topic),
    /// at most `ATTACH_CONCURRENCY` at once, each within `connect_timeout`; start their
    /// receive loops. A subscriber whose receiver attached is verified, one that did not is
    /// refused (it expects nothing), as a WebSub subscription phase leaves them.
    pub async fn attach_broker(
        &self,
        s: &BrokerSettings,
        cancel: &CancellationToken,
    ) -> (SubscriptionPhase, BrokerReceivers) {
        let sh = self.shared.clone();
        let stop = CancellationToken::new();
        let restarts = Arc::new(AtomicU64::new(0));
        let mut tasks = JoinSet::new();
        let mut phase = SubscriptionPhase {
            requested: sh.subs.len() as u64,
            ..SubscriptionPhase::default()
        };
        let started = std::time::Instant::now();
        let mut attaching = JoinSet::new();
        let mut next = 0;
        while next < sh.subs.len() || !attaching.is_empty() {
            while next < sh.subs.len() && attaching.len() < ATTACH_CONCURRENCY {
                let sub = &sh.subs[next];
                sub.set_intent(Intent::Subscribing);
                let mut cfg = ReceiverConfig::new(
                    s.connection.clone(),
                    &sub.hub_topic,
                    &subscription_name(sub.index),
                );
                cfg.credit = s.credit;
                cfg.connect_timeout = s.connect_timeout;
                cfg.settle_timeout = s.settle_timeout;
                let i = next;
                attaching.spawn(async move { (i, SbReceiver::connect(cfg.clone()).await, cfg) });
                next += 1;
            }
            let joined = tokio::select! {
                j = attaching.join_next() => j,
                _ = cancel.cancelled() => break,
            };
            let Some(Ok((i, attached, cfg))) = joined else {
                continue;
            };
            match attached {
                Ok(rx) => {
                    sh.subs[i].set_intent(Intent::Verified);
                    phase.accepted += 1;
                    phase.verified += 1;
                    let (sh2, stop2, restarts2) = (sh.clone(), stop.clone(), restarts.clone());
                    tasks.spawn(receive_loop(sh2, i, rx, stop2, restarts2));
                    // Its dead-letter sub-queue, read alongside (broker_dlq.rs).
                    let (sh2, stop2, restarts2) = (sh.clone(), stop.clone(), restarts.clone());
                    tasks.spawn(dead_letter_loop(sh2, i, cfg, stop2, restarts2));
                }
                Err(e) => {
                    sh.subs[i].set_intent(Intent::Denied);
                    phase.refused += 1;
                    phase.first_error.get_or_insert_with(|| e.to_string());
                }
            }
        }
        // Cut short by the signal: what was not attached is not the broker's failure.
        phase.cancelled = phase.requested - phase.verified - phase.refused;
        attaching.abort_all();
        phase.duration_s = started.elapsed().as_secs_f64();
        let receivers = BrokerReceivers {
            stop,
            tasks,
            restarts,
        };
        (phase, receivers)
    }
}

impl BrokerReceivers {
    /// Link re-attaches and connection reopens over all receivers so far.
    pub fn restarts(&self) -> u64 {
        self.restarts.load(Relaxed)
    }

    /// Stop every receive loop and close the receivers (each close is bounded).
    pub async fn close(mut self) {
        self.stop.cancel();
        while self.tasks.join_next().await.is_some() {}
    }
}

/// Receive, check and settle until `stop`, then close the receiver.
async fn receive_loop(
    sh: Arc<Shared>,
    i: usize,
    mut rx: SbReceiver,
    stop: CancellationToken,
    restarts: Arc<AtomicU64>,
) {
    let sub = &sh.subs[i];
    let mut seen_restarts = 0;
    while !stop.is_cancelled() {
        let Some(msg) = next_message(&mut rx).await else {
            continue;
        };
        let received_ns = receive::now_ns(&sh.tracker);
        let duplicates = sub.state().counts.duplicates;
        let answer = deliver(
            &sh,
            sub,
            None,
            &msg.body,
            received_ns,
            &crate::result::ServerTimings::NONE,
        );
        if msg.delivery_count > 0 {
            // Delivered again by the broker after an acknowledgement it never applied: a
            // redelivery, counted apart from duplicates.
            let mut st = sub.state();
            if st.counts.duplicates > duplicates {
                st.counts.duplicates -= 1;
                st.counts.redeliveries += 1;
            }
        }
        // A settlement that fails (the link went) leaves the message locked until its lock
        // runs out; the broker then delivers it again and the check above counts it.
        let _ = match answer {
            Answer::Ok => rx.complete(&msg).await,
            Answer::Error => rx.abandon(&msg).await,
            Answer::Gone => {
                rx.dead_letter(&msg, "HubloadSubscriberGone", "the subscriber answered 410")
                    .await
            }
        };
        let r = rx.restarts();
        restarts.fetch_add(r - seen_restarts, Relaxed);
        seen_restarts = r;
    }
    rx.close().await;
}
