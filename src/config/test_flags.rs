//! Test helpers for the resolve steps: flags as clap parses them, and error checks.

use clap::Parser;

use super::ConfigError;
use crate::cli::{Cli, RunArgs};

/// The run flags of `hubload ARGV…`, exactly as the command line gives them to `resolve`.
pub fn args(argv: &[&str]) -> RunArgs {
    Cli::try_parse_from(std::iter::once("hubload").chain(argv.iter().copied()))
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"))
        .run
}

/// `r` failed with one line starting with `want`.
pub fn err<T: std::fmt::Debug>(r: Result<T, ConfigError>, want: &str) {
    let e = r.expect_err(want).to_string();
    assert!(e.starts_with(want), "`{e}` does not start with `{want}`");
    assert!(!e.contains('\n'), "{e}");
}
