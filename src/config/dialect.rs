//! The WebSub dialect flags (`--dialect`, `--topic-url-prefix`, `--register`,
//! `--topic-server-listen`) → `WebSubConfig`.

use std::net::SocketAddr;

use serde::Serialize;

use super::error::ConfigError;
use super::parse::{opt, value};
use crate::cli::RunArgs;
use crate::targets::request::Dialect;

/// The WebSub target's dialect settings (`dialect.rs`).
#[derive(Debug, Clone, Serialize)]
pub struct WebSubConfig {
    /// The hub's publisher convention.
    pub dialect: Dialect,
    /// Websub dialect: topic URL = this prefix + the topic name.
    #[serde(serialize_with = "super::serialize::redacted_url")]
    pub topic_url_prefix: Option<url::Url>,
    /// Whether topics are registered before the load (`--register`, resolved for the dialect).
    pub register: bool,
    /// Where the topic server listens (websub dialect); wired by the topic server.
    pub topic_server_listen: Option<std::net::SocketAddr>,
}

fn dialect(a: &RunArgs) -> Result<Dialect, ConfigError> {
    match opt(&a.dialect).map(str::trim) {
        None | Some("ballerina") => Ok(Dialect::Ballerina),
        Some("websub") => Ok(Dialect::Websub),
        Some(s) => Err(ConfigError::invalid(
            "dialect",
            s,
            "is not ballerina or websub",
        )),
    }
}

/// `--topic-url-prefix`: an http(s) URL with a host. Optional with the websub dialect: without
/// it topics are named after the topic server's bound address (`http://<addr>/topics/`),
/// which needs a `--topic-server-listen` the hub can dial (not a wildcard like `0.0.0.0`).
fn topic_url_prefix(
    a: &RunArgs,
    d: Dialect,
    listen: Option<SocketAddr>,
) -> Result<Option<url::Url>, ConfigError> {
    let field = "topic-url-prefix";
    let Some(s) = opt(&a.topic_url_prefix) else {
        return match listen {
            Some(l) if d == Dialect::Websub && l.ip().is_unspecified() => Err(ConfigError::Conflict(format!(
                "--topic-server-listen {l} needs --topic-url-prefix URL (a wildcard address is no URL the hub can fetch)"
            ))),
            _ => Ok(None),
        };
    };
    let shown = super::auth::redact_url_text(s);
    let u = url::Url::parse(s.trim()).map_err(|e| ConfigError::invalid(field, &shown, e))?;
    if !matches!(u.scheme(), "http" | "https") || u.host().is_none() {
        return Err(ConfigError::invalid(
            field,
            &shown,
            "must be an http:// or https:// URL with a host",
        ));
    }
    super::parse::dialable(field, &shown, &u)?;
    if d == Dialect::Ballerina {
        return Err(ConfigError::Conflict(
            "--topic-url-prefix is for --dialect websub (ballerina topics are names)".into(),
        ));
    }
    Ok(Some(u))
}

/// `--register auto|always|never`; auto is what the dialect needs.
fn register(a: &RunArgs, d: Dialect) -> Result<bool, ConfigError> {
    match opt(&a.register).map(str::trim) {
        None | Some("auto") => Ok(d == Dialect::Ballerina),
        Some("always") => Ok(true),
        Some("never") => Ok(false),
        Some(s) => Err(ConfigError::invalid(
            "register",
            s,
            "is not auto, always or never",
        )),
    }
}

