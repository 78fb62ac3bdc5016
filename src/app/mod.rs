//! The program around the library: parse (profile + flags), dispatch, print, map to exit codes.
//!
//! Exit codes: 0 ran and met its thresholds; 1 a threshold (or `--fail-if`) failed;
//! 2 bad usage, bad configuration or a runtime error before/while loading; 3 a shard missed its
//! start window; 4 `merge` is missing shards; 130 interrupted (reports written, marked partial).

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;
use tokio_util::sync::CancellationToken;

use crate::cli::{Cli, Command};
use crate::config::{self, profile};
use crate::run::{run_load, signals};

mod subcommands;

/// Exit code: thresholds failed.
pub const EXIT_THRESHOLDS: u8 = 1;
/// Exit code: usage, configuration or runtime error.
pub const EXIT_ERROR: u8 = 2;
/// Exit code: a shard missed its start window.
pub const EXIT_MISSED_START: u8 = 3;
/// Exit code: `merge` is missing shards.
pub const EXIT_MISSING_SHARDS: u8 = 4;
/// Exit code: interrupted by a signal.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Print one error line and return exit code 2.
fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("hubload: error: {msg}");
    ExitCode::from(EXIT_ERROR)
}

/// Parse the command line, inserting a profile's settings before the flags so flags win.
fn parse(args: Vec<OsString>) -> Result<Cli, ExitCode> {
    let first = parse_once(&args)?;
    let Some(p) = &first.run.profile else {
        return Ok(first);
    };
    let path = profile::locate(p).map_err(fail)?;
    let prof = profile::to_args(&path).map_err(fail)?;
    let mut all: Vec<OsString> = args.iter().take(1).cloned().collect();
    all.extend(prof.into_iter().map(OsString::from));
    all.extend(args.iter().skip(1).cloned());
    let mut cli = parse_once(&all)?;
    cli.run.profile = Some(path);
    Ok(cli)
}

fn parse_once(args: &[OsString]) -> Result<Cli, ExitCode> {
    Cli::try_parse_from(args).map_err(|e| {
        use clap::error::ErrorKind;
        match e.kind() {
            ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                let _ = e.print();
                ExitCode::SUCCESS
            }
            _ => {
                // clap's message, first line only: one clear line, no usage dump.
                let text = e.render().to_string();
                let line = text
                    .lines()
                    .next()
                    .unwrap_or("invalid arguments")
                    .trim_start_matches("error: ");
                fail(format!("{line} (see hubload --help)"))
            }
        }
    })
}

/// `--threads`: 1 to 1024.
fn parse_threads(t: &str) -> Result<usize, String> {
    t.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=1024).contains(n))
        .ok_or_else(|| {
            format!(
                "invalid --threads `{}`: must be a whole number from 1 to 1024",
                t.trim()
            )
        })
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(
            std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        )
        .with_target(false)
        .try_init();
}

/// The whole program: `main` calls this.
pub fn main() -> ExitCode {
    init_tracing();
    let cli = match parse(std::env::args_os().collect()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let threads = match cli.run.threads.as_deref().map(parse_threads) {
        Some(Err(e)) => return fail(e),
        Some(Ok(n)) => n,
        None => std::thread::available_parallelism().map_or(2, |n| n.get()),
    };
    let built = if threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()
    };
    let rt = match built {
        Ok(rt) => rt,
        Err(e) => return fail(format!("cannot start the runtime: {e}")),
    };
    rt.block_on(dispatch(cli))
}

async fn dispatch(cli: Cli) -> ExitCode {
    match cli.command {
        None => load(cli).await,
        Some(Command::Hub(args)) => match hubload_hub::cli::run(*args).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(format!("{e:#}")),
        },
        Some(Command::Report { summary, out }) => {
            done(subcommands::report(&summary, out.as_deref()))
        }
        Some(Command::Compare {
            baseline,
            candidate,
            fail_if,
            out,
        }) => done(subcommands::compare(
            &baseline,
            &candidate,
            &fail_if,
            out.as_deref(),
        )),
        Some(Command::Merge {
            inputs,
            out,
            threshold,
        }) => done(subcommands::merge(&inputs, out.as_deref(), &threshold)),
    }
}

/// Map a subcommand's result: `Ok(code)` as is, an error as one line and exit 2.
fn done(r: anyhow::Result<u8>) -> ExitCode {
    match r {
        Ok(code) => ExitCode::from(code),
        Err(e) => fail(format!("{e:#}")),
    }
}

async fn load(cli: Cli) -> ExitCode {
    let cfg = match config::resolve(&cli.run) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let cancel = CancellationToken::new();
    signals::install(cancel.clone());
    let outcome = match run_load(&cfg, cancel).await {
        Ok(o) => o,
        Err(e) if e.downcast_ref::<crate::shard::MissedStart>().is_some() => {
            eprintln!("hubload: error: {e:#}");
            return ExitCode::from(EXIT_MISSED_START);
        }
        Err(e) => return fail(format!("{e:#}")),
    };
    // A side-by-side run has already printed its comparison; each path's full tables are in
    // its own subdirectory.
    if !cfg.output.quiet && cfg.target.kinds.len() == 1 {
        print!("{}", subcommands::summary_text(&outcome.report));
    }
    eprintln!(
        "hubload: reports written to {}",
        cfg.output.out_dir.display()
    );
    if outcome.interrupted {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if outcome.thresholds_failed {
        ExitCode::from(EXIT_THRESHOLDS)
    } else {
        ExitCode::SUCCESS
    }
}
