//! Scale-out as shards: the per-shard artifact (file and stdout lines) and the exact merge of
//! a run's shards. What a shard is (its slot, the environment contract) is `shard_contract`.
//!
//! A shard runs its slice of the workload ([`crate::shard_contract`]), writes a
//! [`ShardArtifact`] to its output directory and prints it as `HUBLOAD-SHARD` lines
//! ([`logs`]); `hubload merge` reads the files or a `kubectl logs` dump ([`files`]) and
//! [`merge()`]s them into one run whose reports equal a single process's. Shards never judge
//! thresholds: only the merged run is judged.

pub mod artifact;
pub mod files;
pub mod logs;
pub mod merge;
#[cfg(test)]
mod testutil;

pub use artifact::{ArtifactError, HistLayout, Load, ShardArtifact, ShardLevel, ShardMeta};
pub use files::{read_inputs, write_artifact};
pub use logs::{from_log_dump, print_log_lines, to_log_lines, LogError};
pub use merge::{merge, MergeError, MergedLevel, MergedRun};
