//! The command line as the program reads it: a `--profile`'s settings inserted before the
//! flags (so flags win), then clap; errors reduced to one line.

use std::ffi::OsString;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::config::profile;

/// Why the arguments did not give a command to run.
#[derive(Debug)]
pub enum ArgsError {
    /// `--help` or `--version`: `print()` it (clap picks stdout or stderr) and exit 0.
    Display(Box<clap::Error>),
    /// Bad usage or a bad profile: this one line (no `error:` prefix), exit 2.
    Invalid(String),
}

/// Parse `args` (the program name first). A `--profile FILE` contributes its settings as
/// flags placed before the command line's own, so a flag given on the command line wins.
pub fn parse_args(args: Vec<OsString>) -> Result<Cli, ArgsError> {
    let first = parse_once(&args)?;
    // `hubload check` takes a run's flags after its name, so its profile's go there too.
    let check = match &first.command {
        Some(Command::Check(a)) => Some(a.profile.clone()),
        _ => None,
    };
    let Some(p) = check.clone().unwrap_or_else(|| first.run.profile.clone()) else {
        return Ok(first);
    };
    let invalid = |e: crate::config::ConfigError| ArgsError::Invalid(e.to_string());
    let path = profile::locate(&p).map_err(invalid)?;
    let prof = profile::to_args(&path).map_err(invalid)?;
    let at = match check {
        Some(_) => args.iter().position(|a| a == "check").map_or(1, |i| i + 1),
        None => 1,
    };
    let mut all: Vec<OsString> = args.iter().take(at).cloned().collect();
    all.extend(prof.into_iter().map(OsString::from));
    all.extend(args.iter().skip(at).cloned());
    let mut cli = parse_once(&all)?;
    match &mut cli.command {
        Some(Command::Check(a)) => a.profile = Some(path),
        _ => cli.run.profile = Some(path),
    }
    Ok(cli)
}

fn parse_once(args: &[OsString]) -> Result<Cli, ArgsError> {
    Cli::try_parse_from(args).map_err(|e| {
        use clap::error::ErrorKind;
        match e.kind() {
            ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                ArgsError::Display(Box::new(e))
            }
            _ => {
                // clap's message, first line only: one clear line, no usage dump.
                let text = e.render().to_string();
                let line = text
                    .lines()
                    .next()
                    .unwrap_or("invalid arguments")
                    .trim_start_matches("error: ");
                ArgsError::Invalid(format!("{line} (see hubload --help)"))
            }
        }
    })
}
