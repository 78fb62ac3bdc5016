//! One event and the seeded generator that produces the event stream.

use std::sync::Arc;

use bytes::Bytes;

/// One event to publish. Deterministic from (seed, sequence number).
#[derive(Debug, Clone)]
pub struct Event {
    /// Sequence number within the run (0-based), unique across workers and shards.
    pub seq: u64,
    /// Tenant index.
    pub tenant: u32,
    /// Tenant domain name, e.g. "tenant-0007".
    pub tenant_name: Arc<str>,
    /// Service provider (application) index within the tenant.
    pub application: u32,
    /// User index within the tenant.
    pub user: u32,
    /// Channel name, e.g. "login".
    pub channel: Arc<str>,
    /// Index of the topic it is published to.
    pub topic: usize,
    /// The event's unique `jti` (a UUID string).
    pub jti: String,
    /// The JSON body.
    pub body: Bytes,
}

/// Placeholder until the workload lands.
#[derive(Debug)]
pub struct EventGenerator;
