//! The `Reporter` trait: one output format, rendered from the report as bytes (the writer
//! does the IO). The formats a run writes are listed beside it, in `formats.rs`.

use crate::run_report::Report;

/// One output format. Renders bytes from the report; the manager does the IO.
pub trait Reporter {
    /// The file name this reporter writes under the output directory (e.g. "aggregate.csv").
    fn file_name(&self) -> &'static str;
    /// Render the whole report.
    fn render(&self, report: &Report) -> anyhow::Result<Vec<u8>>;
}
