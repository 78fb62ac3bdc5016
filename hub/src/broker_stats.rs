//! The broker's counts in broker mode: live atomics, the `/stats` snapshot
//! ([`BrokerStats`]) and its Prometheus lines.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use hubload_servicebus::SendOutcome;
use serde::{Deserialize, Serialize};

/// Sends to the broker by outcome.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct SendCounts {
    /// Settled *accepted*.
    pub accepted: u64,
    /// Refused with `com.microsoft:server-busy`.
    pub throttled: u64,
    /// The topic does not exist at the broker.
    pub not_found: u64,
    /// The hub's key was refused.
    pub unauthorized: u64,
    /// Larger than the broker takes.
    pub too_large: u64,
    /// No settlement within the send timeout.
    pub timeout: u64,
    /// No connection, or it dropped during the send.
    pub connection: u64,
    /// Refused with any other condition.
    pub rejected: u64,
}

impl SendCounts {
    /// Every send, whatever its outcome.
    pub fn total(&self) -> u64 {
        self.accepted
            + self.throttled
            + self.not_found
            + self.unauthorized
            + self.too_large
            + self.timeout
            + self.connection
            + self.rejected
    }
}

/// What `/stats` shows under `broker` when the hub runs on Service Bus.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct BrokerStats {
    /// Publishes sent to the broker, by outcome.
    pub sends: SendCounts,
    /// Messages received from the broker's subscriptions (redeliveries included).
    pub receives: u64,
    /// Received messages completed (the callback answered 2xx).
    pub completes: u64,
    /// Received messages abandoned (the callback failed; the broker delivers them again).
    pub abandons: u64,
    /// Received messages dead-lettered (past the hub's retry limit, or the callback answered 410).
    pub dead_letters: u64,
    /// Settlements that failed (the link went first: the broker delivers the message again).
    pub settle_failures: u64,
    /// Receive links re-attached and connections reopened after a loss, over all subscriptions.
    pub receive_restarts: u64,
    /// Receive calls that failed (not found, refused, no connection); the loop tries again.
    pub receive_errors: u64,
    /// Broker subscriptions with a receive loop running now.
    pub subscriptions: u64,
    /// Topics and subscriptions created through the administration API (register, subscribe).
    pub entity_creates: u64,
    /// Subscriptions and topics deleted through the administration API (unsubscribe, lease
    /// expiry, a 410, deregister).
    pub entity_deletes: u64,
    /// Administration requests that failed (no answer, or an unexpected status).
    pub entity_failures: u64,
    /// Receive loops ended because the subscriber's lease ran out.
    pub leases_expired: u64,
    /// Receive loops ended because their subscription or topic was gone at the broker
    /// (`amqp:not-found` on a re-attach: deleted by someone else).
    pub subscriptions_lost: u64,
    /// Received messages settled after their lock had run out (`x-opt-locked-until`): the
    /// broker refuses the settlement and delivers them again.
    pub locks_expired: u64,
    /// Tries to attach a new subscriber's receiver (before its verification) that failed;
    /// each is tried again within the verification window.
    pub receiver_open_failures: u64,
    /// Verification GETs that got no answer (no connection, reset, timeout); each is tried
    /// again within the verification window.
    pub verify_retries: u64,
    /// Subscribes given up because no receiver could be attached within the verification
    /// window: the callback is sent `hub.mode=denied` and the subscription is removed.
    pub subscribes_failed: u64,
}

/// The live counters behind [`BrokerStats`].
#[derive(Debug, Default)]
pub(crate) struct BrokerCounters {
    accepted: AtomicU64,
    throttled: AtomicU64,
    not_found: AtomicU64,
    unauthorized: AtomicU64,
    too_large: AtomicU64,
    timeout: AtomicU64,
    connection: AtomicU64,
    rejected: AtomicU64,
    pub receives: AtomicU64,
    pub completes: AtomicU64,
    pub abandons: AtomicU64,
    pub dead_letters: AtomicU64,
    pub settle_failures: AtomicU64,
    pub receive_restarts: AtomicU64,
    pub receive_errors: AtomicU64,
    pub subscriptions: AtomicU64,
    pub entity_creates: AtomicU64,
    pub entity_deletes: AtomicU64,
    pub entity_failures: AtomicU64,
    pub leases_expired: AtomicU64,
    pub subscriptions_lost: AtomicU64,
    pub locks_expired: AtomicU64,
    pub receiver_open_failures: AtomicU64,
    pub verify_retries: AtomicU64,
    pub subscribes_failed: AtomicU64,
}

