//! Statistics as plain, mergeable data: histograms, per-class counters and the clock that stamps them.

mod clock;
mod counts;
pub mod hist_serde;
mod histogram;
mod level;
mod second_list;
mod second_spill;
mod seconds;
mod server_timing_hist;
mod shared;
mod soak_leak;
mod times;
mod topic;
mod topic_churn;
pub mod topic_serde;
mod writers;

pub use clock::Clock;
pub use counts::{Counts, Reasons};
pub use histogram::{
    difference, from_base64, grown_since, histogram_up_to, new_histogram, record, to_base64,
    Histogram, HIST_LOWEST_US, HIST_SIGFIG,
};
pub use level::{LevelStats, TimelineBucket, LATE_SEND};
pub use second_list::SecondHistograms;
pub use seconds::SecondsRecorder;
pub use server_timing_hist::ServerTimingStats;
pub use shared::SharedLevel;
pub use times::{AttemptNs, AttemptSpan, AttemptTimes, Stamp};
pub use topic::{bucket_high, bucket_of, TopicStats, TopicTable, TOPIC_BUCKETS};
pub use topic_churn::TopicChurnStats;
pub use writers::Writers;
