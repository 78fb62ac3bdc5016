//! The engine: levels of load (closed or open model), one worker loop, shutdown.

mod driver;
mod level;
mod live;
mod pacer;
mod plan;
mod worker;

pub use driver::Seqs;
pub use level::{run_level, LevelContext, LevelRun};
pub use live::Live;
pub use pacer::{Arrivals, Schedule};
pub use plan::{LevelSpec, Load, PlanStep, Stop};
pub use worker::JtlSink;