impl BrokerCounters {
    /// Count one send under its outcome.
    pub fn send(&self, o: &SendOutcome) {
        let c = match o {
            SendOutcome::Accepted => &self.accepted,
            SendOutcome::Throttled => &self.throttled,
            SendOutcome::NotFound => &self.not_found,
            SendOutcome::Unauthorized => &self.unauthorized,
            SendOutcome::TooLarge => &self.too_large,
            SendOutcome::Timeout => &self.timeout,
            SendOutcome::Connect
            | SendOutcome::ProxyRefused { .. }
            | SendOutcome::ConnectTimeout
            | SendOutcome::ConnectionError
            | SendOutcome::SessionEnded { .. }
            | SendOutcome::LinkDetached { .. } => &self.connection,
            SendOutcome::Rejected { .. } => &self.rejected,
        };
        c.fetch_add(1, Relaxed);
    }

    pub fn snapshot(&self) -> BrokerStats {
        let g = |a: &AtomicU64| a.load(Relaxed);
        BrokerStats {
            sends: SendCounts {
                accepted: g(&self.accepted),
                throttled: g(&self.throttled),
                not_found: g(&self.not_found),
                unauthorized: g(&self.unauthorized),
                too_large: g(&self.too_large),
                timeout: g(&self.timeout),
                connection: g(&self.connection),
                rejected: g(&self.rejected),
            },
            receives: g(&self.receives),
            completes: g(&self.completes),
            abandons: g(&self.abandons),
            dead_letters: g(&self.dead_letters),
            settle_failures: g(&self.settle_failures),
            receive_restarts: g(&self.receive_restarts),
            receive_errors: g(&self.receive_errors),
            subscriptions: g(&self.subscriptions),
            entity_creates: g(&self.entity_creates),
            entity_deletes: g(&self.entity_deletes),
            entity_failures: g(&self.entity_failures),
            leases_expired: g(&self.leases_expired),
            subscriptions_lost: g(&self.subscriptions_lost),
            locks_expired: g(&self.locks_expired),
            receiver_open_failures: g(&self.receiver_open_failures),
            verify_retries: g(&self.verify_retries),
            subscribes_failed: g(&self.subscribes_failed),
        }
    }
}

