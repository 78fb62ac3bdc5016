//! End-to-end delivery in a run: the subscriber fleet (WebSub callbacks, or Service Bus
//! receivers) started and subscribed after registration, a delivery level opened and closed
//! around each load level, unsubscribed (or detached) at the end.
//!
//! The model (what is counted, the grace rule, the clocks) is docs/delivery.md.

use std::sync::Arc;

use std::time::Duration;

use anyhow::Context;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::{DeliveryConfig, RunConfig};
use crate::engine::OwnTopics;
use crate::report::model::delivery_report::LevelDelivery;
use crate::shard_contract::ShardSlot;
use crate::subscriber::{
    BrokerReceivers, BrokerSettings, ChurnRunner, DeliveryTracker, Fleet, FleetConfig,
    PhaseSettings, SubscriptionPhase,
};
use crate::workload::{Topic, Workload};

/// Ring slots of the tracker: what can be in flight plus the grace window. A slot reused
/// before its delivery arrives only moves that sample to the body's wall-clock send time.
const TRACKER_SLOTS: usize = 1 << 18;

/// Timeout of each subscription request, and of the wait for the hub's verifications.
const PHASE_TIMEOUT: Duration = Duration::from_secs(10);

/// The fleet of one run path.
pub(crate) struct DeliveryRun {
    fleet: Fleet,
    settings: PhaseSettings,
    grace: Duration,
    unsubscribe: bool,
    /// `--subscriber-churn`, per second.
    churn: Option<f64>,
    /// The open level's churn, stopped when the level closes.
    churning: std::sync::Mutex<Option<ChurnRunner>>,
    /// Service Bus: the subscribers are broker receivers (`subscriber/broker.rs`), attached
    /// by [`DeliveryRun::subscribe`] and closed by [`DeliveryRun::finish`].
    broker: Option<BrokerSettings>,
    receivers: tokio::sync::Mutex<Option<BrokerReceivers>>,
}

impl DeliveryRun {
    /// Bind the callback server for the run's first topics as `--subscribe-topics` says, of
    /// those in `mine` (this shard's): the shards together subscribe what one process would.
    /// Each subscribes to `<topic_prefix><name>`, the `hub.topic` the publishes name (the
    /// topic URL in the websub dialect: a spec hub keys subscriptions by it).
    pub(crate) async fn start(
        cfg: &RunConfig,
        d: &DeliveryConfig,
        workload: &Arc<Workload>,
        mine: &[Topic],
        (hub_url, topic_prefix): (&url::Url, &str),
    ) -> anyhow::Result<Self> {
        let chosen = d.topics.of(workload.topics().len());
        let fc = FleetConfig {
            listen: d.listen,
            callback_url: d.callback_url.as_ref().map(|u| u.to_string()),
            per_topic: d.subscribers,
            topics: mine
                .iter()
                .filter(|t| t.index < chosen)
                .map(|t| (t.index, format!("{topic_prefix}{}", t.name)))
                .collect(),
            secret: d.secret.clone(),
            lease_seconds: d.lease_seconds,
            behaviour: d.behaviour.clone(),
            deadlines: Default::default(),
        };
        let tracker = Arc::new(DeliveryTracker::new(TRACKER_SLOTS));
        let fleet = Fleet::start(fc, workload.clone(), tracker)
            .await
            .with_context(|| {
                format!(
                    "cannot listen for callbacks on --callback-listen {}",
                    d.listen
                )
            })?;
        mark_quiet(&fleet, cfg, workload);
        tracing::info!(
            subscribers = fleet.len(),
            callbacks = %fleet.local_addr(),
            "subscriber fleet listening"
        );
        Ok(DeliveryRun {
            fleet,
            settings: PhaseSettings {
                hub_url: hub_url.clone(),
                connect_to: cfg.target.resolve.for_url(hub_url),
                headers: cfg.target.hub_headers.clone(),
                concurrency: cfg.register_concurrency as usize,
                timeout: PHASE_TIMEOUT.max(cfg.client.timeout),
                http2: cfg.http.version == crate::config::HttpVersion::Http2,
            },
            grace: d.grace,
            unsubscribe: d.unsubscribe,
            // The shards together churn at the run's rate, each its own subscribers.
            churn: d
                .churn
                .map(|r| r / f64::from(cfg.shard.as_ref().map_or(1, |s| s.count.max(1)))),
            churning: std::sync::Mutex::new(None),
            broker: None,
            receivers: tokio::sync::Mutex::new(None),
        })
    }

