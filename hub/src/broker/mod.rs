//! Broker mode (`--servicebus`): the hub on Azure Service Bus, as azure-websubhub is. Each
//! WebSub topic is a Service Bus topic, each subscriber a subscription with a peek-lock
//! receive loop, and a publish is answered after the broker's send settles.
//!
//! Parts: `publish` (send, answer, `Server-Timing: broker`), `subscription` (the receive loop),
//! `deliver` (its workers), `admin` (entities), `timings` (`Hub-Timing` stages), `stats`.
//! docs/hub-servicebus.md describes the mode.

pub(crate) mod admin;
pub(crate) mod deliver;
pub(crate) mod publish;
pub(crate) mod subscription;
pub(crate) mod timings;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hubload_servicebus::{
    ConnectionString, ReceiverConfig, SbError, SbReceiver, SbSender, SendOutcome, SenderConfig,
};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub(crate) use crate::broker_stats::BrokerCounters;
pub use crate::broker_stats::{render_metrics, BrokerStats, SendCounts};
use crate::sign::Signer;

/// One subscriber's receive loop: its stop token, its lease, and its task.
#[derive(Debug)]
struct Loop {
    stop: CancellationToken,
    lease: subscription::Lease,
    task: JoinHandle<subscription::Ended>,
}

/// Longest an unsubscribe or deregister waits for a loop to end before it removes the
/// entity at the broker (a loop ends within one receive wait; a delivery in flight is
/// bounded by the delivery timeout).
const LOOP_END_WAIT: Duration = Duration::from_secs(30);

/// The hub's connection to Service Bus: one pooled sender, the administration API (when
/// there is one), and the receive loops of its subscribers by (topic, callback).
#[derive(Debug)]
pub struct Broker {
    cs: ConnectionString,
    pub(crate) sender: SbSender,
    pub(crate) counters: Arc<BrokerCounters>,
    admin: Option<Arc<admin::Admin>>,
    /// The stages of the publishes sent, for their deliveries.
    pub(crate) timings: Arc<timings::Timings>,
    loops: Mutex<HashMap<(String, String), Loop>>,
    /// Link credit of each subscription's receiver: at least the deliveries a loop may have
    /// in flight, so the broker is never what holds them back.
    credit: u32,
}

impl Broker {
    /// Connect to the namespace (or emulator) of `cs` and check the key with one put-token.
    /// Errors are one line and never contain the key. Entities are managed through
    /// `admin_endpoint` (`http://host:port` of an emulator's `--admin-listen`), or, when it
    /// is `None`, Azure's own (`https://<namespace>`); an emulator without one is left
    /// unmanaged (docs/hub-servicebus.md).
    pub async fn connect(
        cs: ConnectionString,
        admin_endpoint: Option<&str>,
    ) -> Result<Broker, SbError> {
        let sender = SbSender::connect(SenderConfig {
            connection: cs.clone(),
            connections: 2,
            connect_timeout: Duration::from_secs(10),
            send_timeout: Duration::from_secs(10),
            token_ttl: Duration::from_secs(3600),
        })
        .await?;
        let counters: Arc<BrokerCounters> = Arc::default();
        let endpoint = admin_endpoint
            .map(str::to_owned)
            .or_else(|| admin::default_endpoint(&cs));
        let admin = match endpoint {
            Some(e) => Some(Arc::new(
                admin::Admin::new(&e, &cs, counters.clone()).map_err(SbError::Config)?,
            )),
            None => None,
        };
        Ok(Broker {
            cs,
            sender,
            counters,
            admin,
            timings: Arc::default(),
            loops: Mutex::default(),
            credit: 16,
        })
    }

    /// Size each receiver's link credit for `in_flight` deliveries per subscription (the
    /// delivery concurrency × pipeline), 16 at least.
    pub(crate) fn set_in_flight(&mut self, in_flight: usize) {
        self.credit = u32::try_from(in_flight).unwrap_or(u32::MAX).max(16);
    }

    /// The broker's counts now.
    pub fn stats(&self) -> BrokerStats {
        self.counters.snapshot()
    }

    /// Make sure `topic` exists at the broker: create it through the administration API when
    /// there is one, then attach its sender link (the emulator without `--strict` makes the
    /// topic on first use; Azure answers not-found for a topic it does not have).
    pub(crate) async fn ensure_topic(&self, topic: &str) -> Result<(), SendOutcome> {
        if let Some(a) = &self.admin {
            a.create_topic(topic).await;
        }
        match self.sender.prepare(topic).await {
            SendOutcome::Accepted => Ok(()),
            other => Err(other),
        }
    }

