//! Statistics as plain, mergeable data: histograms, per-class counters and the clock that stamps them.

mod clock;
mod histogram;
mod level;
mod topic;

pub use clock::Clock;
pub use histogram::{new_histogram, record, Histogram, HIST_LOWEST_US, HIST_SIGFIG};
pub use level::{AttemptTimes, Counts, LevelStats, Reasons, TimelineBucket};
pub use topic::{bucket_high, bucket_of, TopicStats, TOPIC_BUCKETS};
