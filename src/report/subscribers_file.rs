//! `subscribers.jsonl`: every subscriber's delivery counts (`levels[].delivery.per_subscriber`),
//! one JSON line per level with deliveries (`{"level":I,"label":L,"subscribers":{key:counts}}`),
//! appended once when the level ends, and TOTAL's (`"level":null`) when the run ends; and
//! reading them back into a loaded summary. The file's rules: `level_lines`.
//!
//! The map grows with the subscribers (63 KB of a 140 KB summary.json at 200 tenants), and
//! summary.json is rewritten after every level, so it lives here.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::level_lines;
use crate::report::document::Report;
use crate::subscriber::DeliveryCounts;

/// The file's name in the report directory (summary.json's `subscribers_file`).
pub const FILE_NAME: &str = "subscribers.jsonl";

/// One line: a level's (or TOTAL's) subscribers, keyed `<topic index>/<subscriber index>`.
#[derive(Debug, Serialize, Deserialize)]
struct SubscribersLine<T> {
    /// Index of the level in summary.json's `levels`; `null` for TOTAL.
    level: Option<usize>,
    /// The row's label, as it has it.
    label: String,
    subscribers: T,
}

/// Start `dir`'s file empty; its name, for summary.json's `subscribers_file`.
pub fn create(dir: &Path) -> anyhow::Result<String> {
    level_lines::create(dir, FILE_NAME)
}

/// Append the line of level `level` (`None`: TOTAL) with `subscribers` to `dir`'s file and
/// sync it.
pub fn append(
    dir: &Path,
    level: Option<usize>,
    label: &str,
    subscribers: &BTreeMap<String, DeliveryCounts>,
) -> anyhow::Result<()> {
    let line = SubscribersLine {
        level,
        label: label.to_string(),
        subscribers,
    };
    level_lines::append(dir, FILE_NAME, &line)
}

/// Fill the delivery rows of `report` (read from `summary`) with their subscribers from its
/// `subscribers_file`. A summary with them inline (before `schema_version` 4) is left as it
/// is; a run that crashed before its end has no TOTAL line, and TOTAL no subscribers.
pub fn attach(report: &mut Report, summary: &Path) -> anyhow::Result<()> {
    let field = "subscribers_file";
    let Some(path) = level_lines::beside(summary, report.subscribers_file.as_deref(), field)?
    else {
        return Ok(());
    };
    type Line = SubscribersLine<BTreeMap<String, DeliveryCounts>>;
    level_lines::for_each(&path, field, |n, l: Line| {
        let row = level_lines::row_of(report, l.level, &l.label, &path, n)?;
        if let Some(d) = row.and_then(|r| r.delivery.as_mut()) {
            d.per_subscriber = l.subscribers;
        }
        Ok(())
    })
}
