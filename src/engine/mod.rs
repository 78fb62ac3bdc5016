//! The engine: levels of load (closed or open model), one worker loop, shutdown.

mod attempt;
mod context;
mod control;
mod driver;
mod level_run;
mod live;
mod observer;
mod own_topics;
mod pacer;
mod plan;
mod retry_wait;
mod rotation;
mod stop;
mod stripe;
mod surge_pacer;
mod worker;

pub use attempt::{attempt_queue, AttemptReceiver, AttemptRecord, AttemptSender, Handout};
pub use context::{LevelContext, Slice};
pub use control::{max_concurrency, Control, ControlEvent, LevelNow, Refused};
pub use driver::Seqs;
pub use level_run::{run_level, LevelRun};
pub use live::{Live, LiveLevel, SecondPart, Totals};
pub use observer::PublishObserver;
pub use own_topics::OwnTopics;
pub use pacer::{Arrivals, Schedule};
pub use plan::{LevelSpec, Load, PlanStep, Stop};
pub(crate) use rotation::rotate;
