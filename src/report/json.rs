//! `summary.json`: the whole `Report`, as described by `schema/summary.schema.json`.

use super::Reporter;
use crate::run_report::Report;

/// Writes `summary.json`.
#[derive(Debug, Default)]
pub struct JsonReporter;

impl Reporter for JsonReporter {
    fn file_name(&self) -> &'static str {
        "summary.json"
    }
    fn render(&self, report: &Report) -> anyhow::Result<Vec<u8>> {
        let mut out = serde_json::to_vec_pretty(report)?;
        out.push(b'\n');
        Ok(out)
    }
}
