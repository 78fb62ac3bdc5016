//! Reports: the `Report` model (`model.rs`), the `Reporter` trait (`reporter.rs`) and one
//! reporter per file. This file only declares and re-exports.

pub mod align;
pub mod banner;
pub mod build;
pub mod compare;
pub mod csv;
pub mod delivery;
pub mod delivery_csv;
pub mod delivery_table;
pub mod hlog;
pub mod html;
pub mod json;
pub mod jtl;
pub mod judging;
pub mod latency;
pub mod latency_csv;
mod model;
pub mod observe_notes;
pub mod precision;
mod reporter;
pub mod server;
pub mod server_csv;
pub mod side_by_side;
pub mod table;
pub mod topics_csv;
pub mod whatif_csv;
pub mod writer;

pub use html::HtmlReporter;
pub use model::{
    AddressAttempts, EmulatorTotals, EventSummary, Handshakes, HubHost, LatencyUs, LevelReport,
    PhaseReport, RateCheck, Report, ReportHistograms, ServiceBusInfo, TimeoutSplit, TopicReport,
};
pub use reporter::Reporter;
