//! Reports: the `Report` model, the `Reporter` trait and one reporter per file.

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
pub mod precision;
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

/// One output format. Renders bytes from the report; the manager does the IO.
pub trait Reporter {
    /// The file name this reporter writes under the output directory (e.g. "aggregate.csv").
    fn file_name(&self) -> &'static str;
    /// Render the whole report.
    fn render(&self, report: &Report) -> anyhow::Result<Vec<u8>>;
}
