//! Scale-out as shards: the per-shard records (file and stdout lines), their reassembly from
//! any input, and the exact, streaming merge of a run's shards (what a shard is: `shard_contract`).
//!
//! A shard writes a stream of [`ShardRecord`]s (head, one per level, one per second of load
//! for `merge --follow`'s live page, end) to its file and as `HUBLOAD-SHARD` lines ([`logs`]);
//! `hubload merge` reassembles them ([`assemble`], [`files`]) and merges level by level
//! ([`merge::stream`]) into reports equal to one process's. Only the merged run is judged
//! (docs/shards.md).

pub mod artifact;
pub mod assemble;
pub mod files;
#[cfg(test)]
mod fixtures;
pub mod follow;
pub mod logs;
pub mod merge;
pub mod record;

pub use artifact::{ArtifactError, HistLayout, Load, ShardArtifact, ShardLevel, ShardMeta};
pub use assemble::{from_log_dump, Input, Keyed};
pub use files::{read_records, ShardOut};
pub use logs::{print_log_lines, to_log_lines, LogError};
pub use merge::{merge, MergeError, MergedLevel, MergedRun};
pub use record::{ShardDelivery, ShardEnd, ShardHead, ShardRecord, ShardSecond};
