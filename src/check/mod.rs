//! `hubload check`: the pre-flight steps of a run. With the same target flags, each kind checks
//! in order what the run will need (name resolution, TCP, TLS, then the WebSub hub answering or
//! the Service Bus token, entities, rights and message size) and says, one line per check, what
//! failed, why and the fix. Nothing is sent that a run would count as load. Each kind's path
//! (`run/`) names its steps; `run::check` runs them in the run's order.

mod net;
mod proxy;
pub(crate) mod servicebus;
pub mod size;
mod step;
pub mod subscriptions;
pub mod token;
pub(crate) mod websub;

use std::time::Duration;

use crate::config::RunConfig;
pub(crate) use step::Steps;
pub use step::{Status, Step};

/// The bound on each network step: the run's connect timeout, at least 1 s.
pub fn bound(cfg: &RunConfig) -> Duration {
    cfg.client.connect_timeout.max(Duration::from_secs(1))
}

/// Whether all passed.
pub fn passed(steps: &[Step]) -> bool {
    steps.iter().all(|s| s.status == Status::Ok)
}