    /// Service Bus: a fleet without a callback server whose subscribers are peek-lock
    /// receivers on subscription `hubload-<i>` of each chosen topic (the topic named as the
    /// sends name it: `--sb-topics per-topic` only, since one Service Bus topic for all would
    /// give every receiver every topic's events).
    pub(crate) fn start_broker(
        cfg: &RunConfig,
        d: &DeliveryConfig,
        workload: &Arc<Workload>,
        mine: &[Topic],
        connection: hubload_servicebus::ConnectionString,
    ) -> anyhow::Result<Self> {
        if cfg.target.sb_topics != crate::config::SbTopics::PerTopic {
            anyhow::bail!(
                "--subscribers with --target servicebus needs --sb-topics per-topic (one Service Bus topic per workload topic)"
            );
        }
        if d.churn.is_some() {
            anyhow::bail!("--subscriber-churn is for WebSub subscribers, not --target servicebus");
        }
        let chosen = d.topics.of(workload.topics().len());
        let fc = FleetConfig {
            listen: d.listen,
            callback_url: None,
            per_topic: d.subscribers,
            topics: mine
                .iter()
                .filter(|t| t.index < chosen)
                .map(|t| (t.index, t.name.to_string()))
                .collect(),
            secret: None,
            lease_seconds: 0,
            behaviour: d.behaviour.clone(),
            deadlines: Default::default(),
        };
        let tracker = Arc::new(DeliveryTracker::new(TRACKER_SLOTS));
        let fleet = Fleet::without_server(fc, workload.clone(), tracker);
        mark_quiet(&fleet, cfg, workload);
        let timeout = PHASE_TIMEOUT.max(cfg.client.timeout);
        Ok(DeliveryRun {
            fleet,
            settings: PhaseSettings {
                hub_url: url::Url::parse("amqp://servicebus.invalid/").expect("a valid URL"),
                connect_to: Default::default(),
                headers: cfg.target.hub_headers.clone(),
                concurrency: 1,
                timeout,
                http2: false,
            },
            grace: d.grace,
            unsubscribe: false,
            churn: None,
            churning: std::sync::Mutex::new(None),
            broker: Some(BrokerSettings {
                connection,
                credit: cfg.target.sb_receiver_credit,
                connect_timeout: timeout,
                settle_timeout: cfg.client.timeout,
            }),
            receivers: tokio::sync::Mutex::new(None),
        })
    }

    /// The handle `--topic-churn` takes churned topics' subscribers out and back in with.
    pub(crate) fn topic_subscribers(&self) -> crate::subscriber::TopicSubscribers {
        self.fleet.topic_subscribers(&self.settings)
    }

    /// The live page's handle on the levels' deliveries (`--web`).
    pub(crate) fn live_view(&self) -> crate::subscriber::DeliveryView {
        self.fleet.live_view()
    }

    /// What the publishing workers tell.
    pub(crate) fn tracker(&self) -> Arc<DeliveryTracker> {
        self.fleet.tracker().clone()
    }

    /// Subscribe every subscriber and wait for the hub's verifications (Service Bus: attach
    /// every receiver).
    pub(crate) async fn subscribe(&self, cancel: &CancellationToken) -> SubscriptionPhase {
        let p = match &self.broker {
            Some(b) => {
                let (p, receivers) = self.fleet.attach_broker(b, cancel).await;
                *self.receivers.lock().await = Some(receivers);
                p
            }
            None => self.fleet.subscribe(&self.settings, cancel).await,
        };
        if p.verified < p.requested {
            tracing::warn!(
                requested = p.requested,
                verified = p.verified,
                first = p.first_error.as_deref().unwrap_or(""),
                "not every subscription was verified; unverified subscribers expect nothing"
            );
        }
        p
    }

    /// Refuse a run none of whose subscriptions the hub verified.
    pub(crate) fn check(p: &SubscriptionPhase, hub: &url::Url) -> anyhow::Result<()> {
        if p.requested > 0 && p.verified == 0 {
            let why = p
                .first_error
                .as_deref()
                .unwrap_or("no verification arrived");
            anyhow::bail!("cannot subscribe at the hub {hub}: {why}");
        }
        Ok(())
    }

