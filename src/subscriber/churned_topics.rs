//! The fleet's side of topic churn (`--topic-churn`): a churned topic's subscribers are not owed its events from the deregistration on, and subscribe again once it is registered again.
//!
//! A hub may end a deregistered topic's subscriptions (the reference hub does, silently), so
//! after the re-registration each of them subscribes again and is verified. What was accepted
//! from the deregister request until the subscription is back in force is in the subscriber's
//! churn gap, `ambiguous` like subscription churn's (docs/topic-churn.md).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use futures_util::future::join_all;
use tokio::time::Instant;

use super::churn::request;
use super::fleet::Fleet;
use super::fleet_shared::Shared;
use super::subscribe::PhaseSettings;
use crate::stats::record;

/// The subscribers of churned topics, as topic churn drives them.
#[derive(Debug, Clone)]
pub struct TopicSubscribers {
    sh: Arc<Shared>,
    p: Arc<PhaseSettings>,
}

impl Fleet {
    /// The handle topic churn takes its topics' subscribers out and back in with. Levels
    /// report the churn section (their gaps' `ambiguous`) from then on.
    pub fn topic_subscribers(&self, p: &PhaseSettings) -> TopicSubscribers {
        self.shared.churn_on.store(true, Relaxed);
        TopicSubscribers {
            sh: self.shared.clone(),
            p: Arc::new(p.clone()),
        }
    }
}

impl TopicSubscribers {
    /// Right before the deregister request of workload topic `topic` goes out: its listening
    /// subscribers stop being owed newly accepted events. Returns them, for [`Self::bring_back`].
    pub fn take_out(&self, topic: usize) -> Vec<usize> {
        let sh = &self.sh;
        let Some(&first) = sh.first_sub.get(topic) else {
            return Vec::new();
        };
        if first == u32::MAX {
            return Vec::new();
        }
        let before = sh.tracker.accepted_snapshot();
        let first = first as usize;
        (first..first + sh.per_topic)
            .filter(|&i| {
                let s = &sh.subs[i];
                let mut st = s.state();
                if !s.listening(&st) {
                    return false;
                }
                // A gap still open (no delivery has closed it yet) goes on from where it began.
                st.gap_from.get_or_insert_with(|| before.clone());
                st.reverified = None;
                true
            })
            .collect()
    }

    /// After the topic's re-registration: subscribe `subs` again, each verified by the hub.
    /// Returns (verified, failed). A verified one is owed events again from the first delivery
    /// of an event published after its verification; a failed one, nothing more this level.
    pub async fn bring_back(&self, subs: Vec<usize>) -> (u64, u64) {
        let sh = &self.sh;
        let done = join_all(subs.into_iter().map(|i| async move {
            let asked = Instant::now();
            let verified = request(sh, &self.p, i, true).await?;
            record(
                &mut sh.churn_stats().subscribe_latency,
                verified.saturating_duration_since(asked).as_micros() as u64,
            );
            let now = sh.tracker.published_snapshot();
            let mut st = sh.subs[i].state();
            st.reverified = Some(now);
            st.first_from_ns = Some(sh.tracker.ns(verified.into_std()));
            Some(())
        }))
        .await;
        let ok = done.iter().filter(|d| d.is_some()).count() as u64;
        (ok, done.len() as u64 - ok)
    }
}
