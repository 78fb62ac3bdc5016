//! A shard's records as stdout lines, so `kubectl logs -l job-name=… --tail=-1` (or
//! `kubectl logs -f`) collects a run: the line codec, and the version 1 lines' reassembly.
//!
//! Each `HUBLOAD-SHARD v2 …` line carries a chunk of one [`ShardRecord`] (`head`, `level-<n>`,
//! `second-<unix>` or `end`; base64 of zlib compact JSON), is under `PIPE_BUF` and written in
//! one `write(2)`, so it reaches the merged log whole; anything before the tag is ignored.
//! docs/shards.md gives the format.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use flate2::Compression;

use super::artifact::{ArtifactError, ShardArtifact};
use super::record::ShardRecord;

/// The tag every artifact line carries.
pub const LINE_TAG: &str = "HUBLOAD-SHARD";
/// The line format version this build writes.
pub const LINE_VERSION: &str = "v2";
/// The version of whole-artifact lines, still read.
pub const LINE_VERSION_1: &str = "v1";
/// Base64 characters per line (a multiple of 4); with a run id of at most 253 characters a
/// line with its newline stays under [`MAX_LINE_BYTES`].
pub const CHUNK_CHARS: usize = 3 * 1024;
/// `PIPE_BUF` on Linux: a pipe write of at most this many bytes is never split or interleaved.
pub const MAX_LINE_BYTES: usize = 4096;
/// The largest decompressed artifact accepted (a guard against a corrupt or hostile dump).
const MAX_ARTIFACT_BYTES: u64 = 1 << 30;

/// Why a log dump could not be turned into artifacts; each message names the shard or line.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// A line with the tag that does not parse.
    #[error("line {line}: malformed {LINE_TAG} line: {reason}")]
    Malformed {
        /// 1-based line number in the dump.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A line written by a different line format version.
    #[error("line {line}: {LINE_TAG} line version {version} is not supported (this hubload reads {LINE_VERSION_1} and {LINE_VERSION})")]
    Version {
        /// 1-based line number.
        line: usize,
        /// The version found.
        version: String,
    },
    /// The same part of one shard appears twice with different content.
    #[error("run {run_id} shard {index}/{count}: part {part} appears twice with different content (did the shard run twice?)")]
    Conflict {
        /// Run id.
        run_id: String,
        /// Shard index.
        index: u32,
        /// Shard count.
        count: u32,
        /// The part.
        part: u32,
    },
    /// Some parts of a shard are missing (truncated logs: use `--tail=-1`).
    #[error("run {run_id} shard {index}/{count}{section}: missing part(s) {missing} of {parts}; were the logs truncated? (kubectl logs needs --tail=-1)")]
    Incomplete {
        /// Run id.
        run_id: String,
        /// Shard index.
        index: u32,
        /// Shard count.
        count: u32,
        /// The section, after a space (`" level-2"`), or empty for a version 1 artifact.
        section: String,
        /// Missing part numbers, comma-separated.
        missing: String,
        /// Parts expected.
        parts: u32,
    },
    /// The reassembled payload is not a valid artifact.
    #[error("run {run_id} shard {index}/{count}: {reason}")]
    Payload {
        /// Run id.
        run_id: String,
        /// Shard index.
        index: u32,
        /// Shard count.
        count: u32,
        /// What is wrong.
        reason: String,
    },
    /// A shard's stream stopped before its end record (the shard was killed, or the log cut).
    #[error("run {run_id} shard {index}/{count}: the stream ends after {levels} level(s) without its end record; was the shard killed, or the log cut? (kubectl logs needs --tail=-1)")]
    Unended {
        /// Run id.
        run_id: String,
        /// Shard index.
        index: u32,
        /// Shard count.
        count: u32,
        /// Level records read.
        levels: usize,
    },
    /// A whole JSON artifact (an earlier build's file) that does not read.
    #[error(transparent)]
    Whole(ArtifactError),
    /// The artifact inside the lines is invalid.
    #[error("run {run_id} shard {index}/{count}: {source}")]
    Artifact {
        /// Run id.
        run_id: String,
        /// Shard index.
        index: u32,
        /// Shard count.
        count: u32,
        /// The artifact error.
        source: ArtifactError,
    },
}

