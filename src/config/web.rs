//! `--web` and its token → `WebConfig`: where the live page and control API listen, and the
//! token they ask for. A non-loopback address without a token is refused here, before any load.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use serde::Serialize;

use super::parse::duration;
use super::ConfigError;
use crate::cli::RunArgs;
use crate::secret::Secret;

/// The environment variable that may hold the token instead of `--web-token-file`.
pub const TOKEN_ENV: &str = "HUBLOAD_WEB_TOKEN";

/// The live page and control API.
#[derive(Debug, Clone, Serialize)]
pub struct WebConfig {
    /// Where they listen (port 0: any free port, printed in the banner).
    pub addr: SocketAddr,
    /// The token every request must carry; `None` on loopback without one. Never shown.
    pub token: Option<Secret>,
    /// How long the server stays up after the reports are written (`--web-linger`; 0: it
    /// closes with the run, as a run without it always did).
    #[serde(with = "super::serialize::humantime_serde_str")]
    pub linger: Duration,
}

/// Resolve `--web` and `--web-token-file` (or [`TOKEN_ENV`]).
pub(super) fn resolve(a: &RunArgs) -> Result<Option<WebConfig>, ConfigError> {
    let Some(raw) = a.web.as_deref() else {
        if a.web_token_file.is_some() {
            return Err(ConfigError::Conflict("--web-token-file needs --web".into()));
        }
        if a.web_linger.is_some() {
            return Err(ConfigError::Conflict("--web-linger needs --web".into()));
        }
        return Ok(None);
    };
    let addr = address(raw)?;
    let token = match &a.web_token_file {
        Some(path) => Some(token_from_file(path)?),
        None => std::env::var(TOKEN_ENV)
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .map(Secret::new),
    };
    if token.is_none() && !addr.ip().is_loopback() {
        return Err(ConfigError::Conflict(format!(
            "--web {addr} is not a loopback address: give it a token with --web-token-file FILE (or {TOKEN_ENV})"
        )));
    }
    let linger = match a.web_linger.as_deref() {
        Some(v) => duration("web-linger", v)?,
        None => Duration::ZERO,
    };
    Ok(Some(WebConfig {
        addr,
        token,
        linger,
    }))
}

/// `HOST:PORT`, `:PORT` or `PORT` (the last two on 127.0.0.1), `localhost:PORT`.
fn address(raw: &str) -> Result<SocketAddr, ConfigError> {
    let v = raw.trim();
    let bad = |m: &str| ConfigError::invalid("web", raw, m);
    if let Ok(a) = v.parse::<SocketAddr>() {
        return Ok(a);
    }
    let port = v
        .strip_prefix("localhost:")
        .or_else(|| v.strip_prefix(':'))
        .unwrap_or(v);
    let port: u16 = port
        .parse()
        .map_err(|_| bad("expected HOST:PORT, e.g. 127.0.0.1:8089"))?;
    Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port))
}

/// The token in `path` (surrounding white space trimmed); errors never show it.
fn token_from_file(path: &std::path::Path) -> Result<Secret, ConfigError> {
    let bad = |message: String| ConfigError::Secret {
        field: "web-token-file".into(),
        message,
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| bad(format!("cannot read {}: {e}", path.display())))?;
    let t = text.trim();
    if t.is_empty() {
        return Err(bad(format!("{} is empty", path.display())));
    }
    if t.chars().any(|c| c.is_control() || c == ' ') {
        return Err(bad(format!(
            "{} must hold one token without spaces",
            path.display()
        )));
    }
    Ok(Secret::new(t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn resolve_args(args: &[&str]) -> Result<Option<WebConfig>, ConfigError> {
        let mut all = vec!["hubload"];
        all.extend_from_slice(args);
        let cli = crate::cli::Cli::try_parse_from(all).unwrap();
        resolve(&cli.run)
    }

    #[test]
    fn loopback_needs_no_token_and_a_port_alone_is_loopback() {
        let w = resolve_args(&["--web", "8089"]).unwrap().unwrap();
        assert_eq!(w.addr, "127.0.0.1:8089".parse().unwrap());
        assert!(w.token.is_none() || std::env::var(TOKEN_ENV).is_ok());
        let w = resolve_args(&["--web", "[::1]:0"]).unwrap().unwrap();
        assert!(w.addr.ip().is_loopback());
        assert!(resolve_args(&[]).unwrap().is_none());
    }

    #[test]
    fn a_non_loopback_address_without_a_token_is_refused_naming_the_flag() {
        if std::env::var(TOKEN_ENV).is_ok() {
            return; // the environment gives it one
        }
        let e = resolve_args(&["--web", "0.0.0.0:8089"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--web-token-file"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn the_token_file_is_read_and_never_shown() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("token");
        std::fs::write(&f, "s3cret-token\n").unwrap();
        let fs = f.to_str().unwrap();
        let w = resolve_args(&["--web", "0.0.0.0:0", "--web-token-file", fs])
            .unwrap()
            .unwrap();
        assert_eq!(w.token.as_ref().unwrap().expose(), "s3cret-token");
        let shown = serde_json::to_string(&w).unwrap() + &format!("{w:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        std::fs::write(&f, "  \n").unwrap();
        let e = resolve_args(&["--web", "0.0.0.0:0", "--web-token-file", fs])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--web-token-file") && e.contains("empty"), "{e}");
        let e = resolve_args(&["--web", "somewhere"])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("invalid --web `somewhere`"), "{e}");
    }

    #[test]
    fn the_linger_is_a_duration_that_needs_web_and_is_none_by_default() {
        let w = resolve_args(&["--web", "0"]).unwrap().unwrap();
        assert_eq!(w.linger, Duration::ZERO);
        let w = resolve_args(&["--web", "0", "--web-linger", "5m"])
            .unwrap()
            .unwrap();
        assert_eq!(w.linger, Duration::from_secs(300));
        let e = resolve_args(&["--web", "0", "--web-linger", "soon"])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("invalid --web-linger `soon`"), "{e}");
        let e = resolve_args(&["--web-linger", "5m"])
            .unwrap_err()
            .to_string();
        assert_eq!(e, "--web-linger needs --web");
    }
}
