//! Shard records out of one input as its lines come: `HUBLOAD-SHARD` lines of either version
//! among other output (several shards interleaved), a shard's `.jsonl` record file, or a whole
//! JSON artifact written by an earlier build.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use super::artifact::ShardArtifact;
use super::logs::{level_number, parse_line, reassemble_v1, unpack, LogError, Parts, ShardKey};
use super::record::ShardRecord;

/// The longest line read from a log (`HUBLOAD-SHARD` lines are under 4 KiB; the rest is the
/// shard's own messages), bytes.
pub const MAX_LOG_LINE: usize = 64 * 1024;
/// The longest record line of a `.jsonl` file (and the largest whole artifact), bytes.
pub const MAX_RECORD_LINE: usize = 1 << 30;

/// One record of one shard's stream.
#[derive(Debug)]
pub struct Keyed {
    /// Run id, shard index, shard count.
    pub key: ShardKey,
    /// For a level record, its 0-based level number.
    pub level: usize,
    /// The record.
    pub record: ShardRecord,
}

/// What an input turned out to be, from its first line.
#[derive(Debug)]
enum Kind {
    Unknown,
    Log(Box<LineAssembler>),
    Jsonl(JsonlShard),
    /// A whole (pretty) JSON artifact, read at the input's end.
    Whole(String),
}

/// One input (a file or stdin) turned into records, line by line.
#[derive(Debug)]
pub struct Input {
    kind: Kind,
    line: usize,
    /// Only this shard's lines are read (a dump read once per shard); `None`: all.
    only: Option<ShardKey>,
}

impl Default for Input {
    fn default() -> Self {
        Input {
            kind: Kind::Unknown,
            line: 0,
            only: None,
        }
    }
}

impl Input {
    /// An input of which only shard `key`'s `HUBLOAD-SHARD` lines are read.
    pub fn only(key: ShardKey) -> Self {
        Input {
            only: Some(key),
            ..Input::default()
        }
    }

    /// The longest line this input may have now, bytes.
    pub fn max_line(&self) -> usize {
        match self.kind {
            Kind::Log(_) => MAX_LOG_LINE,
            _ => MAX_RECORD_LINE,
        }
    }

    /// Take one line (without its newline); the records it completes.
    pub fn line(&mut self, raw: &str) -> Result<Vec<Keyed>, LogError> {
        self.line += 1;
        let n = self.line;
        if matches!(self.kind, Kind::Unknown) {
            let t = raw.trim();
            if t.is_empty() {
                return Ok(Vec::new());
            }
            self.kind = if t == "{" {
                Kind::Whole(String::new())
            } else if t.starts_with('{') {
                Kind::Jsonl(JsonlShard::default())
            } else {
                Kind::Log(Box::new(LineAssembler {
                    only: self.only.clone(),
                    ..LineAssembler::default()
                }))
            };
        }
        match &mut self.kind {
            Kind::Log(a) => Ok(a.line(n, raw)?.into_iter().collect()),
            Kind::Jsonl(j) => Ok(j.line(n, raw)?.into_iter().collect()),
            Kind::Whole(text) => {
                if text.len() + raw.len() >= MAX_RECORD_LINE {
                    return Err(LogError::Malformed {
                        line: n,
                        reason: format!("the artifact is over {MAX_RECORD_LINE} bytes"),
                    });
                }
                text.push_str(raw);
                text.push('\n');
                Ok(Vec::new())
            }
            Kind::Unknown => Ok(Vec::new()),
        }
    }

    /// The input ended: what only its end completes (whole and version 1 artifacts), or an
    /// error naming a shard whose stream is incomplete.
    pub fn end(self) -> Result<Vec<Keyed>, LogError> {
        match self.kind {
            Kind::Unknown => Ok(Vec::new()),
            Kind::Log(a) => a.finish(),
            Kind::Jsonl(j) => j.finish().map(|()| Vec::new()),
            Kind::Whole(text) => {
                let a = ShardArtifact::from_json(&text).map_err(LogError::Whole)?;
                Ok(artifact_records(a))
            }
        }
    }

    /// The shards whose stream this input has begun and not ended, as errors.
    pub fn unended(&self) -> Vec<LogError> {
        match &self.kind {
            Kind::Log(a) => a.unended(),
            Kind::Jsonl(j) => j.unended().into_iter().collect(),
            _ => Vec::new(),
        }
    }
}

