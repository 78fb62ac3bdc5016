//! The `hubload` binary: parse, run, map the result to an exit code.

fn main() {}
