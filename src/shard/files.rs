//! Shard streams on disk: a shard appends its records to its file (and prints them), and
//! `hubload merge` reads its inputs (record files, old artifact files, directories of them,
//! `kubectl logs` dumps) one line at a time.

use std::collections::{BTreeSet, VecDeque};
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;

use super::artifact::Load;
use super::assemble::{Input, Keyed, MAX_LOG_LINE};
use super::logs::{parse_line, print_log_lines, record_lines, ShardKey};
use super::record::{ShardRecord, ShardSecond};
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
    /// Held while a record is written, so the seconds' writer ([`SecondsOut`]) and this one
    /// never interleave within the file.
    lock: Arc<Mutex<()>>,
}

/// Where a shard's seconds go: the same file and stdout as its other records.
#[derive(Debug, Clone)]
pub struct SecondsOut {
    path: PathBuf,
    key: (String, u32, u32),
    lock: Arc<Mutex<()>>,
}

impl SecondsOut {
    /// Append `s` to the file, then print it.
    pub fn write(&self, s: ShardSecond) -> anyhow::Result<()> {
        emit(
            &self.path,
            &self.key,
            0,
            &ShardRecord::Second(Box::new(s)),
            &self.lock,
        )
    }
}

/// Append `rec` to `path` (synced), then print it as `HUBLOAD-SHARD` lines, under `lock`.
fn emit(
    path: &Path,
    (run_id, index, count): &(String, u32, u32),
    level: usize,
    rec: &ShardRecord,
    lock: &Mutex<()>,
) -> anyhow::Result<()> {
    let mut line = rec.to_json_line();
    line.push('\n');
    let _held = lock.lock().unwrap_or_else(|e| e.into_inner());
    append_synced(path, line.as_bytes())?;
    print_log_lines(&record_lines(
        (run_id, *index, *count),
        &rec.section(level),
        rec,
    ));
    Ok(())
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
            lock: Arc::default(),
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

    /// A writer of this stream's seconds, for a task beside the run's.
    pub fn seconds(&self) -> SecondsOut {
        SecondsOut {
            path: self.path.clone(),
            key: self.key.clone(),
            lock: self.lock.clone(),
        }
    }

    /// Append `rec` to the file, then print it.
    pub fn write(&mut self, rec: &ShardRecord) -> anyhow::Result<()> {
        emit(&self.path, &self.key, self.levels, rec, &self.lock)?;
        match rec {
            ShardRecord::Head(_) => self.head = true,
            ShardRecord::Level(_) => self.levels += 1,
            ShardRecord::End(_) => self.ended = true,
            ShardRecord::Second(_) => {}
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
    Read::take(&mut *r, room).read_until(b'\n', buf)?;
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

/// Every record of `paths` (see [`input_files`]), handed to `f` level by level: every
/// shard's head and level 0, then every shard's level 1, and so on, each input read a line at
/// a time. A log dump holding several shards is read once per shard, so a level is complete
/// as soon as possible and the merge holds about one level at a time. Errors name the file.
pub fn read_records(
    paths: &[PathBuf],
    mut f: impl FnMut(Keyed) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut streams = Vec::new();
    for p in input_files(paths)? {
        let keys = shards_in(&p).with_context(|| format!("reading {}", p.display()))?;
        if keys.len() <= 1 {
            streams.push(Stream::open(&p, Input::default())?);
        } else {
            for k in keys {
                streams.push(Stream::open(&p, Input::only(k))?);
            }
        }
    }
    for level in 0.. {
        for s in &mut streams {
            while let Some(k) = s.peek()? {
                if matches!(k.record, ShardRecord::Level(_)) && k.level > level {
                    break;
                }
                if let Some(k) = s.ahead.pop_front() {
                    f(k)?;
                }
            }
        }
        if streams.iter().all(|s| s.done && s.ahead.is_empty()) {
            break;
        }
    }
    Ok(())
}

/// The shards whose `HUBLOAD-SHARD` lines `path` holds (empty for a record file or a whole
/// artifact, which hold one): a first pass over the lines' headers, nothing decoded.
fn shards_in(path: &Path) -> anyhow::Result<BTreeSet<ShardKey>> {
    let mut r = BufReader::with_capacity(64 * 1024, fs::File::open(path)?);
    let mut keys = BTreeSet::new();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        // An over-long line is named by the second pass, which reads every line.
        let Ok(got) = read_line(&mut r, &mut buf, MAX_LOG_LINE) else {
            return Ok(BTreeSet::new());
        };
        if got == LineRead::Pending && buf.is_empty() {
            return Ok(keys);
        }
        let line = String::from_utf8_lossy(&buf);
        if keys.is_empty() && line.trim_start().starts_with('{') {
            return Ok(keys);
        }
        if let Ok(Some(t)) = parse_line(0, &line) {
            if !keys.contains(&(t.run_id.to_string(), t.index, t.count)) {
                keys.insert((t.run_id.to_string(), t.index, t.count));
            }
        }
        if got == LineRead::Pending {
            return Ok(keys);
        }
    }
}

/// One input read a record at a time, with the records its last line completed kept ahead.
struct Stream {
    name: PathBuf,
    reader: BufReader<fs::File>,
    input: Option<Input>,
    buf: Vec<u8>,
    ahead: VecDeque<Keyed>,
    done: bool,
}

impl Stream {
    fn open(path: &Path, input: Input) -> anyhow::Result<Self> {
        let file = fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
        Ok(Stream {
            name: path.to_path_buf(),
            reader: BufReader::with_capacity(64 * 1024, file),
            input: Some(input),
            buf: Vec::new(),
            ahead: VecDeque::new(),
            done: false,
        })
    }

    /// The next record (`None` at the end).
    fn peek(&mut self) -> anyhow::Result<Option<&Keyed>> {
        let name = self.name.display().to_string();
        while self.ahead.is_empty() && !self.done {
            let Some(input) = self.input.as_mut() else {
                break;
            };
            self.buf.clear();
            let got = read_line(&mut self.reader, &mut self.buf, input.max_line())
                .context(name.clone())?;
            if !(got == LineRead::Pending && self.buf.is_empty()) {
                let records = input
                    .line(&String::from_utf8_lossy(&self.buf))
                    .context(name.clone())?;
                self.ahead.extend(records);
            }
            if got == LineRead::Pending {
                self.done = true;
                if let Some(input) = self.input.take() {
                    self.ahead.extend(input.end().context(name.clone())?);
                }
            }
        }
        Ok(self.ahead.front())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::logs::tests::artifact;
    use crate::shard::logs::to_log_lines;

    #[test]
    fn inputs_are_read_level_by_level_whatever_they_hold() {
        let dir = tempfile::tempdir().unwrap();
        // Shards 0 and 1 one after the other in one dump, as `kubectl logs -l` collects them;
        // shard 2 as its record file in a directory, beside files that are not records.
        let dump = dir.path().join("shards.log");
        let mut text = String::from("noise\n");
        for i in 0..2 {
            text.push_str(&to_log_lines(&artifact("r", i, 3, 4)).join("\n"));
            text.push('\n');
        }
        fs::write(&dump, text).unwrap();
        let out = dir.path().join("out");
        fs::create_dir(&out).unwrap();
        let jsonl: String = artifact("r", 2, 3, 4)
            .into_records()
            .iter()
            .map(|r| r.to_json_line() + "\n")
            .collect();
        fs::write(out.join("shard-2-of-3.jsonl"), jsonl).unwrap();
        fs::write(out.join("summary.json"), "{}").unwrap();

        let mut got = Vec::new();
        read_records(&[dump, out], |k| {
            got.push((k.record.section(k.level), k.key.1));
            Ok(())
        })
        .unwrap();
        let want: Vec<(String, u32)> = (0..3)
            .flat_map(|i| [("head".to_string(), i), ("level-0".to_string(), i)])
            .chain((1..3).flat_map(|l| (0..3).map(move |i| (format!("level-{l}"), i))))
            // A shard's end comes with its last level.
            .chain((0..3).flat_map(|i| [("level-3".to_string(), i), ("end".to_string(), i)]))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_line_over_the_limit_is_an_error() {
        let mut r = std::io::Cursor::new(vec![b'x'; 100]);
        let mut buf = Vec::new();
        let e = read_line(&mut r, &mut buf, 64).unwrap_err();
        assert_eq!(e.to_string(), "a line is over the limit of 64 bytes");
        let mut r = std::io::Cursor::new(b"abc\r\nde".to_vec());
        buf.clear();
        assert_eq!(read_line(&mut r, &mut buf, 64).unwrap(), LineRead::Line);
        assert_eq!(buf, b"abc");
        buf.clear();
        assert_eq!(read_line(&mut r, &mut buf, 64).unwrap(), LineRead::Pending);
        assert_eq!(buf, b"de");
    }
}