/// The key of one shard's stream: run id, index, count.
pub type ShardKey = (String, u32, u32);

/// The most parts one section may have (about 600 MB of base64): a bound on what a corrupt
/// or hostile dump can make a reader hold.
pub const MAX_PARTS: u32 = 200_000;

/// base64 of the zlib-compressed `json`.
pub(crate) fn pack(json: &[u8]) -> String {
    let mut z = ZlibEncoder::new(Vec::with_capacity(json.len() / 2), Compression::default());
    // Writing into a Vec cannot fail.
    let _ = z.write_all(json);
    B64.encode(z.finish().unwrap_or_default())
}

/// A section's chunks, concatenated, back to its JSON text (at most 1 GiB decompressed).
pub fn unpack(packed: &str) -> Result<String, String> {
    let z = B64.decode(packed).map_err(|e| format!("not base64: {e}"))?;
    let mut json = Vec::new();
    ZlibDecoder::new(z.as_slice())
        .take(MAX_ARTIFACT_BYTES)
        .read_to_end(&mut json)
        .map_err(|e| format!("corrupt compressed payload: {e}"))?;
    String::from_utf8(json).map_err(|_| "payload is not UTF-8".to_string())
}

/// `rec`, the section `section` of shard `index`/`count` of run `run_id`, as lines (without
/// newlines), in part order.
pub fn record_lines(
    (run_id, index, count): (&str, u32, u32),
    section: &str,
    rec: &ShardRecord,
) -> Vec<String> {
    let packed = pack(rec.to_json_line().as_bytes());
    let chunks: Vec<&str> = packed
        .as_bytes()
        .chunks(CHUNK_CHARS)
        // base64 output is ASCII, so every chunk boundary is a char boundary.
        .map(|c| std::str::from_utf8(c).unwrap_or_default())
        .collect();
    let parts = chunks.len();
    chunks
        .iter()
        .enumerate()
        .map(|(i, c)| {
            format!(
                "{LINE_TAG} {LINE_VERSION} {run_id} {index}/{count} {section} {}/{parts} {c}",
                i + 1
            )
        })
        .collect()
}

/// A whole artifact as the lines its shard prints over its run: head, levels, end.
pub fn to_log_lines(a: &ShardArtifact) -> Vec<String> {
    let m = &a.meta;
    let key = (m.run_id.as_str(), m.shard_index, m.shard_count);
    let mut level = 0;
    let mut out = Vec::new();
    for rec in a.clone().into_records() {
        out.extend(record_lines(key, &rec.section(level), &rec));
        level += usize::from(matches!(rec, ShardRecord::Level(_)));
    }
    out
}

/// Print `lines` to stdout, each with its newline in a single `write(2)` (under
/// [`MAX_LINE_BYTES`], so a pipe delivers it whole).
pub fn print_log_lines(lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = out.flush();
    let mut buf = String::with_capacity(MAX_LINE_BYTES);
    for line in lines {
        buf.clear();
        buf.push_str(line);
        buf.push('\n');
        // Stdout is line-buffered with nothing buffered now, so a buffer ending in a newline
        // goes straight to one write(2).
        let _ = out.write_all(buf.as_bytes());
    }
    let _ = out.flush();
}

/// One `HUBLOAD-SHARD` line, parsed.
#[derive(Debug)]
pub struct TagLine<'a> {
    /// A version 1 line (a part of a whole artifact; `section` is empty).
    pub v1: bool,
    /// Run id.
    pub run_id: &'a str,
    /// Shard index.
    pub index: u32,
    /// Shard count.
    pub count: u32,
    /// `head`, `level-<n>`, `second-<unix>` or `end` (version 2).
    pub section: &'a str,
    /// 1-based part number.
    pub part: u32,
    /// Parts in the section.
    pub parts: u32,
    /// The base64 chunk.
    pub chunk: &'a str,
}

