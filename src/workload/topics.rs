//! Topic naming and fan-in: which topic each (tenant, channel) publishes to.

use std::sync::Arc;

/// One topic as registered with the hub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topic {
    /// Index into the run's topic list (stats count per index).
    pub index: usize,
    /// The full topic name sent as `hub.topic`.
    pub name: Arc<str>,
}

/// How events fan into topics (`--topics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TopicLayout {
    /// One topic per (tenant, channel), as the identity publisher does.
    PerTenantChannel,
    /// One topic per tenant.
    PerTenant,
    /// One topic for everything.
    Shared,
    /// N topics; events spread over them.
    Count(usize),
}
