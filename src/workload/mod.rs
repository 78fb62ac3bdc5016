//! The workload: tenants × SPs × users × channels → topics and a seeded, deterministic event stream.

mod body;
mod event;
mod identity;
mod rng;
mod surge;
mod topics;

pub use body::hyphenated;
pub use event::{Distribution, Event, Workload, WorkloadConfig};
pub use identity::MAX_SEQ;
pub use rng::SplitMix64;
pub use surge::{is_surge_seq, surge_base, surge_offset, Surge, SurgePicks, SurgeStart};
pub use topics::{build_topics, tenant_name, Topic, TopicLayout};