    /// Start a delivery level (between load levels only), right before the load level starts:
    /// its per-second series count from now + `warmup`, the level's measured start.
    pub(crate) fn open_level(&self, first_seq: u64, warmup: Duration) {
        self.fleet.open_level_at(first_seq, Instant::now() + warmup);
        if let Some(rate) = self.churn {
            let runner = self.fleet.start_churn(rate, &self.settings);
            *self.churning.lock().unwrap_or_else(|e| e.into_inner()) = Some(runner);
        }
    }

    /// Right after the level's last publish returned: wait (on deliveries, up to the grace, or
    /// until `cancel` fires) and report the level. `span` is the level's measured span.
    pub(crate) async fn close_level(
        &self,
        span: Duration,
        cancel: &CancellationToken,
    ) -> LevelDelivery {
        // Churn ends with the level's publishes; cycles in flight finish first, so the level
        // closes on settled subscriptions.
        let runner = self
            .churning
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(r) = runner {
            r.stop(cancel).await;
        }
        let backlog = self.fleet.backlog();
        let waited = Instant::now();
        let stats = self.fleet.close_level_or_stop(self.grace, cancel).await;
        LevelDelivery {
            stats,
            seconds: span.as_secs_f64() + waited.elapsed().as_secs_f64(),
            backlog,
        }
    }

    /// Unsubscribe at the end, unless `--no-unsubscribe`.
    pub(crate) async fn finish(&self, cancel: &CancellationToken) -> Option<SubscriptionPhase> {
        if let Some(r) = self.receivers.lock().await.take() {
            tracing::info!(restarts = r.restarts(), "broker subscribers closing");
            r.close().await;
        }
        let out = match self.unsubscribe {
            true => Some(self.fleet.unsubscribe(&self.settings, cancel).await),
            false => None,
        };
        self.fleet.shutdown();
        out
    }
}

/// Owner striping: in a sharded run with subscribers (or topic churn: `striped`), this shard
/// sends only the events of the topics it owns (`mine`), the topics whose subscribers it holds,
/// so every delivery is checked by the process that published it, on one monotonic clock
/// (docs/delivery.md, "Sharded runs").
pub(crate) fn own_topics(
    striped: bool,
    workload: &Arc<Workload>,
    shard: ShardSlot,
    mine: &[Topic],
) -> Option<OwnTopics> {
    if !(striped && shard.is_sharded()) {
        return None;
    }
    if mine.is_empty() {
        tracing::warn!(
            shard = shard.index,
            "this shard owns no topic (fewer tenants than shards, or topics without a tenant): it sends nothing"
        );
    }
    Some(OwnTopics::new(
        workload.clone(),
        mine.iter().map(|t| t.index),
    ))
}

/// A path's fleet (`run`: WebSub callbacks, or Service Bus receivers), subscribed and its
/// phase recorded; a run none of whose subscriptions `hub_url` verified is refused.
pub(crate) async fn subscribed(
    run: DeliveryRun,
    cancel: &CancellationToken,
    hub_url: &url::Url,
    rec: &mut super::record::RunRecord,
) -> anyhow::Result<DeliveryRun> {
    let phase = run.subscribe(cancel).await;
    // Recorded first, so a failed phase's counts and reason are in summary.json.
    rec.set_subscription(&phase)?;
    // A phase cut short by the signal is not the hub's failure: the run ends with 130.
    if !cancel.is_cancelled() {
        DeliveryRun::check(&phase, hub_url)?;
    }
    Ok(run)
}

/// With `--surge`, mark the subscribers of the quiet tenants' topics (every tenant's but the
/// surging ones'; a topic no one tenant owns is left out), for the delivery isolation verdict.
fn mark_quiet(fleet: &Fleet, cfg: &RunConfig, workload: &Workload) {
    let Some(surge) = &cfg.surge else { return };
    let topics = workload.topics();
    fleet.mark_quiet(|t| {
        topics
            .get(t)
            .and_then(|t| t.tenant)
            .is_some_and(|tenant| !surge.tenants.contains(&tenant))
    });
}
