//! The hub's settings: limits, authentication, leases, delivery queue and retry policy, faults,
//! the tenant admission limit, the hub-wide delivery limit.

use std::fmt;
use std::time::Duration;

use crate::admission::TenantLimit;
use crate::delivery_limit::DeliveryLimit;
use crate::faults::FaultConfig;

/// How failed deliveries are retried: exponential backoff, capped, for a bounded number of attempts.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts per delivery, the first included (at least 1).
    pub max_attempts: u32,
    /// Wait before the first retry.
    pub initial_backoff: Duration,
    /// The longest wait between two attempts.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            initial_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(10),
        }
    }
}

impl RetryPolicy {
    /// The wait after failed attempt number `attempt` (1-based): initial · 2^(attempt−1), capped.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let factor = 1u32
            .checked_shl(attempt.saturating_sub(1))
            .unwrap_or(u32::MAX);
        self.initial_backoff
            .checked_mul(factor)
            .unwrap_or(self.max_backoff)
            .min(self.max_backoff)
    }
}

/// Everything the hub needs to run. `Default` gives sensible limits and no faults.
#[derive(Clone)]
pub struct HubConfig {
    /// Largest request body accepted, in bytes; larger gets 413.
    pub max_body_bytes: usize,
    /// Longest `hub.topic`, in bytes; longer gets 400.
    pub max_topic_len: usize,
    /// Longest `hub.callback`, in bytes; longer gets 400.
    pub max_callback_len: usize,
    /// When set, register, deregister, publish and (un)subscribe need `Authorization: Bearer <token>`.
    pub bearer_token: Option<String>,
    /// Lease given when a subscriber asks for none.
    pub lease_default: Duration,
    /// Longest lease granted; longer requests are cut to this.
    pub lease_max: Duration,
    /// Deliveries waiting per subscriber (not those in flight); beyond this they are dropped (and counted).
    pub queue_size: usize,
    /// Bytes of content one subscriber may hold, queued or in flight; beyond, dropped.
    pub max_queue_bytes: u64,
    /// Bytes of content the whole hub may hold for delivery, each publish counted once;
    /// a publish that does not fit is answered 503.
    pub max_memory_bytes: u64,
    /// Most deliveries in flight per subscriber (its worker pool grows to it while deliveries wait).
    pub delivery_concurrency: usize,
    /// Most deliveries one worker writes at once on its keep-alive connection to an
    /// `http://` callback (HTTP/1.1 pipelining); 1 sends one at a time.
    pub delivery_pipeline: usize,
    /// Retry policy for failed deliveries.
    pub retry: RetryPolicy,
    /// Timeout of one delivery attempt.
    pub delivery_timeout: Duration,
    /// Timeout of one intent-verification GET.
    pub verify_timeout: Duration,
    /// The hub URL written in `Link: <…>; rel="hub"`; default `http://<bound address>/`.
    pub public_url: Option<String>,
    /// Topics (registered or published to) the hub keeps statistics for; beyond, publishes to
    /// unknown topics are denied without a per-topic entry.
    pub max_topics: usize,
    /// Faults in force at start.
    pub faults: FaultConfig,
    /// The per-tenant admission limit on publishes (`--tenant-rate-limit`); none by default.
    pub tenant_limit: Option<TenantLimit>,
    /// The hub-wide delivery limit and its queue (`--delivery-workers`); none by default.
    pub delivery_limit: Option<DeliveryLimit>,
}

impl Default for HubConfig {
    fn default() -> Self {
        HubConfig {
            max_body_bytes: 1 << 20,
            max_topic_len: 1024,
            max_callback_len: 2048,
            bearer_token: None,
            lease_default: Duration::from_secs(10 * 24 * 3600),
            lease_max: Duration::from_secs(30 * 24 * 3600),
            queue_size: 8192,
            max_queue_bytes: 16 << 20,
            max_memory_bytes: 256 << 20,
            delivery_concurrency: 64,
            delivery_pipeline: 16,
            retry: RetryPolicy::default(),
            delivery_timeout: Duration::from_secs(10),
            verify_timeout: Duration::from_secs(10),
            public_url: None,
            max_topics: 1_000_000,
            faults: FaultConfig::default(),
            tenant_limit: None,
            delivery_limit: None,
        }
    }
}

impl fmt::Debug for HubConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HubConfig")
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_topic_len", &self.max_topic_len)
            .field("max_callback_len", &self.max_callback_len)
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "<redacted>"),
            )
            .field("lease_default", &self.lease_default)
            .field("lease_max", &self.lease_max)
            .field("queue_size", &self.queue_size)
            .field("max_queue_bytes", &self.max_queue_bytes)
            .field("max_memory_bytes", &self.max_memory_bytes)
            .field("delivery_concurrency", &self.delivery_concurrency)
            .field("delivery_pipeline", &self.delivery_pipeline)
            .field("retry", &self.retry)
            .field("delivery_timeout", &self.delivery_timeout)
            .field("verify_timeout", &self.verify_timeout)
            .field("public_url", &self.public_url)
            .field("max_topics", &self.max_topics)
            .field("faults", &self.faults)
            .field("tenant_limit", &self.tenant_limit)
            .field("delivery_limit", &self.delivery_limit)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let p = RetryPolicy {
            max_attempts: 10,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(1000),
        };
        let waits: Vec<u128> = (1..=6).map(|a| p.backoff(a).as_millis()).collect();
        assert_eq!(waits, [100, 200, 400, 800, 1000, 1000]);
        assert_eq!(p.backoff(200), Duration::from_millis(1000));
    }

    #[test]
    fn debug_redacts_the_token() {
        let c = HubConfig {
            bearer_token: Some("s3cr3t-token".into()),
            ..HubConfig::default()
        };
        let d = format!("{c:?}");
        assert!(!d.contains("s3cr3t"), "{d}");
        assert!(d.contains("<redacted>"));
    }
}
