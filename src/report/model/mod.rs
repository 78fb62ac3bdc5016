//! The report's model: what a run produced, as `summary.json` holds it (its level rows, the
//! delivery sections, the phases) and how a level's statistics become a row. Plain data that
//! `judge` judges and the writers and `compare` read; it writes nothing. The whole document,
//! with judge's results in it, is `document::Report`.

pub mod build;
pub mod delivery_report;
pub mod derived;
pub mod latency;
mod level_v4;
pub mod observations;
mod rows;
pub mod server_now;
pub mod server_timing;
pub mod time_split;
mod topic_row;

/// For fields read from older summaries but never written (`skip_serializing_if`: the schema
/// then lists them as optional, where `skip_serializing` would make them required).
pub fn never_written<T>(_: &T) -> bool {
    true
}

pub use derived::{Derived, EventSummary, TimeoutSplit};
pub use level_v4::ReportHistograms;
pub use rows::{
    AddressAttempts, EmulatorTotals, Handshakes, HubHost, LatencyUs, LevelReport, PhaseReport,
    RateCheck, ServiceBusInfo,
};
pub use topic_row::{TopicFigures, TopicReport};
