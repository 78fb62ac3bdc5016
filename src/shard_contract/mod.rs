//! The shard contract: what a shard is (its slot of the work, read from an Indexed Job's
//! environment), when the shards start together, and the sparse per-topic rows they exchange.
//! Below everything that runs or merges shards; it imports none of them.

pub mod env;

pub use env::{
    owns_tenant, split_count, wait_for_start, MissedStart, ShardEnvError, ShardSlot, ShardSpec,
};
