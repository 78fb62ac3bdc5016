//! `summary.json`: the whole `Report`, as described by `schema/summary.schema.json`, written
//! and read back.

use std::path::Path;

use anyhow::Context;

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

/// The report of `path`, a summary.json or the directory holding one (per-topic rows not
/// attached: `topics_file::attach`).
pub fn read(path: &Path) -> anyhow::Result<Report> {
    let file = if path.is_dir() {
        path.join("summary.json")
    } else {
        path.to_path_buf()
    };
    let bytes = std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
    serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not a hubload summary.json", file.display()))
}