/// An artifact's records, keyed.
pub(crate) fn artifact_records(a: ShardArtifact) -> Vec<Keyed> {
    let key = (
        a.meta.run_id.clone(),
        a.meta.shard_index,
        a.meta.shard_count,
    );
    let mut level = 0;
    a.into_records()
        .into_iter()
        .map(|record| {
            let k = Keyed {
                key: key.clone(),
                level,
                record,
            };
            level += usize::from(matches!(k.record, ShardRecord::Level(_)));
            k
        })
        .collect()
}

/// Where one shard's stream stands.
#[derive(Debug, Default)]
struct Progress {
    head: bool,
    levels: usize,
    ended: bool,
}

/// Reassembles the sections of `HUBLOAD-SHARD` lines (several shards interleaved).
#[derive(Debug, Default)]
struct LineAssembler {
    open: BTreeMap<(ShardKey, String), Parts>,
    /// Finished sections: a hash of each part's chunk, so a repeated line (logs collected
    /// twice) is dropped and a different one is a conflict.
    done: BTreeMap<(ShardKey, String), Vec<u64>>,
    v1: BTreeMap<ShardKey, Parts>,
    streams: BTreeMap<ShardKey, Progress>,
    only: Option<ShardKey>,
}

fn hash(chunk: &str) -> u64 {
    let mut h = DefaultHasher::new();
    chunk.hash(&mut h);
    h.finish()
}

impl LineAssembler {
    fn line(&mut self, n: usize, raw: &str) -> Result<Option<Keyed>, LogError> {
        let Some(t) = parse_line(n, raw)? else {
            return Ok(None);
        };
        let key: ShardKey = (t.run_id.to_string(), t.index, t.count);
        if self.only.as_ref().is_some_and(|o| *o != key) {
            return Ok(None);
        }
        if t.v1 {
            self.v1.entry(key).or_default().add(n, &t)?;
            return Ok(None);
        }
        let id = (key, t.section.to_string());
        if let Some(hashes) = self.done.get(&id) {
            return match hashes.get(t.part as usize - 1) {
                Some(&h) if h == hash(t.chunk) && hashes.len() == t.parts as usize => Ok(None),
                _ => Err(LogError::Conflict {
                    run_id: id.0 .0,
                    index: t.index,
                    count: t.count,
                    part: t.part,
                }),
            };
        }
        let parts = self.open.entry(id.clone()).or_default();
        parts.add(n, &t)?;
        if !parts.complete() {
            return Ok(None);
        }
        let parts = self.open.remove(&id).unwrap_or_default();
        let packed = parts.packed();
        let hashes = packed
            .as_bytes()
            .chunks(super::logs::CHUNK_CHARS)
            .map(|c| hash(std::str::from_utf8(c).unwrap_or_default()))
            .collect();
        let (key, section) = id;
        let payload = |reason: String| LogError::Payload {
            run_id: key.0.clone(),
            index: key.1,
            count: key.2,
            reason: format!("{section}: {reason}"),
        };
        let text = unpack(&packed).map_err(payload)?;
        let record: ShardRecord =
            serde_json::from_str(&text).map_err(|e| payload(format!("not a shard record: {e}")))?;
        let progress = self.streams.entry(key.clone()).or_default();
        let (level, head, ended) = (progress.levels, progress.head, progress.ended);
        let fits = match (&record, section.as_str()) {
            (ShardRecord::Head(h), "head") => {
                let m = &h.meta;
                (m.run_id.as_str(), m.shard_index, m.shard_count) == (key.0.as_str(), key.1, key.2)
            }
            (ShardRecord::Level(_), s) => head && level_number(s) == Some(level),
            (ShardRecord::End(_), "end") => head,
            (ShardRecord::Second(r), s) => head && s == format!("second-{}", r.at),
            _ => false,
        };
        if !fits || ended {
            // An earlier section still waiting for parts is the cause: name it.
            if let Some(e) = self.unended().into_iter().find(|e| {
                matches!(e, LogError::Incomplete { run_id, index, .. } if (run_id, *index) == (&key.0, key.1))
            }) {
                return Err(e);
            }
            return Err(payload(format!(
                "out of order or mislabelled (after {level} level(s){})",
                if ended { " and the end" } else { "" }
            )));
        }
        let progress = self.streams.entry(key.clone()).or_default();
        match record {
            ShardRecord::Level(_) => progress.levels += 1,
            ShardRecord::End(_) => progress.ended = true,
            ShardRecord::Head(_) => progress.head = true,
            ShardRecord::Second(_) => {}
        }
        self.done.insert((key.clone(), section), hashes);
        Ok(Some(Keyed { key, level, record }))
    }

