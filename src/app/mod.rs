//! The program around the library: parse (profile + flags), dispatch, print, map to exit codes
//! (the codes themselves are in `exit.rs`).

use std::process::ExitCode;

use tokio_util::sync::CancellationToken;

use crate::cli::{Cli, Command};
use crate::config;
use crate::run::signals;

mod args;
mod exit;
mod hub_log;
mod limits;
mod merge;
mod subcommands;

pub use args::{parse_args, ArgsError};
pub use exit::{
    EXIT_CHECK_FAILED, EXIT_ERROR, EXIT_INTERRUPTED, EXIT_MISSED_START, EXIT_MISSING_SHARDS,
    EXIT_THRESHOLDS,
};

/// Print one error line and return exit code 2.
fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("hubload: error: {msg}");
    ExitCode::from(EXIT_ERROR)
}

fn init_tracing() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // The hub filter below decides at run time, so without a hint tracing would create every
    // span of every level in the registry: h2's per-poll trace spans then cost about 40 % of
    // an HTTP/2 publish's CPU (perf, bench/README.md "HTTP/2"). Nothing above the env
    // filter's level is ever printed, so that level bounds it.
    let hint = filter
        .max_level_hint()
        .unwrap_or(tracing_subscriber::filter::LevelFilter::TRACE);
    let printed = tracing_subscriber::fmt::layer()
        .with_writer(crate::console::writer)
        .with_ansi(
            std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        )
        .with_target(false)
        .with_filter(filter)
        .with_filter(
            // The hint must hold for the function too: tracing checks (in debug builds) that a
            // filter never enables what its hint excludes.
            tracing_subscriber::filter::filter_fn(move |m| {
                *m.level() <= hint && hub_log::printed(m)
            })
            .with_max_level_hint(hint),
        );
    let _ = tracing_subscriber::registry()
        .with(printed)
        .with(hub_log::HubWarnings.with_filter(tracing_subscriber::filter::LevelFilter::WARN))
        .try_init();
}

/// The whole program: `main` calls this.
pub fn main() -> ExitCode {
    init_tracing();
    limits::raise_open_files();
    let cli = match parse_args(std::env::args_os().collect()) {
        Ok(c) => c,
        Err(ArgsError::Display(e)) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(ArgsError::Invalid(line)) => return fail(line),
    };
    // Read before the runtime exists (it sizes it); `resolve` checks it again with the rest.
    let threads = match config::threads(cli.run.threads.as_deref()) {
        Err(e) => return fail(e),
        Ok(Some(n)) => n,
        Ok(None) => std::thread::available_parallelism().map_or(2, |n| n.get()),
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
    let code = rt.block_on(dispatch(cli));
    // Blocking work still running (a stalled write, a DNS lookup) must not hold the exit.
    rt.shutdown_timeout(std::time::Duration::from_millis(100));
    code
}

async fn dispatch(cli: Cli) -> ExitCode {
    match cli.command {
        None => load(cli).await,
        Some(Command::Check(args)) => check(&args).await,
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
            follow,
            stall_timeout,
            web,
            web_token_file,
        }) => {
            let web = crate::cli::RunArgs {
                web,
                web_token_file,
                ..Default::default()
            };
            let follow = merge::Follow {
                on: follow,
                stall_timeout,
            };
            done(merge::merge(inputs, out, &threshold, follow, &web).await)
        }
    }
}

/// `hubload check`: resolve the flags as a run would, check, print one line per check.
async fn check(args: &crate::cli::RunArgs) -> ExitCode {
    let cfg = match crate::config::resolve_for(args, None, &|k| std::env::var(k).ok()) {
        Ok(c) => c,
        Err(e) => return fail(format!("{e:#}")),
    };
    let steps = crate::run::check(&cfg).await;
    for s in &steps {
        println!("{}", s.line());
    }
    if crate::check::passed(&steps) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_CHECK_FAILED)
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
    let cancel = CancellationToken::new();
    signals::install(cancel.clone());
    hub_log::count_from_now();
    let result = crate::run(&cli.run, cancel).await;
    if let Some(line) = hub_log::summary() {
        crate::console::say!("{line}");
    }
    let outcome = match result {
        Ok(o) => o,
        Err(e)
            if e.downcast_ref::<crate::shard_contract::MissedStart>()
                .is_some() =>
        {
            eprintln!("hubload: error: {e:#}");
            return ExitCode::from(EXIT_MISSED_START);
        }
        Err(e) => return fail(format!("{e:#}")),
    };
    let out = &outcome.config.output;
    // A side-by-side run has already printed its comparison; each path's full tables are in
    // its own subdirectory.
    if !out.quiet && outcome.config.target.kinds.len() == 1 {
        print!("{}", subcommands::summary_text(&outcome.report));
    }
    crate::console::say!("hubload: reports written to {}", out.out_dir.display());
    if outcome.interrupted {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if outcome.thresholds_failed {
        ExitCode::from(EXIT_THRESHOLDS)
    } else {
        ExitCode::SUCCESS
    }
}
