//! The files beside summary.json that hold one JSON line per level (`topics.jsonl`,
//! `fairness.jsonl`): started empty, appended and synced once per level, never rewritten, and
//! read back line by line.
//!
//! A line is appended before the summary.json that lists its level, so a level in
//! summary.json always has its line. A crash in between leaves a line for a level summary.json
//! does not list, or a last line without its newline: readers skip both.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::report::document::Report;

/// Start `dir`'s file `name` empty (a directory used by an earlier run keeps none of its
/// rows); its name, for summary.json's field that names it.
pub fn create(dir: &Path, name: &str) -> anyhow::Result<String> {
    super::writer::write_atomic(&dir.join(name), b"")?;
    Ok(name.into())
}

/// Append `line` as one JSON line to `dir`'s file `name`, and sync it.
pub fn append<T: Serialize>(dir: &Path, name: &str, line: &T) -> anyhow::Result<()> {
    let mut bytes = serde_json::to_vec(line)?;
    bytes.push(b'\n');
    super::writer::append_synced(&dir.join(name), &bytes)
}

/// The file `name` (summary.json's field `field`) beside `summary`, the summary.json file or
/// its directory; `None` when the summary names no file.
pub fn beside(summary: &Path, name: Option<&str>, field: &str) -> anyhow::Result<Option<PathBuf>> {
    let Some(name) = name else {
        return Ok(None);
    };
    // A file name beside summary.json, never a path elsewhere.
    if Path::new(name).file_name() != Some(std::ffi::OsStr::new(name)) {
        anyhow::bail!("summary.json: {field} {name:?} is not a file name");
    }
    let dir = if summary.is_dir() {
        summary
    } else {
        summary.parent().unwrap_or(Path::new("."))
    };
    Ok(Some(dir.join(name)))
}

/// Call `f` with each complete line of `path` (summary.json's `field`), parsed, and its number
/// (from 1); a last line without its newline (a crash while appending it) is skipped.
pub fn for_each<T: DeserializeOwned>(
    path: &Path,
    field: &str,
    mut f: impl FnMut(usize, T) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot read {} (summary.json's {field})", path.display()))?;
    let mut reader = std::io::BufReader::new(file);
    let mut line = Vec::new();
    for n in 1.. {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if read == 0 || line.last() != Some(&b'\n') {
            break;
        }
        let parsed = serde_json::from_slice(&line)
            .with_context(|| format!("{} line {n} is not one level's rows", path.display()))?;
        f(n, parsed)?;
    }
    Ok(())
}

/// The row a line of `path` names: level `level` of `report` when its label is `label`; `None`
/// for a level summary.json does not list (written just before a crash).
pub fn row_of<'r>(
    report: &'r mut Report,
    level: Option<usize>,
    label: &str,
    path: &Path,
    n: usize,
) -> anyhow::Result<Option<&'r mut crate::report::model::LevelReport>> {
    let row = match level {
        Some(i) => report.levels.get_mut(i),
        None => report.total.as_mut(),
    };
    match row {
        Some(row) if row.label != label => anyhow::bail!(
            "{} line {n}: level {} is {:?} in summary.json, {label:?} here",
            path.display(),
            level.map_or("TOTAL".into(), |i| i.to_string()),
            row.label,
        ),
        row => Ok(row),
    }
}
