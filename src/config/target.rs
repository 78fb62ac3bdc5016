//! The target flags (kinds, hub URL, Service Bus settings) and the topic phases →
//! `TargetConfig`.

use serde::Serialize;

use hubload_servicebus::TransportType;

use super::error::ConfigError;
use super::parse::{count32, list, opt};
use crate::cli::RunArgs;
use crate::kind::{SbTopics, TargetKind};
use crate::secret::Secret;
use crate::shard_contract::ShardSpec;
use crate::targets::request::ExtraHeaders;

/// Where the load goes.
#[derive(Debug, Clone, Serialize)]
pub struct TargetConfig {
    /// In run order; two entries give a side-by-side run.
    pub kinds: Vec<TargetKind>,
    /// The hub URL; `None` starts the embedded hub. Its user-info has been moved into
    /// `hub_headers` (Basic), so it carries no password; redacted again in case.
    #[serde(serialize_with = "super::serialize::redacted_url")]
    pub hub_url: Option<url::Url>,
    /// Credentials and `--header`s of every hub request (`auth.rs`); reports show names only.
    pub hub_headers: ExtraHeaders,
    /// Service Bus connection string; `None` starts the emulator.
    pub sb_connection_string: Option<Secret>,
    /// `--hub-servicebus`: the embedded hub in broker mode on one embedded emulator, shared
    /// with the Service Bus path.
    pub hub_servicebus: bool,
    /// Service Bus topic mapping.
    pub sb_topics: SbTopics,
    /// AMQP connections.
    pub sb_connections: u32,
    /// Link credit (prefetch) of each broker subscriber's receiver (`--sb-receiver-credit`).
    pub sb_receiver_credit: u32,
    /// `--resolve`: hosts pinned to addresses instead of DNS (`resolve_hosts.rs`).
    pub resolve: super::resolve_hosts::ResolveHosts,
    /// `--sb-transport`: overrides the connection string's `TransportType`; `None` keeps it.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "transport_name"
    )]
    pub sb_transport: Option<TransportType>,
}

fn transport_name<S: serde::Serializer>(
    t: &Option<TransportType>,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.serialize_str(t.map_or("", TransportType::as_str))
}

fn sb_transport(a: &RunArgs) -> Result<Option<TransportType>, ConfigError> {
    match opt(&a.sb_transport) {
        None => Ok(None),
        Some("amqp") => Ok(Some(TransportType::Amqp)),
        Some("websockets") => Ok(Some(TransportType::AmqpWebSockets)),
        Some(s) => Err(ConfigError::invalid(
            "sb-transport",
            s,
            "is not amqp or websockets",
        )),
    }
}

fn kinds(a: &RunArgs) -> Result<Vec<TargetKind>, ConfigError> {
    let Some(s) = opt(&a.target) else {
        return Ok(vec![TargetKind::Websub]);
    };
    let kinds: Vec<TargetKind> = list("target", s, |f, v| {
        v.parse().map_err(|e| ConfigError::invalid(f, v, e))
    })?;
    for (i, k) in kinds.iter().enumerate() {
        if kinds[..i].contains(k) {
            return Err(ConfigError::invalid(
                "target",
                s,
                format!("names {} twice", k.as_str()),
            ));
        }
    }
    Ok(kinds)
}

fn hub_url(a: &RunArgs) -> Result<Option<url::Url>, ConfigError> {
    let Some(s) = opt(&a.hub_url) else {
        return Ok(None);
    };
    // Errors show the URL with its password redacted.
    let shown = super::auth::redact_url_text(s);
    let bad = |why: &str| ConfigError::invalid("hub-url", &shown, why);
    let u = url::Url::parse(s.trim()).map_err(|e| ConfigError::invalid("hub-url", &shown, e))?;
    match u.scheme() {
        "http" | "https" if u.host().is_some() => {}
        _ => return Err(bad("must be an http:// or https:// URL with a host")),
    }
    super::parse::dialable("hub-url", &shown, &u)?;
    if u.query_pairs().any(|(k, _)| k == "hub.mode") {
        return Err(bad(
            "already carries hub.mode; hubload adds it (give the hub's URL without it)",
        ));
    }
    Ok(Some(u))
}

fn sb_topics(a: &RunArgs) -> Result<SbTopics, ConfigError> {
    match opt(&a.sb_topics) {
        None | Some("per-topic") => Ok(SbTopics::PerTopic),
        Some(s) => match s.strip_prefix("single:") {
            Some(name) if !name.trim().is_empty() => Ok(SbTopics::Single(name.trim().to_string())),
            _ => Err(ConfigError::invalid(
                "sb-topics",
                s,
                "is not per-topic or single:NAME",
            )),
        },
    }
}

/// Link credit of a broker subscriber's receiver: enough that settling one message at a
/// time never stalls the link (docs/servicebus-receiver.md, "Credit and prefetch").
const DEFAULT_RECEIVER_CREDIT: u32 = 16;

