//! Scale-out as shards: the environment contract of an Indexed Job, the per-shard artifact
//! (file and stdout lines), and the exact merge of a run's shards.
//!
//! A shard runs its slice of the workload ([`mod@env`]), writes a [`ShardArtifact`] to its output
//! directory and prints it as `HUBLOAD-SHARD` lines ([`logs`]); `hubload merge` reads the
//! files or a `kubectl logs` dump ([`files`]) and [`merge()`]s them into one run whose reports
//! equal a single process's. Shards never judge thresholds: only the merged run is judged.

pub mod artifact;
pub mod env;
pub mod files;
pub mod logs;
pub mod merge;
#[cfg(test)]
mod testutil;

pub use artifact::{
    decode_level, encode_level, ArtifactError, HistLayout, LevelArtifact, Load, PhaseArtifact,
    ShardArtifact, ShardMeta,
};
pub use env::{
    owns_tenant, split_count, wait_for_start, MissedStart, ShardEnvError, ShardSlot, ShardSpec,
};
pub use files::{read_inputs, write_artifact};
pub use logs::{from_log_dump, print_log_lines, to_log_lines, LogError};
pub use merge::{merge, MergeError, MergedLevel, MergedRun};
