//! hubload: a load tester for WebSub hubs and the Azure Service Bus behind them.

pub mod app;
pub mod cli;
pub mod config;
pub mod console;
pub mod engine;
pub mod gate;
pub mod judge;
pub mod kind;
pub mod observe;
pub mod report;
pub mod result;
pub mod run;
pub mod secret;
pub mod serve;
pub mod shard;
pub mod stats;
pub mod subscriber;
pub mod targets;
pub mod topic_server;
pub mod verdict;
pub mod workload;

pub use run::RunOutcome;

/// Run a load test from parsed run arguments, as `hubload [FLAGS]` does but printing nothing:
/// validate them into a [`config::RunConfig`], run every level, write the reports, and return
/// how it ended. `cancel` stops the run as Ctrl-C does (the reports of what ran are written).
/// [`app::parse_args`] turns a command line (with its `--profile`) into the arguments.
pub async fn run(
    args: &cli::RunArgs,
    cancel: tokio_util::sync::CancellationToken,
) -> anyhow::Result<RunOutcome> {
    let cfg = config::resolve(args)?;
    run::run_load(&cfg, cancel).await
}