/// Where the load goes.
pub(super) fn resolve(a: &RunArgs) -> Result<TargetConfig, ConfigError> {
    let kinds = kinds(a)?;
    let hub_url = hub_url(a)?;
    if a.hub_servicebus {
        let why = if hub_url.is_some() {
            Some("runs the embedded hub; it cannot go with --hub-url")
        } else if a.sb_connection_string.is_some() {
            Some("runs on the embedded emulator; it cannot go with --sb-connection-string")
        } else if !kinds.contains(&TargetKind::Websub) {
            Some("needs the websub target (the embedded hub)")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(ConfigError::invalid("hub-servicebus", "true", why));
        }
    }
    let sb_transport = sb_transport(a)?;
    if sb_transport == Some(TransportType::AmqpWebSockets) && a.sb_connection_string.is_none() {
        return Err(ConfigError::invalid(
            "sb-transport",
            "websockets",
            "needs --sb-connection-string (the emulator a run starts serves AMQP only)",
        ));
    }
    Ok(TargetConfig {
        kinds,
        hub_url,
        hub_servicebus: a.hub_servicebus,
        hub_headers: Default::default(),
        sb_connection_string: a.sb_connection_string.clone().map(Secret::new),
        sb_topics: sb_topics(a)?,
        sb_connections: opt(&a.sb_connections)
            .map_or(Ok(4), |s| count32("sb-connections", s, 1))?,
        sb_receiver_credit: opt(&a.sb_receiver_credit)
            .map_or(Ok(DEFAULT_RECEIVER_CREDIT), |s| {
                count32("sb-receiver-credit", s, 1)
            })?,
        resolve: super::resolve_hosts::resolve(&a.resolve)
            .map_err(|e| ConfigError::invalid("resolve", &e.entry, e.why))?,
        sb_transport,
    })
}

/// A side-by-side run is refused when sharded: each shard would write one artifact (and one
/// `HUBLOAD-SHARD` log stream) per target, which `hubload merge` would add together. Run each
/// target as its own sharded Job instead.
pub(super) fn check_sharded(
    t: &TargetConfig,
    shard: Option<&ShardSpec>,
) -> Result<(), ConfigError> {
    if t.kinds.len() > 1 && shard.is_some_and(|s| s.count > 1) {
        let names: Vec<&str> = t.kinds.iter().map(|k| k.as_str()).collect();
        return Err(ConfigError::Conflict(format!(
            "--target {} (side by side) cannot run sharded (HUBLOAD_SHARD_COUNT > 1): \
             run each target as its own sharded Job",
            names.join(",")
        )));
    }
    Ok(())
}

/// `--register-concurrency` [default: 16].
pub(super) fn register_concurrency(a: &RunArgs) -> Result<u32, ConfigError> {
    opt(&a.register_concurrency).map_or(Ok(16), |s| count32("register-concurrency", s, 1))
}

#[cfg(test)]
mod tests {
    use super::super::test_flags::{args, err};
    use super::*;

    #[test]
    fn kinds_and_urls() {
        use TargetKind::*;
        let table: &[(&[&str], &[TargetKind])] = &[
            (&[], &[Websub]),
            (&["--target", "servicebus"], &[Servicebus]),
            (&["--target", "servicebus, websub"], &[Servicebus, Websub]),
        ];
        for (argv, want) in table {
            assert_eq!(resolve(&args(argv)).unwrap().kinds, *want, "{argv:?}");
        }
        let t = resolve(&args(&[
            "--hub-url",
            "http://h:9/hub?x=1",
            "--sb-topics",
            "single: all ",
        ]))
        .unwrap();
        assert_eq!(t.hub_url.unwrap().as_str(), "http://h:9/hub?x=1");
        assert_eq!(t.sb_topics, SbTopics::Single("all".into()));
        assert_eq!(t.sb_connections, 4);
        assert_eq!(register_concurrency(&args(&[])).unwrap(), 16);
    }

    #[test]
    fn side_by_side_is_refused_only_when_sharded() {
        let shard = |count| ShardSpec {
            index: 0,
            count,
            run_id: "r".into(),
            start_at: None,
        };
        let two = resolve(&args(&["--target", "websub,servicebus"])).unwrap();
        let one = resolve(&args(&["--target", "servicebus"])).unwrap();
        let e = check_sharded(&two, Some(&shard(2)))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "--target websub,servicebus (side by side) cannot run sharded \
             (HUBLOAD_SHARD_COUNT > 1): run each target as its own sharded Job"
        );
        assert!(check_sharded(&two, Some(&shard(1))).is_ok());
        assert!(check_sharded(&two, None).is_ok());
        assert!(check_sharded(&one, Some(&shard(2))).is_ok());
    }

    #[test]
    fn rules_and_messages() {
        for (argv, want) in [
            (
                &["--target", "websub,websub"][..],
                "invalid --target `websub,websub`: names websub twice",
            ),
            (
                &["--target", "servicebus,websub,servicebus"],
                "invalid --target `servicebus,websub,servicebus`: names servicebus twice",
            ),
            (
                &["--target", "amqp"],
                "invalid --target `amqp`: is not websub or servicebus",
            ),
            (
                &["--target", "websub,"],
                "invalid --target `websub,`: has an empty item",
            ),
            (
                &["--hub-url", "ftp://x/hub"],
                "invalid --hub-url `ftp://x/hub`: must be an http:// or https:// URL",
            ),
            (&["--hub-url", "hub"], "invalid --hub-url `hub`"),
            (
                &["--hub-url", "http://h/hub?hub.mode=publish"],
                "invalid --hub-url `http://h/hub?hub.mode=publish`: already carries hub.mode",
            ),
            (
                &["--sb-topics", "single:"],
                "invalid --sb-topics `single:`: is not per-topic or single:NAME",
            ),
            (
                &["--sb-connections", "0"],
                "invalid --sb-connections `0`: must be at least 1",
            ),
        ] {
            err(resolve(&args(argv)), want);
        }
        err(
            register_concurrency(&args(&["--register-concurrency", "0"])),
            "invalid --register-concurrency `0`: must be at least 1",
        );
    }
}
