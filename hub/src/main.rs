//! The standalone reference hub (flags at the top level) and the Service Bus emulator
//! (`servicebus-emulator`): parse, run until Ctrl-C or SIGTERM, exit 2 on an error.

use clap::Parser;
use hubload_servicebus::emulator::cli::EmulatorArgs;

/// A WebSub reference hub with proxy-style fault injection, and a local Azure Service Bus
/// emulator (`hubload-hub servicebus-emulator --help`).
#[derive(Debug, Parser)]
#[command(name = "hubload-hub", version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(flatten)]
    hub: hubload_hub::cli::HubArgs,
    #[command(subcommand)]
    cmd: Option<Sub>,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// Run a local Azure Service Bus stand-in (AMQP 1.0 with CBS) instead of the hub.
    ServicebusEmulator(EmulatorArgs),
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.cmd {
        None => hubload_hub::cli::run(cli.hub).await,
        Some(Sub::ServicebusEmulator(args)) => {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(
                    tracing_subscriber::EnvFilter::try_from_default_env()
                        .unwrap_or_else(|_| "info".into()),
                )
                .with_writer(std::io::stderr)
                .try_init();
            hubload_servicebus::emulator::cli::run(args).await
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hubload-hub: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert();
        let hub = Cli::try_parse_from(["hubload-hub", "--listen", "127.0.0.1:9100"]).unwrap();
        assert!(hub.cmd.is_none());
        assert_eq!(hub.hub.listen.port(), 9100);
        let emu = Cli::try_parse_from([
            "hubload-hub",
            "servicebus-emulator",
            "--listen",
            "127.0.0.1:5673",
            "--throttle-every",
            "7",
        ])
        .unwrap();
        match emu.cmd {
            Some(Sub::ServicebusEmulator(a)) => {
                assert_eq!(a.listen.port(), 5673);
                assert_eq!(a.throttle_every, Some(7));
            }
            None => panic!("no subcommand parsed"),
        }
        // Hub flags belong to the hub, not to the emulator.
        assert!(Cli::try_parse_from([
            "hubload-hub",
            "--listen",
            "127.0.0.1:9100",
            "servicebus-emulator"
        ])
        .is_err());
    }
}
