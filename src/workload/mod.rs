//! The workload: tenants × SPs × users × channels → topics and a seeded, deterministic event stream.

mod event;
mod topics;

pub use event::{Event, EventGenerator};
pub use topics::{Topic, TopicLayout};
