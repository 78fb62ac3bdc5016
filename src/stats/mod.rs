//! Statistics as plain, mergeable data: histograms, per-class counters and the clock that stamps them.

mod clock;
mod histogram;
mod level;

pub use clock::Clock;
pub use histogram::{new_histogram, record, Histogram, HIST_LOWEST_US, HIST_SIGFIG};
pub use level::{AttemptTimes, Counts, LevelStats, Reasons, TimelineBucket};
