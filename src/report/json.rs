//! `summary.json`: the whole `Report`, as described by `schema/summary.schema.json`, written
//! and read back (with the rows of the files it names beside it).

use std::path::Path;

use anyhow::Context;

use super::Format;
use crate::report::document::Report;

/// Writes `summary.json`.
#[derive(Debug, Default)]
pub struct JsonFormat;

impl Format for JsonFormat {
    fn file_name(&self) -> &'static str {
        "summary.json"
    }
    fn render(&self, report: &Report) -> anyhow::Result<Vec<u8>> {
        let mut out = serde_json::to_vec_pretty(report)?;
        out.push(b'\n');
        Ok(out)
    }
}

/// The report of `path`, a summary.json or the directory holding one (the rows in the files
/// beside it not attached: [`read_whole`]).
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

/// The report of `summary` (a summary.json or its directory) with its rows from the files
/// beside it: the topics' names (`topic_names_file`), each level's topics (`topics_file`),
/// tenants' fairness rows (`fairness_file`) and subscribers' counts (`subscribers_file`).
pub fn read_whole(summary: &Path) -> anyhow::Result<Report> {
    let mut report = read(summary)?;
    super::topic_names::attach(&mut report, summary)?;
    super::subscribers_file::attach(&mut report, summary)?;
    super::topics_file::attach(&mut report, summary)?;
    super::fairness_file::attach(&mut report, summary)?;
    Ok(report)
}
