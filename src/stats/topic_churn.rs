//! A level's topic churn counts (`--topic-churn`): plain data that adds with `+=`.

use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

/// One level's topic churn (docs/topic-churn.md). Carried whole in shard artifacts and added
/// with `+=` by `hubload merge`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct TopicChurnStats {
    /// Cycles started: one topic deregistered and registered again.
    pub cycles: u64,
    /// Deregister requests the hub accepted.
    pub deregistered: u64,
    /// Re-register requests the hub accepted (a 409, already registered, counts too: the
    /// topic is registered again either way).
    pub reregistered: u64,
    /// Cycles with a request refused or unanswered; a topic whose re-registration failed stays
    /// in its window until the level ends.
    pub failed: u64,
    /// Ticks with no topic to churn: every one of this process's topics was in a cycle.
    pub skipped: u64,
    /// Publishes refused (404 or denied) inside their topic's window: the class
    /// `expected_refusal`, not an error.
    pub expected_refusals: u64,
    /// Subscribers of a churned topic subscribed again after its re-registration and
    /// verified by the hub (`--subscribers`; a hub may drop a deregistered topic's
    /// subscriptions, as the reference hub does).
    pub resubscribed: u64,
    /// Of those re-subscriptions, the ones refused or not verified in time: the subscriber
    /// is owed nothing more in the level.
    pub resubscribe_failed: u64,
}

impl AddAssign<&TopicChurnStats> for TopicChurnStats {
    fn add_assign(&mut self, o: &TopicChurnStats) {
        self.cycles += o.cycles;
        self.deregistered += o.deregistered;
        self.reregistered += o.reregistered;
        self.failed += o.failed;
        self.skipped += o.skipped;
        self.expected_refusals += o.expected_refusals;
        self.resubscribed += o.resubscribed;
        self.resubscribe_failed += o.resubscribe_failed;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_field_by_field() {
        let a = TopicChurnStats {
            cycles: 1,
            deregistered: 2,
            reregistered: 3,
            failed: 4,
            skipped: 5,
            expected_refusals: 6,
            resubscribed: 7,
            resubscribe_failed: 8,
        };
        let mut s = a.clone();
        s += &a;
        assert_eq!(
            s,
            TopicChurnStats {
                cycles: 2,
                deregistered: 4,
                reregistered: 6,
                failed: 8,
                skipped: 10,
                expected_refusals: 12,
                resubscribed: 14,
                resubscribe_failed: 16,
            }
        );
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(serde_json::from_value::<TopicChurnStats>(json).unwrap(), s);
    }
}
