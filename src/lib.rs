//! hubload: a load tester for WebSub hubs and the Azure Service Bus behind them.

pub mod align;
pub mod app;
pub mod check;
pub mod cli;
pub mod compare;
pub mod config;
pub mod console;
pub mod engine;
pub mod fairness;
pub mod kind;
pub mod observe;
pub mod report;
pub mod result;
pub mod run;
pub mod secret;
pub mod serve;
pub mod shard;
pub mod shard_contract;
pub mod stats;
pub mod subscriber;
pub mod targets;
pub mod topic_server;
pub mod web;
pub mod workload;

/// The deadline tests' bound (`tests/support/lateness.rs`), shared with the unit tests.
#[cfg(test)]
#[path = "../tests/support/lateness.rs"]
pub(crate) mod test_lateness;

pub use run::RunOutcome;

/// Run a load test from parsed run arguments, as `hubload [FLAGS]` does but printing nothing:
/// validate them into a [`config::RunConfig`], run every level, write the reports, and return
/// how it ended. `cancel` stops the run as Ctrl-C does (the reports of what ran are written).
/// [`app::parse_args`] turns a command line (with its `--profile`) into the arguments.
pub async fn run(
    args: &cli::RunArgs,
    cancel: tokio_util::sync::CancellationToken,
) -> anyhow::Result<RunOutcome> {
    run_with_proxy_env(args, cancel, &|k| std::env::var(k).ok()).await
}

/// [`run()`] with the proxy variables (`HTTPS_PROXY`, `NO_PROXY`, ...) read through `env`
/// instead of the process environment: tests pass none, so a proxy set for the machine
/// cannot reroute their loopback connections.
pub async fn run_with_proxy_env(
    args: &cli::RunArgs,
    cancel: tokio_util::sync::CancellationToken,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> anyhow::Result<RunOutcome> {
    // Which shard this process is comes from the environment (an Indexed Job's), read here:
    // config reads no environment itself.
    let shard = shard_contract::ShardSpec::from_env()
        .map_err(|e| config::ConfigError::Conflict(e.to_string()))?;
    let cfg = config::resolve_for(args, shard, env)?;
    run::run_load(&cfg, cancel).await
}
