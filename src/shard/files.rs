//! Shard streams on disk: a shard appends its records to its file (and prints them), and
//! `hubload merge` reads its inputs (record files, old artifact files, directories of them,
//! `kubectl logs` dumps) one line at a time.

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::artifact::Load;
use super::assemble::{Input, Keyed};
use super::logs::{print_log_lines, record_lines};
use super::record::ShardRecord;
use crate::report::writer::append_synced;
use crate::shard_contract::ShardSpec;

/// A shard's stream being written: each record appended to `shard-<i>-of-<n>.jsonl` in its
/// output directory (synced, one JSON line) and printed as `HUBLOAD-SHARD` lines.
#[derive(Debug)]
pub struct ShardOut {
    path: PathBuf,
    spec: ShardSpec,
    /// This shard's part of each level's load, in level order.
    parts: Vec<Load>,
    key: (String, u32, u32),
    levels: usize,
    head: bool,
    ended: bool,
}

impl ShardOut {
    /// Start `dir/shard-<index>-of-<count>.jsonl` empty, for shard `spec` whose part of each
    /// level's load is `parts`.
    pub fn create(dir: &Path, spec: &ShardSpec, parts: Vec<Load>) -> anyhow::Result<Self> {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let path = dir.join(format!("shard-{}-of-{}.jsonl", spec.index, spec.count));
        fs::write(&path, b"").with_context(|| format!("cannot write {}", path.display()))?;
        Ok(ShardOut {
            path,
            spec: spec.clone(),
            parts,
            key: (spec.run_id.clone(), spec.index, spec.count),
            levels: 0,
            head: false,
            ended: false,
        })
    }

    /// The file written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The shard.
    pub fn spec(&self) -> &ShardSpec {
        &self.spec
    }

    /// This shard's part of level `i`'s load (`None` past the configured levels).
    pub fn part(&self, i: usize) -> Option<Load> {
        self.parts.get(i).copied()
    }

    /// The head has been written.
    pub fn has_head(&self) -> bool {
        self.head
    }

    /// The end has been written.
    pub fn has_ended(&self) -> bool {
        self.ended
    }

    /// Level records written so far.
    pub fn levels(&self) -> usize {
        self.levels
    }

    /// Append `rec` to the file, then print it.
    pub fn write(&mut self, rec: &ShardRecord) -> anyhow::Result<()> {
        let mut line = rec.to_json_line();
        line.push('\n');
        append_synced(&self.path, line.as_bytes())?;
        let (run_id, index, count) = &self.key;
        print_log_lines(&record_lines(
            (run_id, *index, *count),
            &rec.section(self.levels),
            rec,
        ));
        match rec {
            ShardRecord::Head(_) => self.head = true,
            ShardRecord::Level(_) => self.levels += 1,
            ShardRecord::End(_) => self.ended = true,
        }
        Ok(())
    }
}

/// What reading one line got.
#[derive(Debug, PartialEq, Eq)]
pub enum LineRead {
    /// A whole line is in the buffer (its newline removed).
    Line,
    /// The input has no more bytes now; the buffer holds what came of an unfinished line.
    Pending,
}

/// Read from `r` up to the next newline into `buf` (appending to what an earlier call left
/// there), never holding more than `max` bytes of one line: a longer line is an error.
pub fn read_line(r: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> std::io::Result<LineRead> {
    let room = (max + 1).saturating_sub(buf.len()) as u64;
    r.by_ref().take(room).read_until(b'\n', buf)?;
    if buf.last() == Some(&b'\n') {
        buf.pop();
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        return Ok(LineRead::Line);
    }
    if buf.len() > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a line is over the limit of {max} bytes"),
        ));
    }
    Ok(LineRead::Pending)
}

/// Feed every line of `r` to `input`, and each record it completes to `f`; then end it.
pub fn read_all(
    r: impl Read,
    input: &mut Input,
    f: &mut impl FnMut(Keyed) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut r = BufReader::with_capacity(64 * 1024, r);
    let mut buf = Vec::new();
    loop {
        let got = read_line(&mut r, &mut buf, input.max_line())?;
        if got == LineRead::Pending && buf.is_empty() {
            return Ok(());
        }
        let text = String::from_utf8_lossy(&buf);
        for k in input.line(&text)? {
            f(k)?;
        }
        buf.clear();
        if got == LineRead::Pending {
            return Ok(());
        }
    }
}

/// The files `paths` name: a file as is; a directory's `shard-*.jsonl` files (and
/// `shard-*.json` artifacts of earlier builds), sorted.
pub fn input_files(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if !p.is_dir() {
            out.push(p.clone());
            continue;
        }
        let mut files: Vec<PathBuf> = fs::read_dir(p)
            .with_context(|| format!("reading directory {}", p.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|f| {
                f.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                    n.starts_with("shard-") && (n.ends_with(".jsonl") || n.ends_with(".json"))
                })
            })
            .collect();
        files.sort();
        out.extend(files);
    }
    Ok(out)
}

/// Every record of `paths` (see [`input_files`]), one file after another, each read a line
/// at a time and handed to `f` as it completes. Errors name the file.
pub fn read_records(
    paths: &[PathBuf],
    mut f: impl FnMut(Keyed) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    for p in input_files(paths)? {
        let file = fs::File::open(&p).with_context(|| format!("reading {}", p.display()))?;
        let mut input = Input::default();
        read_all(file, &mut input, &mut f).with_context(|| p.display().to_string())?;
        for k in input.end().with_context(|| p.display().to_string())? {
            f(k)?;
        }
    }
    Ok(())
}

/// Every artifact in `paths`, whole (see [`read_records`]).
pub fn read_inputs(paths: &[PathBuf]) -> anyhow::Result<Vec<super::ShardArtifact>> {
    let mut text = String::new();
    let mut out = Vec::new();
    for p in input_files(paths)? {
        text.clear();
        fs::File::open(&p)
            .and_then(|mut f| f.read_to_string(&mut text))
            .with_context(|| format!("reading {}", p.display()))?;
        out.extend(super::assemble::from_log_dump(&text).with_context(|| p.display().to_string())?);
    }
    Ok(out)
}