/// Parse line number `line` of a log: `None` when it is not a `HUBLOAD-SHARD` line (the tag
/// mentioned in other text does not count), an error naming the line when it is one that
/// does not parse.
pub fn parse_line(line: usize, raw: &str) -> Result<Option<TagLine<'_>>, LogError> {
    let Some(pos) = raw.find(LINE_TAG) else {
        return Ok(None);
    };
    let rest = &raw[pos + LINE_TAG.len()..];
    // Only `TAG v<digit>…` is ours; the tag inside other text (like this module's docs) is not.
    let Some(rest) = rest.strip_prefix(" v") else {
        return Ok(None);
    };
    if !rest.starts_with(|c: char| c.is_ascii_digit()) {
        return Ok(None);
    }
    let mut f = rest.split_ascii_whitespace();
    let version = format!("v{}", f.next().unwrap_or_default());
    let v1 = version == LINE_VERSION_1;
    if !v1 && version != LINE_VERSION {
        return Err(LogError::Version { line, version });
    }
    let bad = |reason: &str| LogError::Malformed {
        line,
        reason: reason.to_string(),
    };
    let (run_id, shard) = (f.next(), f.next());
    let section = if v1 { Some("") } else { f.next() };
    let (Some(run_id), Some(shard), Some(section), Some(part), Some(chunk), None) =
        (run_id, shard, section, f.next(), f.next(), f.next())
    else {
        return Err(bad(if v1 {
            "expected: <run_id> <index>/<count> <part>/<parts> <base64> (was the line cut, or mixed with other output?)"
        } else {
            "expected: <run_id> <index>/<count> <section> <part>/<parts> <base64> (was the line cut, or mixed with other output?)"
        }));
    };
    let (index, count) = fraction(shard).ok_or_else(|| bad("bad <index>/<count>"))?;
    let (part, parts) = fraction(part).ok_or_else(|| bad("bad <part>/<parts>"))?;
    if count == 0 || index >= count || part == 0 || part > parts {
        return Err(bad("index or part out of range"));
    }
    if parts > MAX_PARTS {
        return Err(bad(&format!(
            "{parts} parts is over the limit of {MAX_PARTS}"
        )));
    }
    let second = section
        .strip_prefix("second-")
        .is_some_and(|n| n.parse::<u64>().is_ok());
    if !v1 && section != "head" && section != "end" && !second && level_number(section).is_none() {
        return Err(bad(&format!(
            "unknown section {section:?} (expected head, level-<n>, second-<unix> or end)"
        )));
    }
    Ok(Some(TagLine {
        v1,
        run_id,
        index,
        count,
        section,
        part,
        parts,
        chunk,
    }))
}

/// The level number of a `level-<n>` section.
pub fn level_number(section: &str) -> Option<usize> {
    section.strip_prefix("level-")?.parse().ok()
}