/// The WebSub target's dialect settings.
pub(super) fn resolve(a: &RunArgs) -> Result<WebSubConfig, ConfigError> {
    let d = dialect(a)?;
    let listen: Option<SocketAddr> = opt(&a.topic_server_listen)
        .map(|s| value("topic-server-listen", s))
        .transpose()?;
    if listen.is_some() && d == Dialect::Ballerina {
        return Err(ConfigError::Conflict(
            "--topic-server-listen is for --dialect websub (ballerina publishes carry the content)"
                .into(),
        ));
    }
    Ok(WebSubConfig {
        dialect: d,
        topic_url_prefix: topic_url_prefix(a, d, listen)?,
        register: register(a, d)?,
        topic_server_listen: listen,
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_flags::{args, err};
    use super::*;

    #[test]
    fn defaults_and_dialects() {
        let c = resolve(&args(&[])).unwrap();
        assert_eq!((c.dialect, c.register), (Dialect::Ballerina, true));
        assert_eq!(c.topic_url_prefix, None);
        let c = resolve(&args(&[
            "--dialect",
            "websub",
            "--topic-url-prefix",
            "http://topics.ns.svc:9100/t/",
            "--topic-server-listen",
            "0.0.0.0:9100",
        ]))
        .unwrap();
        assert_eq!((c.dialect, c.register), (Dialect::Websub, false));
        assert_eq!(
            c.topic_url_prefix.unwrap().as_str(),
            "http://topics.ns.svc:9100/t/"
        );
        assert_eq!(c.topic_server_listen, Some("0.0.0.0:9100".parse().unwrap()));
        let w = ["--dialect", "websub", "--topic-url-prefix", "http://t/"];
        for (reg, want) in [("always", true), ("never", false), ("auto", false)] {
            let argv: Vec<&str> = w.iter().copied().chain(["--register", reg]).collect();
            assert_eq!(resolve(&args(&argv)).unwrap().register, want, "{reg}");
        }
        assert!(!resolve(&args(&["--register", "never"])).unwrap().register);
        // Without a prefix, the topic server's bound address names the topics
        // (run/serve_topics.rs).
        for listen in [None, Some("127.0.0.1:9100"), Some("[::1]:0")] {
            let mut argv = vec!["--dialect", "websub"];
            argv.extend(listen.iter().flat_map(|l| ["--topic-server-listen", *l]));
            let c = resolve(&args(&argv)).unwrap();
            assert_eq!(c.topic_url_prefix, None, "{listen:?}");
            assert_eq!(c.topic_server_listen, listen.map(|l| l.parse().unwrap()));
        }
    }

    #[test]
    fn rules_and_messages() {
        for (argv, want) in [
            (
                &["--dialect", "wso2"][..],
                "invalid --dialect `wso2`: is not ballerina or websub",
            ),
            (
                &[
                    "--dialect",
                    "websub",
                    "--topic-server-listen",
                    "0.0.0.0:9100",
                ],
                "--topic-server-listen 0.0.0.0:9100 needs --topic-url-prefix URL",
            ),
            (
                &["--dialect", "websub", "--topic-server-listen", "[::]:0"],
                "--topic-server-listen [::]:0 needs --topic-url-prefix URL",
            ),
            (
                &["--topic-server-listen", "127.0.0.1:9100"],
                "--topic-server-listen is for --dialect websub",
            ),
            (
                &["--dialect", "websub", "--topic-url-prefix", "topics/"],
                "invalid --topic-url-prefix `topics/`: relative URL without a base",
            ),
            (
                &["--dialect", "websub", "--topic-url-prefix", "ftp://h/"],
                "invalid --topic-url-prefix `ftp://h/`: must be an http:// or https:// URL",
            ),
            (
                &["--dialect", "websub", "--topic-url-prefix", "http://u:pw@/"],
                "invalid --topic-url-prefix `http://u:redacted@/`",
            ),
            (
                &["--topic-url-prefix", "http://t/"],
                "--topic-url-prefix is for --dialect websub",
            ),
            (
                &["--register", "yes"],
                "invalid --register `yes`: is not auto, always or never",
            ),
            (
                &["--dialect", "websub", "--topic-server-listen", "9100"],
                "invalid --topic-server-listen `9100`",
            ),
        ] {
            err(resolve(&args(argv)), want);
        }
    }
}
