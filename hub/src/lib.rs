//! hubload-hub: a WebSub reference hub with proxy-style fault injection.
//!
//! It speaks W3C WebSub (subscriptions with verified intent, signed distribution) and the
//! Ballerina/WSO2 publisher dialect (register, deregister, publish, thin ping), counts every
//! request exactly once in `GET /stats` so a load generator can reconcile with it, and
//! injects the faults a proxy in front of a real hub produces. Embed it with [`router`] or
//! [`serve`]; run it alone with the `hubload-hub` binary ([`cli`]).

mod admission;
mod batch;
pub mod broker;
mod broker_stats;
mod callback_conn;
#[cfg(test)]
mod callback_deadline_tests;
pub mod cli;
mod config;
mod conn_handle;
mod delivery_limit;
mod delivery_queue;
mod delivery_settings;
mod distribute;
mod faults;
mod handlers;
mod metrics;
mod operator_endpoints;
mod params;
mod routes;
mod serve;
mod serve_limits;
mod serve_stats;
mod server_timing;
mod sign;
mod state;
mod stats;
mod subscribe;
/// The deadline tests' bound (`tests/support/lateness.rs`), shared with the unit tests.
#[cfg(test)]
#[path = "../../tests/support/lateness.rs"]
mod test_lateness;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod tls;
mod topic;

pub use admission::{TenantAdmission, TenantLimit, TenantRate};
pub use broker::{Broker, BrokerStats};
pub use config::{HubConfig, RetryPolicy};
pub use delivery_limit::{DeliveryLimit, DeliveryQueueStats, QueueOrder};
pub use faults::{Action as FaultAction, FaultConfig, FaultError};
pub use routes::router;
pub use serve::{serve, serve_limited, serve_tls};
pub use serve_limits::{ServeCounts, ServeLimits};
pub use serve_stats::ServeStats;
pub use state::HubState;
pub use stats::{DistributionStats, ModeCounts, StatsSnapshot, TopicStats};