    fn receiver_config(&self, topic: &str, callback: &str) -> ReceiverConfig {
        let mut cfg = ReceiverConfig::new(
            self.cs.clone(),
            topic,
            &subscription::subscription_name(callback),
        );
        cfg.credit = self.credit;
        cfg
    }

    /// Make the subscription of `callback` to `topic` (through the administration API when
    /// there is one; otherwise the emulator makes it at the attach) and attach a receiver on
    /// it, so it exists before the subscriber is told it is subscribed. Bounded by the
    /// administration timeout and the receiver's connect timeout.
    pub(crate) async fn open_receiver(
        &self,
        topic: &str,
        callback: &str,
    ) -> Result<SbReceiver, SbError> {
        if let Some(a) = &self.admin {
            a.create_subscription(topic, &subscription::subscription_name(callback))
                .await;
        }
        SbReceiver::connect(self.receiver_config(topic, callback)).await
    }

    /// Start the receive loop of `callback` on `topic`, on `attached` when given, for
    /// `lease`; a renewal of a running loop moves its lease instead.
    pub(crate) fn subscribe(
        &self,
        delivery: subscription::Delivery,
        callback: &str,
        secret: Option<&[u8]>,
        stop_all: &CancellationToken,
        attached: Option<SbReceiver>,
        lease: Duration,
    ) {
        let until = Instant::now() + lease;
        let key = (delivery.topic.name.clone(), callback.to_owned());
        let mut loops = self.loops.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(l) = loops.get(&key).filter(|l| !l.stop.is_cancelled()) {
            *l.lease.lock().unwrap_or_else(|e| e.into_inner()) = until;
            if let Some(rx) = attached {
                tokio::spawn(rx.close());
            }
            return;
        }
        let stop = stop_all.child_token();
        let lease = Arc::new(Mutex::new(until));
        let cfg = self.receiver_config(&delivery.topic.name, callback);
        let signer = secret.map(Signer::new);
        let ending = subscription::Ending {
            lease: lease.clone(),
            admin: self.admin.clone(),
        };
        let task = tokio::spawn(subscription::receive_loop(
            cfg,
            attached,
            delivery,
            callback.to_owned(),
            signer,
            stop.clone(),
            ending,
        ));
        loops.insert(key, Loop { stop, lease, task });
    }

    /// Stop the receive loop of `callback` on `topic`; once it has ended, delete its
    /// subscription at the broker (unless the loop ended on its own and saw to that).
    pub(crate) fn unsubscribe(&self, topic: &str, callback: &str) {
        let mut loops = self.loops.lock().unwrap_or_else(|e| e.into_inner());
        let Some(l) = loops.remove(&(topic.to_owned(), callback.to_owned())) else {
            return;
        };
        l.stop.cancel();
        let admin = self.admin.clone();
        let (topic, sub) = (topic.to_owned(), subscription::subscription_name(callback));
        tokio::spawn(async move {
            let ended = tokio::time::timeout(LOOP_END_WAIT, l.task).await;
            if let (Some(a), Ok(Ok(subscription::Ended::Stopped))) = (admin, ended) {
                a.delete_subscription(&topic, &sub).await;
            }
        });
    }

    /// A subscribe that was not verified (or whose topic is gone): delete the subscription
    /// [`Self::open_receiver`] made, unless a running loop (an earlier, verified subscribe of
    /// the same callback) uses it.
    pub(crate) fn subscribe_failed(&self, topic: &str, callback: &str) {
        let Some(admin) = self.admin.clone() else {
            return;
        };
        let loops = self.loops.lock().unwrap_or_else(|e| e.into_inner());
        let key = (topic.to_owned(), callback.to_owned());
        if loops.get(&key).is_some_and(|l| !l.stop.is_cancelled()) {
            return;
        }
        let (topic, sub) = (topic.to_owned(), subscription::subscription_name(callback));
        tokio::spawn(async move { admin.delete_subscription(&topic, &sub).await });
    }

    /// Stop every receive loop of `topic` (deregister); once they have ended, delete the
    /// topic, and with it its subscriptions, at the broker.
    pub(crate) fn remove_topic(&self, topic: &str) {
        let mut loops = self.loops.lock().unwrap_or_else(|e| e.into_inner());
        let keys: Vec<_> = loops.keys().filter(|(t, _)| t == topic).cloned().collect();
        let ending: Vec<Loop> = keys.iter().filter_map(|k| loops.remove(k)).collect();
        drop(loops);
        for l in &ending {
            l.stop.cancel();
        }
        let admin = self.admin.clone();
        let topic = topic.to_owned();
        tokio::spawn(async move {
            for l in ending {
                let _ = tokio::time::timeout(LOOP_END_WAIT, l.task).await;
            }
            if let Some(a) = admin {
                a.delete_topic(&topic).await;
            }
        });
    }
}
