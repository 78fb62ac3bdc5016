//! `topics.jsonl`: each level's per-topic rows, one JSON line per level
//! (`{"level":I,"label":L,"topics":[TopicReport…]}`), appended once when the level ends; and
//! reading them back into a loaded summary's rows. The file's rules: `level_lines`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use std::io::Write;

use super::html::worst_topics::keep_worst;
use super::level_lines;
use super::topics_csv::{headers, write_level_rows, APPENDED};
use super::writer::write_atomic_with;
use crate::report::document::Report;
use crate::report::model::TopicReport;

/// The file's name in the report directory (summary.json's `topics_file`).
pub const FILE_NAME: &str = "topics.jsonl";

/// One line: a level's topics that saw an attempt, in topic order.
#[derive(Debug, Serialize, Deserialize)]
struct LevelLine<T> {
    /// Index of the level in summary.json's `levels`.
    level: usize,
    /// The level's label, as its row has it.
    label: String,
    topics: T,
}

/// Start `dir`'s file empty; its name, for summary.json's `topics_file`.
pub fn create(dir: &Path) -> anyhow::Result<String> {
    level_lines::create(dir, FILE_NAME)
}

/// Append level `level`'s line to `dir`'s file and sync it.
pub fn append(dir: &Path, level: usize, label: &str, topics: &[TopicReport]) -> anyhow::Result<()> {
    let line = LevelLine {
        level,
        label: label.to_string(),
        topics,
    };
    level_lines::append(dir, FILE_NAME, &line)
}

/// Call `f` with each level's index and rows as `dir`'s file holds them, one line at a time.
pub fn for_each_level(
    dir: &Path,
    mut f: impl FnMut(usize, Vec<TopicReport>),
) -> anyhow::Result<()> {
    let path = dir.join(FILE_NAME);
    level_lines::for_each(&path, "topics_file", |_, l: LevelLine<Vec<TopicReport>>| {
        f(l.level, l.topics);
        Ok(())
    })
}

/// Write the [`APPENDED`] files (topics.csv, tenants.csv) of `report` (read from `summary`,
/// without its topic rows) into `dir`, reading its `topics_file` a level at a time: memory
/// holds one level's rows, then only the topics report.html ranks (`keep_worst`). False, and
/// nothing written, for a summary with inline topics (no file).
pub fn write_appended(report: &mut Report, summary: &Path, dir: &Path) -> anyhow::Result<bool> {
    let field = "topics_file";
    let Some(path) = level_lines::beside(summary, report.topics_file.as_deref(), field)? else {
        return Ok(false);
    };
    for (k, name) in APPENDED.iter().enumerate() {
        write_atomic_with(&dir.join(name), |out| {
            out.write_all(&headers(report)?[k])?;
            level_lines::for_each(&path, field, |n, l: LevelLine<Vec<TopicReport>>| {
                if level_lines::row_of(report, Some(l.level), &l.label, &path, n)?.is_none() {
                    return Ok(());
                }
                report.levels[l.level].topics = l.topics;
                write_level_rows(report, l.level, k, out)?;
                keep_worst(&mut report.levels[l.level]);
                Ok(())
            })
        })?;
    }
    Ok(true)
}

/// Fill the rows of `report` (read from `summary`) with their topics from its `topics_file`.
/// A summary with inline topics (written before the file existed) is left as it is.
pub fn attach(report: &mut Report, summary: &Path) -> anyhow::Result<()> {
    let field = "topics_file";
    let Some(path) = level_lines::beside(summary, report.topics_file.as_deref(), field)? else {
        return Ok(());
    };
    level_lines::for_each(&path, field, |n, l: LevelLine<Vec<TopicReport>>| {
        if let Some(row) = level_lines::row_of(report, Some(l.level), &l.label, &path, n)? {
            row.topics = l.topics;
        }
        Ok(())
    })
}
