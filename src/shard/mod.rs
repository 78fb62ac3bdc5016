//! Scale-out as shards: the per-shard records (file and stdout lines), their reassembly from
//! any input, and the exact, streaming merge of a run's shards. What a shard is (its slot,
//! the environment contract) is `shard_contract`.
//!
//! A shard runs its slice of the workload ([`crate::shard_contract`]) and writes its results
//! as a stream of [`ShardRecord`]s: a head before the first level, one record per level as
//! it ends, one per second of load (for `merge --follow`'s live page), an end. They are
//! appended to `shard-<i>-of-<n>.jsonl` in its output directory and printed as
//! `HUBLOAD-SHARD` lines ([`logs`]). `hubload merge` reads the files or a `kubectl logs` dump
//! ([`assemble`], [`files`]) and merges level by level ([`merge::stream`]) into one run whose
//! reports equal a single process's. Shards never judge thresholds: only the merged run is
//! judged.

pub mod artifact;
pub mod assemble;
pub mod files;
pub mod follow;
pub mod logs;
pub mod merge;
pub mod record;
#[cfg(test)]
mod testutil;

pub use artifact::{ArtifactError, HistLayout, Load, ShardArtifact, ShardLevel, ShardMeta};
pub use assemble::{from_log_dump, Input, Keyed};
pub use files::{read_records, ShardOut};
pub use logs::{print_log_lines, to_log_lines, LogError};
pub use merge::{merge, MergeError, MergedLevel, MergedRun};
pub use record::{ShardEnd, ShardHead, ShardRecord, ShardSecond};
