//! The event stream's PRNG: the workspace's one SplitMix64 (crate `hubload-rng`).

pub use hubload_rng::SplitMix64;