/// Append the broker's Prometheus lines to `out`.
pub fn render_metrics(b: &BrokerStats, out: &mut String) {
    let s = &b.sends;
    let _ = writeln!(
        out,
        "# HELP hub_broker_sends_total Publishes sent to the broker, by outcome.\n# TYPE hub_broker_sends_total counter"
    );
    for (outcome, v) in [
        ("accepted", s.accepted),
        ("throttled", s.throttled),
        ("not_found", s.not_found),
        ("unauthorized", s.unauthorized),
        ("too_large", s.too_large),
        ("timeout", s.timeout),
        ("connection", s.connection),
        ("rejected", s.rejected),
    ] {
        let _ = writeln!(out, "hub_broker_sends_total{{outcome=\"{outcome}\"}} {v}");
    }
    for (name, help, kind, v) in [
        (
            "hub_broker_receives_total",
            "Messages received from the broker's subscriptions.",
            "counter",
            b.receives,
        ),
        (
            "hub_broker_completes_total",
            "Received messages completed.",
            "counter",
            b.completes,
        ),
        (
            "hub_broker_abandons_total",
            "Received messages abandoned.",
            "counter",
            b.abandons,
        ),
        (
            "hub_broker_dead_letters_total",
            "Received messages dead-lettered.",
            "counter",
            b.dead_letters,
        ),
        (
            "hub_broker_settle_failures_total",
            "Settlements that failed (the link went first).",
            "counter",
            b.settle_failures,
        ),
        (
            "hub_broker_receive_restarts_total",
            "Receive links re-attached and connections reopened.",
            "counter",
            b.receive_restarts,
        ),
        (
            "hub_broker_receive_errors_total",
            "Receive calls that failed.",
            "counter",
            b.receive_errors,
        ),
        (
            "hub_broker_subscriptions",
            "Broker subscriptions with a receive loop running.",
            "gauge",
            b.subscriptions,
        ),
        (
            "hub_broker_entity_creates_total",
            "Topics and subscriptions created through the administration API.",
            "counter",
            b.entity_creates,
        ),
        (
            "hub_broker_entity_deletes_total",
            "Subscriptions and topics deleted through the administration API.",
            "counter",
            b.entity_deletes,
        ),
        (
            "hub_broker_entity_failures_total",
            "Administration requests that failed.",
            "counter",
            b.entity_failures,
        ),
        (
            "hub_broker_leases_expired_total",
            "Receive loops ended by a lease running out.",
            "counter",
            b.leases_expired,
        ),
        (
            "hub_broker_subscriptions_lost_total",
            "Receive loops ended because their entity was gone at the broker.",
            "counter",
            b.subscriptions_lost,
        ),
        (
            "hub_broker_locks_expired_total",
            "Received messages settled after their lock had run out.",
            "counter",
            b.locks_expired,
        ),
        (
            "hub_broker_receiver_open_failures_total",
            "Failed tries to attach a new subscriber's receiver.",
            "counter",
            b.receiver_open_failures,
        ),
        (
            "hub_broker_verify_retries_total",
            "Verification GETs tried again after getting no answer.",
            "counter",
            b.verify_retries,
        ),
        (
            "hub_broker_subscribes_failed_total",
            "Subscribes given up: no receiver attached within the verification window.",
            "counter",
            b.subscribes_failed,
        ),
    ] {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_has_its_counter_and_metric() {
        let c = BrokerCounters::default();
        for o in [
            SendOutcome::Accepted,
            SendOutcome::Accepted,
            SendOutcome::Throttled,
            SendOutcome::Timeout,
            SendOutcome::Connect,
            SendOutcome::ConnectionError,
            SendOutcome::Rejected {
                condition: "x".into(),
            },
        ] {
            c.send(&o);
        }
        let s = c.snapshot();
        assert_eq!(
            (
                s.sends.accepted,
                s.sends.throttled,
                s.sends.timeout,
                s.sends.connection
            ),
            (2, 1, 1, 2)
        );
        assert_eq!(s.sends.total(), 7);
        c.entity_creates.fetch_add(2, Relaxed);
        c.entity_deletes.fetch_add(3, Relaxed);
        c.entity_failures.fetch_add(4, Relaxed);
        c.leases_expired.fetch_add(5, Relaxed);
        c.subscriptions_lost.fetch_add(6, Relaxed);
        c.locks_expired.fetch_add(7, Relaxed);
        c.receiver_open_failures.fetch_add(8, Relaxed);
        c.verify_retries.fetch_add(9, Relaxed);
        c.subscribes_failed.fetch_add(10, Relaxed);
        let s = c.snapshot();
        assert_eq!(
            (
                s.locks_expired,
                s.receiver_open_failures,
                s.verify_retries,
                s.subscribes_failed
            ),
            (7, 8, 9, 10)
        );
        assert_eq!(
            (
                s.entity_creates,
                s.entity_deletes,
                s.entity_failures,
                s.leases_expired,
                s.subscriptions_lost
            ),
            (2, 3, 4, 5, 6)
        );
        let mut out = String::new();
        render_metrics(&s, &mut out);
        assert!(
            out.contains("hub_broker_sends_total{outcome=\"accepted\"} 2\n"),
            "{out}"
        );
        assert!(out.contains("hub_broker_sends_total{outcome=\"rejected\"} 1\n"));
        assert!(out.contains("hub_broker_subscriptions 0\n"));
        for line in [
            "hub_broker_entity_creates_total 2\n",
            "hub_broker_entity_deletes_total 3\n",
            "hub_broker_entity_failures_total 4\n",
            "hub_broker_leases_expired_total 5\n",
            "hub_broker_subscriptions_lost_total 6\n",
            "hub_broker_locks_expired_total 7\n",
            "hub_broker_receiver_open_failures_total 8\n",
            "hub_broker_verify_retries_total 9\n",
            "hub_broker_subscribes_failed_total 10\n",
        ] {
            assert!(out.contains(line), "{line}{out}");
        }
    }
}
