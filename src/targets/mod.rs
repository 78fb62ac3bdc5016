//! The `Target` trait: what the engine needs from a protocol (prepare topics, send one attempt).
//!
//! The engine knows nothing of HTTP or AMQP. One implementation per protocol, plus a mock for tests.

pub mod first_failure;
pub mod h2;
pub mod http;
pub mod lanes;
#[cfg(test)]
pub(crate) mod mock;
pub mod reason;
pub mod request;
pub mod servicebus;
pub mod transport;
pub mod websub;

use std::future::Future;

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::result::{Attempt, Class, Outcome};
use crate::stats::{Counts, Reasons};
use crate::workload::{Event, Topic};

/// Outcome of a phase that touches every topic once (registration, deregistration); a
/// shard artifact's `registration` as it serializes itself.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct PhaseResult {
    /// Topics attempted.
    pub topics: u64,
    /// Outcome class per attempt (a 409 on register is counted in `already_registered`, not here).
    pub counts: Counts,
    /// Attempts per reason, for the classes that carry one.
    #[serde(default, skip_serializing_if = "Reasons::is_empty")]
    pub reasons: Reasons,
    /// Register answered 409: the topic already existed, which is fine.
    pub already_registered: u64,
    /// Wall-clock duration of the phase, seconds.
    pub duration_s: f64,
    /// The first failure, as one line, when any topic failed.
    pub first_error: Option<String>,
}

impl PhaseResult {
    /// Topics that are usable afterwards: accepted or already registered.
    pub fn ok(&self) -> u64 {
        self.counts.get(Class::Accepted) + self.already_registered
    }
    /// Topics that failed.
    pub fn failed(&self) -> u64 {
        self.topics - self.ok()
    }
}

/// A kind whose server keeps a topic registry: one topic deregistered or registered again at a
/// time (`--topic-churn`). Boxed, since churn asks through the path: a few requests a second,
/// never the publish path.
pub trait TopicRegistry: Send + Sync {
    /// Deregister (`register` false) or register `topic` once; the outcome as classified.
    fn topic_request<'a>(&'a self, register: bool, topic: &'a str) -> BoxFuture<'a, Outcome>;
}

/// A protocol hubload can load. Implementations are cheap to share (`&self` everywhere) and
/// apply the client model (timeouts, pool, no retries: the engine retries) themselves.
pub trait Target: Send + Sync + 'static {
    /// What a worker keeps from one attempt to its next for [`send`](Self::send): buffers
    /// reused instead of allocated per attempt. Made once per worker, which owns it.
    type Scratch: Default + Send + 'static;

    /// Register every topic before the load (bounded concurrency inside). Once `cancel`
    /// fires no request starts, and those in flight are abandoned and counted `cancelled`.
    fn prepare(
        &self,
        topics: &[Topic],
        cancel: &CancellationToken,
    ) -> impl Future<Output = PhaseResult> + Send;

    /// One attempt to publish `event` to `topic`, started at `started` (the engine's clock
    /// read: the target's deadlines count from it, so it reads no clock of its own). Never
    /// fails: failures are classified data. The event's body is rendered unless
    /// [`renders_body`](Self::renders_body). `scratch` is the worker's own.
    fn send(
        &self,
        topic: &Topic,
        event: &Event,
        started: std::time::Instant,
        scratch: &mut Self::Scratch,
    ) -> impl Future<Output = Attempt> + Send;

    /// True when [`send`](Self::send) renders the body itself (from the workload), so the
    /// engine hands it events made by `Workload::event_unrendered`, bodies empty.
    fn renders_body(&self) -> bool {
        false
    }

    /// Deregister every topic after the load (`--deregister`); `cancel` as for `prepare`.
    fn teardown(
        &self,
        topics: &[Topic],
        cancel: &CancellationToken,
    ) -> impl Future<Output = PhaseResult> + Send;

    /// The first failure of each class this target saw (class name → one line of what the
    /// server said); targets that keep none return an empty map.
    fn first_failures(&self) -> std::collections::BTreeMap<String, String> {
        Default::default()
    }
}
