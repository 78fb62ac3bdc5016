//! The report model: what a run produced, as `summary.json` holds it (the `Report`, its level
//! rows, the delivery sections, the judging results) and how a level's statistics become a
//! row. Plain data the writers (`report`), `judge` and `compare` read; it writes nothing.

pub mod build;
pub mod delivery_report;
pub mod latency;
mod report;
pub mod server;
pub mod server_timing;
pub mod time_split;
pub mod verdict;

pub use report::{
    AddressAttempts, EmulatorTotals, EventSummary, Handshakes, HubHost, LatencyUs, LevelReport,
    PhaseReport, RateCheck, Report, ReportHistograms, ServiceBusInfo, TimeoutSplit, TopicReport,
};
