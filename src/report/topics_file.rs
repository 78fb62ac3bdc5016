//! `topics.jsonl`: each level's per-topic rows, one JSON line per level, appended once when the
//! level ends and never rewritten; and reading them back into a loaded summary's rows.
//!
//! A line is `{"level":I,"label":L,"topics":[TopicReport…]}`. The line is appended (and synced)
//! before the summary.json that lists the level, so a level in summary.json always has its
//! line. A crash in between leaves a line for a level summary.json does not list, or a last
//! line without its newline: the reader skips both.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::run_report::Report;
use crate::summary::TopicReport;

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

/// Start `dir`'s file empty (a directory used by an earlier run keeps none of its topics);
/// its name, for summary.json's `topics_file`.
pub fn create(dir: &Path) -> anyhow::Result<String> {
    super::writer::write_atomic(&dir.join(FILE_NAME), b"")?;
    Ok(FILE_NAME.into())
}

/// Append level `level`'s line to `dir`'s file and sync it.
pub fn append(dir: &Path, level: usize, label: &str, topics: &[TopicReport]) -> anyhow::Result<()> {
    let path = dir.join(FILE_NAME);
    let line = LevelLine {
        level,
        label: label.to_string(),
        topics,
    };
    let mut bytes = serde_json::to_vec(&line)?;
    bytes.push(b'\n');
    super::writer::append_synced(&path, &bytes)
}

/// Where `report`'s per-topic rows are, when they are not inline: its `topics_file` next to
/// `summary` (the summary.json file or its directory).
fn path_of(report: &Report, summary: &Path) -> anyhow::Result<Option<PathBuf>> {
    let Some(name) = &report.topics_file else {
        return Ok(None);
    };
    // A file name beside summary.json, never a path elsewhere.
    if Path::new(name).file_name() != Some(std::ffi::OsStr::new(name)) {
        anyhow::bail!("summary.json: topics_file {name:?} is not a file name");
    }
    let dir = if summary.is_dir() {
        summary
    } else {
        summary.parent().unwrap_or(Path::new("."))
    };
    Ok(Some(dir.join(name)))
}

/// Fill the rows of `report` (read from `summary`) with their topics from its `topics_file`.
/// A summary with inline topics (written before the file existed) is left as it is.
pub fn attach(report: &mut Report, summary: &Path) -> anyhow::Result<()> {
    let Some(path) = path_of(report, summary)? else {
        return Ok(());
    };
    let file = std::fs::File::open(&path).with_context(|| {
        format!(
            "cannot read {} (summary.json's topics_file)",
            path.display()
        )
    })?;
    let mut reader = std::io::BufReader::new(file);
    let mut line = Vec::new();
    for n in 1.. {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .with_context(|| format!("cannot read {}", path.display()))?;
        // The end, or a line cut short by a crash (its level is not in summary.json).
        if read == 0 || line.last() != Some(&b'\n') {
            break;
        }
        let l: LevelLine<Vec<TopicReport>> = serde_json::from_slice(&line)
            .with_context(|| format!("{} line {n} is not a level's topics", path.display()))?;
        if let Some(row) = report.levels.get_mut(l.level) {
            if row.label != l.label {
                anyhow::bail!(
                    "{} line {n}: level {} is {:?} in summary.json, {:?} here",
                    path.display(),
                    l.level,
                    row.label,
                    l.label
                );
            }
            row.topics = l.topics;
        }
    }
    Ok(())
}

/// `summary` (a summary.json or its directory) with every level's topics attached.
pub fn load_with_topics(summary: &Path) -> anyhow::Result<Report> {
    let mut report = super::json::read(summary)?;
    attach(&mut report, summary)?;
    Ok(report)
}
