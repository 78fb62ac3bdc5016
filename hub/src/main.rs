//! The standalone reference hub: parse the flags and run until Ctrl-C or SIGTERM.

use clap::Parser;

/// A WebSub reference hub with proxy-style fault injection.
#[derive(Debug, Parser)]
#[command(name = "hubload-hub", version)]
struct Cli {
    #[command(flatten)]
    hub: hubload_hub::cli::HubArgs,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    match hubload_hub::cli::run(cli.hub).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hubload-hub: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}
