//! The `Format` trait: one output format, rendered from the report as bytes (the writer
//! does the IO). The formats a run writes are listed beside it, in `formats.rs`.

use crate::report::document::Report;

/// One output format. Renders bytes from the report; the manager does the IO.
pub trait Format {
    /// The file name this format writes under the output directory (e.g. "aggregate.csv").
    fn file_name(&self) -> &'static str;
    /// Render the whole report.
    fn render(&self, report: &Report) -> anyhow::Result<Vec<u8>>;
}
