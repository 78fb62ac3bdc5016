//! What every target path of a run shares: the level-independent inputs, the set-up phase
//! check and the topics this shard owns. Below `mod.rs`, `levels`, `websub` and `servicebus`.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::config::RunConfig;
use crate::engine::{AttemptSender, Live};
use crate::report::model::server_now::ServerNow;
use crate::shard_contract::ShardSlot;
use crate::stats::Clock;
use crate::targets::PhaseResult;
use crate::workload::{Topic, Workload};

/// What a level run needs besides the target.
#[derive(Clone)]
pub(crate) struct Shared<'a> {
    pub cfg: &'a RunConfig,
    pub workload: Arc<Workload>,
    pub clock: Clock,
    pub cancel: CancellationToken,
    pub live: Arc<Live>,
    pub shard: ShardSlot,
    /// This target's JTL writer (`--jtl`), synced at the end of every level.
    pub jtl: Option<AttemptSender>,
    /// Sharded runs: when the measured load starts, on every shard at once.
    pub start_at: Option<std::time::SystemTime>,
    /// The subscriber fleet (`--subscribers`, WebSub only), around every level.
    pub delivery: Option<&'a super::subscribers::DeliveryRun>,
    /// `--topic-churn`: topics deregistered and registered again around every level.
    pub topic_churn: Option<&'a super::topic_churn_cycles::TopicChurnRun>,
    /// Sharded runs with subscribers: this shard sends only its own topics' events.
    pub own_topics: Option<crate::engine::OwnTopics>,
    /// The topic server (websub dialect): its fetches are taken after every level.
    pub topic_server: Option<Arc<crate::topic_server::TopicServer>>,
    /// The observers around every level (server metrics, generator health, exporter).
    pub observers: Option<&'a crate::observe::Observers>,
    /// `--web`: the run's steering, read by the engine's driver side.
    pub control: Option<Arc<crate::engine::Control>>,
    /// `--web`: the live page, told of every level's row.
    pub web: Option<&'a crate::web::WebServer>,
    /// Shard 0's scrape rounds, for its seconds (`merge --follow`'s page).
    pub server_now: Option<tokio::sync::watch::Receiver<ServerNow>>,
}

/// Check a set-up phase (registering topics, attaching links): refuse a run that could not set
/// up any topic, warn about the ones that failed. `what` names the phase and `at` where, e.g.
/// "register topics at the hub", "http://…/hub".
pub(crate) fn check_phase(p: &PhaseResult, what: &str, at: &str) -> anyhow::Result<()> {
    if p.topics > 0 && p.ok() == 0 {
        let why = p.first_error.as_deref().unwrap_or("no answer");
        anyhow::bail!("cannot {what} {at}: {why}");
    }
    if p.failed() > 0 {
        tracing::warn!(
            failed = p.failed(),
            first = p.first_error.as_deref().unwrap_or(""),
            "could not {what} {at} for some topics; sends to them are counted as they end"
        );
    }
    Ok(())
}

/// The topics this process sets up: its own tenants' when sharded (see
/// [`crate::shard_contract::owns_tenant`]); topics without a tenant belong to shard 0.
pub(crate) fn owned_topics(w: &Workload, shard: ShardSlot) -> Vec<Topic> {
    w.topics()
        .iter()
        .filter(|t| match t.tenant {
            Some(tenant) => shard.owns_tenant(tenant),
            None => shard.index == 0,
        })
        .cloned()
        .collect()
}
