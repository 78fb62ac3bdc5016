//! Shard artifacts as stdout lines, so `kubectl logs -l job-name=… --tail=-1` collects a run,
//! and their reassembly from a log dump full of other output.
//!
//! Line format: `HUBLOAD-SHARD v1 <run_id> <index>/<count> <part>/<parts> <chunk>`, where the
//! chunks, concatenated in part order, are base64 of the zlib-compressed compact JSON artifact.
//! A line must reach the merged log whole. The container runtime copies stdout and stderr
//! through separate readers into one log, and a stderr message can land inside a stdout line
//! (it happened in CI: `hubload: reports written …` inside an artifact line). So a shard
//! prints its messages on stdout too ([`crate::console`]), its lines go out last, and each
//! line is under `PIPE_BUF` (4096 bytes) and one `write(2)`, which a pipe delivers whole.
//! Anything before the tag on a line (`[pod/…/hubload] ` from `kubectl logs --prefix`,
//! timestamps) is ignored.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use flate2::Compression;

use super::artifact::{ArtifactError, ShardArtifact};

/// The tag every artifact line carries.
pub const LINE_TAG: &str = "HUBLOAD-SHARD";
/// The line format version.
pub const LINE_VERSION: &str = "v1";
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
    #[error("line {line}: {LINE_TAG} line version {version} is not supported (this hubload reads {LINE_VERSION})")]
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
    #[error("run {run_id} shard {index}/{count}: missing part(s) {missing} of {parts}; were the logs truncated? (kubectl logs needs --tail=-1)")]
    Incomplete {
        /// Run id.
        run_id: String,
        /// Shard index.
        index: u32,
        /// Shard count.
        count: u32,
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

/// The artifact as stdout lines (without newlines), in part order.
pub fn to_log_lines(a: &ShardArtifact) -> Vec<String> {
    let json = serde_json::to_vec(a).unwrap_or_default();
    let mut z = ZlibEncoder::new(Vec::with_capacity(json.len() / 2), Compression::default());
    // Writing into a Vec cannot fail.
    let _ = z.write_all(&json);
    let packed = B64.encode(z.finish().unwrap_or_default());
    let chunks: Vec<&str> = packed
        .as_bytes()
        .chunks(CHUNK_CHARS)
        // base64 output is ASCII, so every chunk boundary is a char boundary.
        .map(|c| std::str::from_utf8(c).unwrap_or_default())
        .collect();
    let parts = chunks.len();
    let m = &a.meta;
    chunks
        .iter()
        .enumerate()
        .map(|(i, c)| {
            format!(
                "{LINE_TAG} {LINE_VERSION} {} {}/{} {}/{parts} {c}",
                m.run_id,
                m.shard_index,
                m.shard_count,
                i + 1
            )
        })
        .collect()
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

type ShardKey = (String, u32, u32);

#[derive(Default)]
struct Parts {
    parts: u32,
    chunks: BTreeMap<u32, String>,
}

/// Find every artifact in `text` (a log dump, possibly with `kubectl logs --prefix` prefixes,
/// timestamps and unrelated lines interleaved), reassemble and parse them. Sorted by run id
/// and shard index; the same artifact printed twice is returned once. Empty if there is none.
pub fn from_log_dump(text: &str) -> Result<Vec<ShardArtifact>, LogError> {
    let mut shards: BTreeMap<ShardKey, Parts> = BTreeMap::new();
    for (n, raw) in text.lines().enumerate() {
        let line = n + 1;
        let Some(pos) = raw.find(LINE_TAG) else {
            continue;
        };
        let rest = &raw[pos + LINE_TAG.len()..];
        // Only `TAG v<digit>…` is ours; the tag inside other text (like this module's docs) is not.
        let Some(rest) = rest.strip_prefix(" v") else {
            continue;
        };
        if !rest.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        let mut f = rest.split_ascii_whitespace();
        let version = format!("v{}", f.next().unwrap_or_default());
        if version != LINE_VERSION {
            return Err(LogError::Version { line, version });
        }
        let bad = |reason: &str| LogError::Malformed {
            line,
            reason: reason.to_string(),
        };
        let (Some(run_id), Some(shard), Some(part), Some(chunk), None) =
            (f.next(), f.next(), f.next(), f.next(), f.next())
        else {
            return Err(bad(
                "expected: <run_id> <index>/<count> <part>/<parts> <base64> (was the line cut, or mixed with other output?)",
            ));
        };
        let (index, count) = fraction(shard).ok_or_else(|| bad("bad <index>/<count>"))?;
        let (part, parts) = fraction(part).ok_or_else(|| bad("bad <part>/<parts>"))?;
        if count == 0 || index >= count || part == 0 || part > parts {
            return Err(bad("index or part out of range"));
        }
        let key = (run_id.to_string(), index, count);
        let e = shards.entry(key.clone()).or_default();
        if e.parts != 0 && e.parts != parts {
            return Err(bad(&format!(
                "run {} shard {index}/{count} was earlier split into {} parts, here {parts}",
                key.0, e.parts
            )));
        }
        e.parts = parts;
        match e.chunks.get(&part) {
            Some(prev) if prev != chunk => {
                return Err(LogError::Conflict {
                    run_id: key.0,
                    index,
                    count,
                    part,
                })
            }
            Some(_) => {}
            None => {
                e.chunks.insert(part, chunk.to_string());
            }
        }
    }
    shards
        .into_iter()
        .map(|(key, p)| reassemble(key, p))
        .collect()
}

fn fraction(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once('/')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

fn reassemble((run_id, index, count): ShardKey, p: Parts) -> Result<ShardArtifact, LogError> {
    let missing: Vec<String> = (1..=p.parts)
        .filter(|i| !p.chunks.contains_key(i))
        .map(|i| i.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(LogError::Incomplete {
            run_id,
            index,
            count,
            missing: missing.join(", "),
            parts: p.parts,
        });
    }
    let payload = |reason: String| LogError::Payload {
        run_id: run_id.clone(),
        index,
        count,
        reason,
    };
    let packed: String = p.chunks.into_values().collect();
    let z = B64
        .decode(packed)
        .map_err(|e| payload(format!("not base64: {e}")))?;
    let mut json = Vec::new();
    ZlibDecoder::new(z.as_slice())
        .take(MAX_ARTIFACT_BYTES)
        .read_to_end(&mut json)
        .map_err(|e| payload(format!("corrupt compressed payload: {e}")))?;
    let text = String::from_utf8(json).map_err(|_| payload("payload is not UTF-8".into()))?;
    let a = ShardArtifact::from_json(&text).map_err(|source| LogError::Artifact {
        run_id: run_id.clone(),
        index,
        count,
        source,
    })?;
    let m = &a.meta;
    if (m.run_id.as_str(), m.shard_index, m.shard_count) != (run_id.as_str(), index, count) {
        return Err(payload(format!(
            "the artifact inside says run {} shard {}/{}",
            m.run_id, m.shard_index, m.shard_count
        )));
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::artifact::{Load, ShardLevel};
    use crate::shard::testutil::{assert_level_eq, empty_artifact, random_level};
    use crate::shard_contract::ShardSpec;

    /// An artifact with `levels` levels of 2,000 random events each.
    fn artifact(run_id: &str, index: u32, count: u32, levels: u64) -> ShardArtifact {
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
    fn lines_are_short_and_tagged() {
        let long_id = "r".repeat(crate::shard_contract::env::MAX_RUN_ID);
        let a = artifact(&long_id, 2, 3, 20);
        let lines = to_log_lines(&a);
        assert!(
            lines.len() > 3,
            "a big artifact spans several lines: {}",
            lines.len()
        );
        for (i, l) in lines.iter().enumerate() {
            // PIPE_BUF: a pipe delivers a write of at most 4096 bytes whole.
            assert!(
                l.len() < 4096,
                "line {i} is {} bytes with its newline",
                l.len() + 1
            );
            assert!(l.starts_with(&format!(
                "HUBLOAD-SHARD v1 {long_id} 2/3 {}/{} ",
                i + 1,
                lines.len()
            )));
            assert!(!l.contains('\n'));
        }
    }

    #[test]
    fn reassembles_among_noise_and_prefixes() {
        let shards: Vec<ShardArtifact> = (0..3).map(|i| artifact("run-1", i, 3, 6)).collect();
        let lines: Vec<Vec<String>> = shards.iter().map(to_log_lines).collect();
        // Interleave the shards' lines the way `kubectl logs -l … --prefix` might, with noise.
        let mut dump = String::from("Defaulted container \"hubload\"\n");
        let longest = lines.iter().map(Vec::len).max().unwrap();
        for k in 0..longest {
            for (i, ls) in lines.iter().enumerate().rev() {
                if let Some(l) = ls.get(k) {
                    let prefix = match i {
                        0 => format!("[pod/hubload-{i}-x7k2q/hubload] "),
                        1 => "2026-11-30T05:00:01.123456789Z ".to_string(),
                        _ => String::new(),
                    };
                    dump.push_str(&format!("{prefix}{l}\r\n"));
                    dump.push_str(&format!(
                        "[pod/hubload-{i}-x7k2q/hubload] level 50: 1234 accepted\n"
                    ));
                }
            }
            dump.push_str("Concurrency  # Samples  Average  HUBLOAD-SHARD is mentioned here\n");
        }
        // A shard printed twice (e.g. logs collected twice) is the same artifact, once.
        dump.push_str(&lines[1].join("\n"));
        let back = from_log_dump(&dump).unwrap();
        assert_eq!(back.len(), 3);
        for (b, a) in back.iter().zip(&shards) {
            assert_eq!(b.to_json(), a.to_json());
            for (lb, la) in b.levels.iter().zip(&a.levels) {
                assert_level_eq(&lb.stats, &la.stats);
            }
        }
        assert!(from_log_dump("just\nnoise\n").unwrap().is_empty());
    }

    #[test]
    fn truncated_conflicting_and_foreign_lines_are_named() {
        let a = artifact("run-2", 1, 2, 8);
        let lines = to_log_lines(&a);
        assert!(lines.len() >= 2);

        let truncated: String = lines[1..].join("\n");
        let e = from_log_dump(&truncated).unwrap_err().to_string();
        assert!(
            e.contains("run run-2 shard 1/2: missing part(s) 1 of"),
            "{e}"
        );

        let mut forged = lines.clone();
        forged.push(format!("{}AAAA", lines[0]));
        let e = from_log_dump(&forged.join("\n")).unwrap_err().to_string();
        assert!(e.contains("part 1 appears twice"), "{e}");

        let e = from_log_dump("x HUBLOAD-SHARD v2 r 0/1 1/1 AAAA")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1") && e.contains("version v2"), "{e}");

        let e = from_log_dump("\nHUBLOAD-SHARD v1 r 3/2 1/1 AAAA")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("line 2: malformed"), "{e}");

        let e = from_log_dump("HUBLOAD-SHARD v1 r 0/1 1/1 AAAA")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("run r shard 0/1: corrupt compressed payload"),
            "{e}"
        );
    }
}
