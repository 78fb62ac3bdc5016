//! Broker mode (`--servicebus`): the hub on Azure Service Bus, as azure-websubhub is. Each
//! WebSub topic is a Service Bus topic, each subscriber a subscription with a peek-lock
//! receive loop, and a publish is answered after the broker's send settles.
//!
//! - `publish`: the send, the answer map, `Server-Timing: broker`;
//! - `subscription`: a subscriber's receive loop and its deliveries;
//! - `timings`: each accepted publish's stages, for its deliveries' `Hub-Timing`;
//! - `stats`: the broker's counts in `/stats` and `/metrics`.
//!
//! docs/hub-servicebus.md describes the mode.

pub(crate) mod publish;
pub(crate) mod subscription;
pub(crate) mod timings;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hubload_servicebus::{
    ConnectionString, ReceiverConfig, SbError, SbReceiver, SbSender, SendOutcome, SenderConfig,
};
use tokio_util::sync::CancellationToken;

pub(crate) use crate::broker_stats::BrokerCounters;
pub use crate::broker_stats::{render_metrics, BrokerStats, SendCounts};
use crate::sign::Signer;

/// The hub's connection to Service Bus: one pooled sender, and the receive loops of its
/// subscribers by (topic, callback).
#[derive(Debug)]
pub struct Broker {
    cs: ConnectionString,
    pub(crate) sender: SbSender,
    pub(crate) counters: Arc<BrokerCounters>,
    /// The stages of the publishes sent, for their deliveries.
    pub(crate) timings: Arc<timings::Timings>,
    loops: Mutex<HashMap<(String, String), CancellationToken>>,
    /// Link credit of each subscription's receiver.
    credit: u32,
}

impl Broker {
    /// Connect to the namespace (or emulator) of `cs` and check the key with one put-token.
    /// Errors are one line and never contain the key.
    pub async fn connect(cs: ConnectionString) -> Result<Broker, SbError> {
        let sender = SbSender::connect(SenderConfig {
            connection: cs.clone(),
            connections: 2,
            connect_timeout: Duration::from_secs(10),
            send_timeout: Duration::from_secs(10),
            token_ttl: Duration::from_secs(3600),
        })
        .await?;
        Ok(Broker {
            cs,
            sender,
            counters: Arc::default(),
            timings: Arc::default(),
            loops: Mutex::default(),
            credit: 16,
        })
    }

    /// The broker's counts now.
    pub fn stats(&self) -> BrokerStats {
        self.counters.snapshot()
    }

    /// Make sure `topic` exists at the broker: attach its sender link (the emulator makes
    /// the topic on first use; Azure answers not-found for a topic it does not have).
    pub(crate) async fn ensure_topic(&self, topic: &str) -> Result<(), SendOutcome> {
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

    /// Attach a receiver on the subscription of `callback` to `topic`: against the emulator
    /// this makes the subscription, so it exists before the subscriber is told it is
    /// subscribed. Bounded by the receiver's connect timeout.
    pub(crate) async fn open_receiver(
        &self,
        topic: &str,
        callback: &str,
    ) -> Result<SbReceiver, SbError> {
        SbReceiver::connect(self.receiver_config(topic, callback)).await
    }

    /// Start (or, for a renewal, keep) the receive loop of `callback` on `topic`, on
    /// `attached` when given.
    pub(crate) fn subscribe(
        &self,
        delivery: subscription::Delivery,
        callback: &str,
        secret: Option<&[u8]>,
        stop_all: &CancellationToken,
        attached: Option<SbReceiver>,
    ) {
        let key = (delivery.topic.name.clone(), callback.to_owned());
        let mut loops = self.loops.lock().unwrap_or_else(|e| e.into_inner());
        if loops.get(&key).is_some_and(|t| !t.is_cancelled()) {
            if let Some(rx) = attached {
                tokio::spawn(rx.close());
            }
            return;
        }
        let stop = stop_all.child_token();
        loops.insert(key, stop.clone());
        let cfg = self.receiver_config(&delivery.topic.name, callback);
        let signer = secret.map(Signer::new);
        tokio::spawn(subscription::receive_loop(
            cfg,
            attached,
            delivery,
            callback.to_owned(),
            signer,
            stop,
            self.timings.clone(),
        ));
    }

    /// Stop the receive loop of `callback` on `topic`.
    pub(crate) fn unsubscribe(&self, topic: &str, callback: &str) {
        let mut loops = self.loops.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = loops.remove(&(topic.to_owned(), callback.to_owned())) {
            t.cancel();
        }
    }

    /// Stop every receive loop of `topic` (deregister).
    pub(crate) fn remove_topic(&self, topic: &str) {
        let mut loops = self.loops.lock().unwrap_or_else(|e| e.into_inner());
        loops.retain(|(t, _), stop| {
            if t == topic {
                stop.cancel();
            }
            t != topic
        });
    }
}
