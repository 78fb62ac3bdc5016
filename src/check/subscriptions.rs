//! The subscriptions a run's broker subscribers (`--subscribers N` with `--target
//! servicebus`) will receive from: each exists, and the policy may listen on it. A run
//! probes the first of them before any load, with the same words.

use std::time::Duration;

use hubload_servicebus::{ConnectionString, ReceiverConfig, SbError, SbReceiver};

use super::step::{Step, Steps};
use crate::config::RunConfig;
use crate::kind::SbTopics;
use crate::subscriber::subscription_name;
use crate::workload::Workload;

/// At most this many failing subscriptions are listed one per line; the rest are counted.
const LISTED: usize = 5;

/// `(topic, subscription)` of every broker subscriber the run would start, in the fleet's
/// order; empty without `--subscribers` (or with a topic mapping the run refuses for them).
pub fn needed(cfg: &RunConfig, workload: &Workload) -> Vec<(String, String)> {
    let Some(d) = &cfg.delivery else {
        return Vec::new();
    };
    if cfg.target.sb_topics != SbTopics::PerTopic || d.subscribers == 0 {
        return Vec::new();
    }
    let chosen = d.topics.of(workload.topics().len());
    workload
        .topics()
        .iter()
        .filter(|t| t.index < chosen)
        .flat_map(|t| (0..d.subscribers).map(move |i| (t.name.to_string(), subscription_name(i))))
        .collect()
}

/// Attach a receiver to `topic/Subscriptions/sub` and let it go: `Err((what, fix))` when the
/// subscription is missing or the policy may not listen on it.
pub async fn probe(
    cs: &ConnectionString,
    topic: &str,
    sub: &str,
    bound: Duration,
) -> Result<(), (String, String)> {
    let mut rc = ReceiverConfig::new(cs.clone(), topic, sub);
    rc.connect_timeout = bound;
    let path = format!("{topic}/Subscriptions/{sub}");
    match tokio::time::timeout(bound * 2, SbReceiver::connect(rc)).await {
        Ok(Ok(r)) => {
            r.close().await;
            Ok(())
        }
        Ok(Err(SbError::NotFound { .. })) => Err((
            format!("subscription {path} does not exist"),
            "create it (the portal, an ARM template or the administration API): --subscribers N receives from hubload-0 … hubload-(N-1) of each topic".into(),
        )),
        Ok(Err(SbError::Unauthorized { .. })) => Err((
            format!(
                "the policy of key name {} lacks the Listen right on {path}",
                cs.key_name
            ),
            "--subscribers needs Listen: give the policy Listen, or use a key that has it".into(),
        )),
        Ok(Err(e)) => Err((
            format!("attaching a receiver to {path} failed: {e}"),
            "see the cause".into(),
        )),
        Err(_) => Err((
            format!("no receiver attached to {path} within {:?}", bound * 2),
            "is the namespace overloaded, or the connection slow?".into(),
        )),
    }
}

/// One line per failing subscription (the first [`LISTED`]), or one `ok` line for all.
pub(super) async fn check(
    cfg: &RunConfig,
    cs: &ConnectionString,
    workload: &Workload,
    bound: Duration,
    steps: &mut Steps,
) {
    let pairs = needed(cfg, workload);
    if pairs.is_empty() {
        return;
    }
    let mut failed = 0;
    for (topic, sub) in &pairs {
        if let Err((detail, fix)) = probe(cs, topic, sub, bound).await {
            failed += 1;
            if failed <= LISTED {
                steps.push(Step::fail("listen", detail, fix));
            }
        }
    }
    if failed == 0 {
        steps.push(Step::ok(
            "listen",
            format!(
                "all {} subscriptions exist and the policy can listen on them",
                pairs.len()
            ),
        ));
    } else if failed > LISTED {
        steps.push(Step::fail(
            "listen",
            format!(
                "{failed} of {} subscriptions failed (the first {LISTED} are listed)",
                pairs.len()
            ),
            "as above",
        ));
    }
}
