//! What the fleet's parts share: the subscribers (intent and per-level state) and the fleet-wide settings the callback handlers read.
//!
//! Its own module so that the fleet (which starts the callback server) and the server (which
//! reads these) both depend on it and not on each other.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use super::behaviour::Behaviour;
use super::churn_stats::ChurnStats;
use super::delivery_hists::SharedHists;
use super::live_levels::LiveLevels;
use super::receive::{SignatureKey, SubState};
use super::second_series::SecondSeries;
use super::tracker::DeliveryTracker;
use crate::secret::Secret;
use crate::workload::Workload;

/// A subscriber's intent, as the verification requests have left it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Intent {
    /// Nothing asked yet.
    None = 0,
    /// Subscribe requested; waiting for the hub's challenge.
    Subscribing = 1,
    /// The hub verified the subscription (challenge echoed).
    Verified = 2,
    /// The hub denied it (`hub.mode=denied`).
    Denied = 3,
    /// Unsubscribe requested; waiting for the challenge.
    Unsubscribing = 4,
    /// The hub verified the unsubscription.
    Unsubscribed = 5,
}

impl Intent {
    fn from_u8(v: u8) -> Intent {
        match v {
            1 => Intent::Subscribing,
            2 => Intent::Verified,
            3 => Intent::Denied,
            4 => Intent::Unsubscribing,
            5 => Intent::Unsubscribed,
            _ => Intent::None,
        }
    }
}

/// One subscriber: a callback path for one topic.
#[derive(Debug)]
pub(crate) struct Subscriber {
    /// Workload topic index.
    pub topic: usize,
    /// Index among the topic's subscribers.
    pub index: usize,
    /// The `hub.topic` it subscribes to.
    pub hub_topic: String,
    intent: AtomicU8,
    state: Mutex<SubState>,
}

impl Subscriber {
    /// Subscriber `index` of workload topic `topic`, which subscribes to `hub_topic`; nothing asked yet.
    pub fn new(topic: usize, index: usize, hub_topic: &str) -> Subscriber {
        Subscriber {
            topic,
            index,
            hub_topic: hub_topic.to_owned(),
            intent: AtomicU8::new(Intent::None as u8),
            state: Mutex::new(SubState::new(0)),
        }
    }
    pub fn intent(&self) -> Intent {
        Intent::from_u8(self.intent.load(Relaxed))
    }
    pub fn set_intent(&self, i: Intent) {
        self.intent.store(i as u8, Relaxed);
    }
    pub fn state(&self) -> MutexGuard<'_, SubState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
    /// Whether it expects deliveries: verified by the hub and not gone (answered 410).
    pub fn listening(&self, st: &SubState) -> bool {
        self.intent() == Intent::Verified && !st.gone
    }

    /// `<topic>/<index>`: the callback path's tail and the per-subscriber stats key.
    pub fn key(&self) -> String {
        format!("{}/{}", self.topic, self.index)
    }
}

/// Everything the callback handlers and the phases share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub workload: Arc<Workload>,
    pub tracker: Arc<DeliveryTracker>,
    pub subs: Vec<Subscriber>,
    /// Per workload topic: its first subscriber's index in `subs`, or `u32::MAX`.
    pub first_sub: Vec<u32>,
    pub per_topic: usize,
    pub secret: Secret,
    /// `secret` as a keyed HMAC state, for checking every delivery's signature.
    pub key: SignatureKey,
    pub lease_seconds: u64,
    pub behaviour: Behaviour,
    /// The level's first sequence number.
    pub base: AtomicU64,
    /// Set while a level is closing: deliveries then wake the closer.
    pub closing: AtomicBool,
    pub delivered: Notify,
    /// Woken by every verification or denial.
    pub intents: Notify,
    /// `--subscriber-churn` has run: levels report their [`ChurnStats`].
    pub churn_on: AtomicBool,
    /// The open level's churn so far.
    pub churn: Mutex<ChurnStats>,
    /// The open level's measured start on the tracker's clock (ns): second 0 of its series.
    pub origin_ns: AtomicU64,
    /// The open level's deliveries per second (first acknowledged), every subscriber's.
    pub delivered_per_second: SecondSeries,
    /// The open level's delivery histograms, in a few slots.
    pub hists: SharedHists,
    /// The levels as the live page reads them (`live_view.rs`).
    pub live: LiveLevels,
    pub callback_base: String,
}

impl Shared {
    /// Wait, woken by every verification or denial, while `waiting()` holds, until `deadline`
    /// or until `cancel` fires.
    pub async fn wait_intents(
        &self,
        mut waiting: impl FnMut() -> bool,
        deadline: tokio::time::Instant,
        cancel: &tokio_util::sync::CancellationToken,
    ) {
        loop {
            let woken = self.intents.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if !waiting() || tokio::time::Instant::now() >= deadline || cancel.is_cancelled() {
                return;
            }
            tokio::select! {
                _ = woken => {}
                _ = cancel.cancelled() => {}
                _ = tokio::time::sleep_until(deadline) => {}
            }
        }
    }

    /// The open level's churn counters.
    pub fn churn_stats(&self) -> MutexGuard<'_, ChurnStats> {
        self.churn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The subscriber at callback path `/cb/<topic>/<index>`.
    pub fn sub(&self, topic: usize, index: usize) -> Option<&Subscriber> {
        let first = *self.first_sub.get(topic)?;
        if first == u32::MAX || index >= self.per_topic {
            return None;
        }
        self.subs.get(first as usize + index)
    }

    /// The callback URL the hub is given for `sub`.
    pub fn callback(&self, sub: &Subscriber) -> String {
        format!("{}/cb/{}/{}", self.callback_base, sub.topic, sub.index)
    }
}
