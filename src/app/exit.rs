//! The process's exit codes: 0 ran and met its thresholds; 1 a threshold (or `--fail-if`)
//! failed; 2 bad usage, bad configuration or a runtime error before/while loading; 3 a shard
//! missed its start window; 4 `merge` is missing shards (or a shard's stream ended without
//! its end); 5 `check` found a failing check; 130 interrupted (reports written, partial).

/// Exit code: thresholds failed.
pub const EXIT_THRESHOLDS: u8 = 1;
/// Exit code: usage, configuration or runtime error.
pub const EXIT_ERROR: u8 = 2;
/// Exit code: a shard missed its start window.
pub const EXIT_MISSED_START: u8 = 3;
/// Exit code: `merge` is missing shards.
pub const EXIT_MISSING_SHARDS: u8 = 4;
/// Exit code: `hubload check` found a check that fails.
pub const EXIT_CHECK_FAILED: u8 = 5;
/// Exit code: interrupted by a signal.
pub const EXIT_INTERRUPTED: u8 = 130;