    fn finish(self) -> Result<Vec<Keyed>, LogError> {
        if let Some(e) = self.unended().into_iter().next() {
            return Err(e);
        }
        let mut out = Vec::new();
        for (key, parts) in self.v1 {
            out.extend(artifact_records(reassemble_v1(key, parts)?));
        }
        Ok(out)
    }

    /// A section with parts missing, or a stream without its end, as errors.
    fn unended(&self) -> Vec<LogError> {
        let open = self.open.iter().map(|((key, section), parts)| {
            let (missing, parts) = parts.missing();
            LogError::Incomplete {
                run_id: key.0.clone(),
                index: key.1,
                count: key.2,
                section: format!(" {section}"),
                missing,
                parts,
            }
        });
        let unended = self
            .streams
            .iter()
            .filter(|(_, p)| !p.ended)
            .map(|(key, p)| LogError::Unended {
                run_id: key.0.clone(),
                index: key.1,
                count: key.2,
                levels: p.levels,
            });
        open.chain(unended).collect()
    }
}

/// One shard's `.jsonl` file: a head, its levels, an end, one JSON record a line.
#[derive(Debug, Default)]
struct JsonlShard {
    key: Option<ShardKey>,
    progress: Progress,
}

impl JsonlShard {
    fn line(&mut self, n: usize, raw: &str) -> Result<Option<Keyed>, LogError> {
        if raw.trim().is_empty() {
            return Ok(None);
        }
        let bad = |reason: String| LogError::Malformed { line: n, reason };
        let record: ShardRecord =
            serde_json::from_str(raw).map_err(|e| bad(format!("not a shard record: {e}")))?;
        let key = match (&record, &self.key) {
            (ShardRecord::Head(h), None) => {
                let m = &h.meta;
                let key = (m.run_id.clone(), m.shard_index, m.shard_count);
                self.key = Some(key.clone());
                key
            }
            (ShardRecord::Head(_), Some(_)) => return Err(bad("a second head".into())),
            (_, None) => return Err(bad("a record before the head".into())),
            (_, Some(k)) if self.progress.ended => {
                return Err(bad(format!(
                    "a record after the end of shard {}/{}",
                    k.1, k.2
                )))
            }
            (_, Some(k)) => k.clone(),
        };
        let level = self.progress.levels;
        match record {
            ShardRecord::Level(_) => self.progress.levels += 1,
            ShardRecord::End(_) => self.progress.ended = true,
            ShardRecord::Head(_) | ShardRecord::Second(_) => {}
        }
        Ok(Some(Keyed { key, level, record }))
    }

    fn unended(&self) -> Option<LogError> {
        let key = self.key.as_ref()?;
        (!self.progress.ended).then(|| LogError::Unended {
            run_id: key.0.clone(),
            index: key.1,
            count: key.2,
            levels: self.progress.levels,
        })
    }

    fn finish(self) -> Result<(), LogError> {
        self.unended().map_or(Ok(()), Err)
    }
}

/// Every record in `text` (a log dump, a `.jsonl` file or a whole artifact), in order.
pub fn records_of(text: &str) -> Result<Vec<Keyed>, LogError> {
    let mut input = Input::default();
    let mut out = Vec::new();
    for raw in text.lines() {
        out.extend(input.line(raw)?);
    }
    out.extend(input.end()?);
    Ok(out)
}

/// Find every artifact in `text` (a log dump, possibly with `kubectl logs --prefix` prefixes,
/// timestamps and unrelated lines interleaved), reassemble and parse them. Sorted by run id
/// and shard index; the same artifact printed twice is returned once. Empty if there is none.
pub fn from_log_dump(text: &str) -> Result<Vec<ShardArtifact>, LogError> {
    let mut shards: BTreeMap<ShardKey, ShardArtifact> = BTreeMap::new();
    for k in records_of(text)? {
        match k.record {
            ShardRecord::Head(h) => {
                shards.insert(k.key, ShardArtifact::from_head(*h));
            }
            ShardRecord::Level(l) => {
                if let Some(a) = shards.get_mut(&k.key) {
                    a.levels.push(*l);
                }
            }
            ShardRecord::End(e) => {
                if let Some(a) = shards.get_mut(&k.key) {
                    a.set_end(*e);
                }
            }
            ShardRecord::Second(_) => {}
        }
    }
    Ok(shards.into_values().collect())
}

#[cfg(test)]
mod tests;
