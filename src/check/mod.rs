//! `hubload check`: the pre-flight of a run. With the same target flags, it checks in order
//! what the run will need (name resolution, TCP, TLS, then the WebSub hub answering or the
//! Service Bus token, entities, rights and message size) and says, one line per check, what failed, why and the fix.
//! Nothing is sent that a run would count as load.

mod net;
mod proxy;
pub(crate) mod servicebus;
pub mod size;
mod step;
pub mod subscriptions;
pub mod token;
mod websub;

use std::time::Duration;

use crate::config::RunConfig;
use crate::kind::TargetKind;
use step::Steps;
pub use step::{Status, Step};

/// Check every target of `cfg`, in order. The bound on each network step is the run's
/// connect timeout (at least 1 s).
pub async fn check(cfg: &RunConfig) -> Vec<Step> {
    let bound = cfg.client.connect_timeout.max(Duration::from_secs(1));
    let mut steps = Steps(Vec::new());
    for kind in &cfg.target.kinds {
        match kind {
            TargetKind::Websub => websub::check(cfg, bound, &mut steps).await,
            TargetKind::Servicebus => servicebus::check(cfg, bound, &mut steps).await,
        }
    }
    steps.0
}

/// Whether all passed.
pub fn passed(steps: &[Step]) -> bool {
    steps.iter().all(|s| s.status == Status::Ok)
}