fn fraction(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once('/')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// The parts of one section (or of a version 1 artifact) as they come in.
#[derive(Debug, Default)]
pub struct Parts {
    parts: u32,
    chunks: BTreeMap<u32, String>,
}

impl Parts {
    /// Add `t`'s chunk; the same part twice must be the same chunk. `line` names the line.
    pub fn add(&mut self, line: usize, t: &TagLine<'_>) -> Result<(), LogError> {
        if self.parts != 0 && self.parts != t.parts {
            return Err(LogError::Malformed {
                line,
                reason: format!(
                    "run {} shard {}/{} {} was earlier split into {} parts, here {}",
                    t.run_id,
                    t.index,
                    t.count,
                    if t.v1 { "" } else { t.section },
                    self.parts,
                    t.parts
                ),
            });
        }
        self.parts = t.parts;
        match self.chunks.get(&t.part) {
            Some(prev) if prev != t.chunk => Err(LogError::Conflict {
                run_id: t.run_id.to_string(),
                index: t.index,
                count: t.count,
                part: t.part,
            }),
            Some(_) => Ok(()),
            None => {
                self.chunks.insert(t.part, t.chunk.to_string());
                Ok(())
            }
        }
    }

    /// Every part is here.
    pub fn complete(&self) -> bool {
        self.parts != 0 && self.chunks.len() == self.parts as usize
    }

    /// The parts not seen, comma-separated, and how many there are in all.
    pub fn missing(&self) -> (String, u32) {
        let m: Vec<String> = (1..=self.parts)
            .filter(|i| !self.chunks.contains_key(i))
            .map(|i| i.to_string())
            .collect();
        (m.join(", "), self.parts)
    }

    /// The chunks concatenated in part order.
    pub fn packed(self) -> String {
        self.chunks.into_values().collect()
    }
}

/// A version 1 shard's artifact from all its parts.
pub fn reassemble_v1(
    (run_id, index, count): ShardKey,
    p: Parts,
) -> Result<ShardArtifact, LogError> {
    if !p.complete() {
        let (missing, parts) = p.missing();
        return Err(LogError::Incomplete {
            run_id,
            index,
            count,
            section: String::new(),
            missing,
            parts,
        });
    }
    let text = unpack(&p.packed()).map_err(|reason| LogError::Payload {
        run_id: run_id.clone(),
        index,
        count,
        reason,
    })?;
    let a = ShardArtifact::from_json(&text).map_err(|source| LogError::Artifact {
        run_id: run_id.clone(),
        index,
        count,
        source,
    })?;
    let m = &a.meta;
    if (m.run_id.as_str(), m.shard_index, m.shard_count) != (run_id.as_str(), index, count) {
        return Err(LogError::Payload {
            run_id,
            index,
            count,
            reason: format!(
                "the artifact inside says run {} shard {}/{}",
                m.run_id, m.shard_index, m.shard_count
            ),
        });
    }
    Ok(a)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::shard::artifact::{Load, ShardLevel};
    use crate::shard::fixtures::empty_artifact;
    use crate::shard::fixtures::random_level;
    use crate::shard_contract::ShardSpec;

    /// An artifact with `levels` levels of 2,000 random events each.
    pub(crate) fn artifact(run_id: &str, index: u32, count: u32, levels: u64) -> ShardArtifact {
        let spec = ShardSpec {
            index,
            count,
            run_id: run_id.into(),
            start_at: None,
        };
        ShardArtifact {
            topics: (0..40)
                .map(|i| format!("t{i}.org.schema.WSO2.v1.event.login"))
                .collect(),
            registration: None,
            levels: (0..levels)
                .map(|l| {
                    let stats = random_level(u64::from(index) * 1000 + l, 2_000);
                    ShardLevel::new(&l.to_string(), Load::Concurrency(l + 1), stats)
                })
                .collect(),
            ..empty_artifact(&spec, "http://hub:9000/hub")
        }
    }

    #[test]
    fn lines_are_short_and_tagged_by_section() {
        let long_id = "r".repeat(crate::shard_contract::env::MAX_RUN_ID);
        let a = artifact(&long_id, 2, 3, 20);
        let lines = to_log_lines(&a);
        let mut sections: Vec<String> = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            // PIPE_BUF: a pipe delivers a write of at most 4096 bytes whole.
            assert!(
                l.len() < 4096,
                "line {i} is {} bytes with its newline",
                l.len() + 1
            );
            assert!(!l.contains('\n'));
            let t = parse_line(i + 1, l).unwrap().unwrap();
            assert_eq!((t.v1, t.run_id, t.index, t.count), (false, &*long_id, 2, 3));
            assert!(l.starts_with(&format!("HUBLOAD-SHARD v2 {long_id} 2/3 {} ", t.section)));
            if sections.last().map(String::as_str) != Some(t.section) {
                sections.push(t.section.to_string());
            }
        }
        let want: Vec<String> = std::iter::once("head".to_string())
            .chain((0..20).map(|l| format!("level-{l}")))
            .chain(std::iter::once("end".to_string()))
            .collect();
        assert_eq!(sections, want, "one section per record, in order");
    }

    #[test]
    fn foreign_versions_and_bad_lines_are_named() {
        let e = parse_line(1, "x HUBLOAD-SHARD v3 r 0/1 head 1/1 AAAA")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "line 1: HUBLOAD-SHARD line version v3 is not supported (this hubload reads v1 and v2)"
        );
        let e = parse_line(2, "HUBLOAD-SHARD v2 r 3/2 head 1/1 AAAA")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("line 2: malformed"), "{e}");
        let e = parse_line(3, "HUBLOAD-SHARD v2 r 0/2 levels 1/1 AAAA")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown section \"levels\""), "{e}");
        let e = parse_line(4, "HUBLOAD-SHARD v2 r 0/2 head 1/200001 AAAA")
            .unwrap_err()
            .to_string();
        assert!(e.contains("over the limit of 200000"), "{e}");
        // The tag in prose is not a line of ours.
        assert!(parse_line(5, "the HUBLOAD-SHARD lines").unwrap().is_none());
    }
}
