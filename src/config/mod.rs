//! Profile + flags → one validated `RunConfig`. Every cross-field check lives here; nothing
//! downstream sees clap or re-validates.

mod parse;
pub mod profile;
mod secret;
pub mod tls;

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

pub use secret::Secret;

use crate::cli::RunArgs;
use crate::engine::{Arrivals, LevelSpec, Load, PlanStep, Stop};
use crate::judge::Threshold;
use crate::workload::{Distribution, TopicLayout, WorkloadConfig};

/// A configuration problem: one line naming the field. Exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A flag or profile value is wrong.
    #[error("invalid --{field} `{value}`: {message}")]
    Invalid {
        field: String,
        value: String,
        message: String,
    },
    /// A combination of settings is wrong.
    #[error("{0}")]
    Conflict(String),
    /// A profile could not be used.
    #[error("profile {path}: {message}")]
    Profile { path: String, message: String },
}

impl ConfigError {
    fn invalid(field: &str, value: &str, message: impl std::fmt::Display) -> Self {
        ConfigError::Invalid {
            field: field.to_string(),
            value: value.trim().to_string(),
            message: message.to_string(),
        }
    }
}

/// The client model: timeouts, pool and retries.
#[derive(Debug, Clone, Serialize)]
pub struct ClientConfig {
    /// Bound of the whole attempt (pool wait + connect + request + response).
    #[serde(with = "humantime_serde_str")]
    pub timeout: Duration,
    /// Bound of the connect.
    #[serde(with = "humantime_serde_str")]
    pub connect_timeout: Duration,
    /// Most connections to one host; `None` means the level's concurrency.
    pub pool_per_host: Option<u32>,
    /// Bound of the wait for a pooled connection.
    #[serde(with = "humantime_serde_str")]
    pub pool_timeout: Duration,
    /// Immediate retries on a retryable failure.
    pub retries: u32,
    /// The preset the values started from.
    pub preset: String,
}

/// Which protocols a run loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    /// A WebSub hub over HTTP.
    Websub,
    /// Azure Service Bus over AMQP.
    Servicebus,
}

/// Service Bus topic mapping.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SbTopics {
    /// Each hubload topic to the Service Bus topic of the same name.
    PerTopic,
    /// Everything to one topic; tenant, application and channel as properties.
    Single(String),
}

/// Where the load goes.
#[derive(Debug, Clone, Serialize)]
pub struct TargetConfig {
    /// In run order; two entries give a side-by-side run.
    pub kinds: Vec<TargetKind>,
    /// The hub URL; `None` starts the embedded hub. A password in it is redacted in reports.
    #[serde(serialize_with = "redacted_url")]
    pub hub_url: Option<url::Url>,
    /// Bearer token for the hub.
    pub hub_token: Option<Secret>,
    /// Service Bus connection string; `None` starts the emulator.
    pub sb_connection_string: Option<Secret>,
    /// Service Bus topic mapping.
    pub sb_topics: SbTopics,
    /// AMQP connections.
    pub sb_connections: u32,
}

/// The capacity finder's settings.
#[derive(Debug, Clone, Serialize)]
pub struct CapacityConfig {
    /// The SLO: every bound must hold for a level to pass.
    pub slo: Vec<Threshold>,
    /// Upper bound of the search.
    pub max: f64,
    /// Longest total time of the search.
    #[serde(with = "humantime_serde_str")]
    pub budget: Duration,
}

/// Report settings.
#[derive(Debug, Clone, Serialize)]
pub struct OutputConfig {
    /// Report directory.
    pub out_dir: PathBuf,
    /// Streamed per-attempt JTL.
    pub jtl: Option<PathBuf>,
    /// No progress or table on stdout.
    pub quiet: bool,
}

/// Everything a run needs, validated.
#[derive(Debug, Clone, Serialize)]
pub struct RunConfig {
    #[serde(skip)]
    pub workload: WorkloadConfig,
    /// "closed" or "open".
    pub model: &'static str,
    #[serde(skip)]
    pub levels: Vec<LevelSpec>,
    /// Open model inter-arrival law.
    #[serde(skip)]
    pub arrivals: Arrivals,
    pub client: ClientConfig,
    /// How https hubs are verified.
    pub tls: tls::TlsConfig,
    pub target: TargetConfig,
    /// Concurrency of the registration phase.
    pub register_concurrency: u32,
    /// Deregister at the end.
    pub deregister: bool,
    pub output: OutputConfig,
    #[serde(skip)]
    pub thresholds: Vec<Threshold>,
    #[serde(skip)]
    pub capacity: Option<CapacityConfig>,
    /// Timeouts for the what-if table.
    #[serde(skip)]
    pub what_if: Vec<Duration>,
    /// The settings as given (profile + flags), for reports; secrets redacted.
    #[serde(skip)]
    pub shown: serde_json::Value,
}

mod humantime_serde_str {
    use std::time::Duration;
    pub fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(*d).to_string())
    }
}

fn redacted_url<S: serde::Serializer>(u: &Option<url::Url>, s: S) -> Result<S::Ok, S::Error> {
    match u {
        None => s.serialize_none(),
        Some(u) => {
            let mut u = u.clone();
            if u.password().is_some() {
                let _ = u.set_password(Some("redacted"));
            }
            s.serialize_str(u.as_str())
        }
    }
}

fn opt(v: &Option<String>) -> Option<&str> {
    v.as_deref()
}

/// Resolve flags (already merged with the profile by the parser) into a `RunConfig`.
pub fn resolve(a: &RunArgs) -> Result<RunConfig, ConfigError> {
    use parse::*;
    let workload = WorkloadConfig {
        tenants: opt(&a.tenants).map_or(Ok(10), |s| count32("tenants", s, 1))?,
        sps: opt(&a.sps).map_or(Ok(10), |s| count32("sps", s, 1))?,
        users: opt(&a.users).map_or(Ok(10), |s| count32("users", s, 1))?,
        channels: match opt(&a.channels) {
            None => ["login", "registration", "credential", "session"]
                .map(String::from)
                .to_vec(),
            Some(s) => list("channels", s, |f, c| {
                if c.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                {
                    Ok(c.to_string())
                } else {
                    Err(ConfigError::invalid(
                        f,
                        c,
                        "channel names are letters, digits, - and _",
                    ))
                }
            })?,
        },
        layout: opt(&a.topics).map_or(Ok(TopicLayout::PerTenantChannel), |s| value("topics", s))?,
        payload_bytes: opt(&a.payload_bytes)
            .map(|s| count("payload-bytes", s, 1).map(|n| n as usize))
            .transpose()?,
        seed: opt(&a.seed).map_or(Ok(1), |s| count("seed", s, 0))?,
        distribution: opt(&a.distribution)
            .map_or(Ok(Distribution::Uniform), |s| value("distribution", s))?,
    };
    if let Some(p) = workload.payload_bytes {
        if p > 16 << 20 {
            return Err(ConfigError::invalid(
                "payload-bytes",
                &p.to_string(),
                "must be at most 16 MiB",
            ));
        }
    }

    // Client: preset first, then individual flags.
    let preset = opt(&a.client).unwrap_or("default");
    let (mut timeout, mut connect, mut pool_wait, mut per_host, mut retries) = match preset {
        "default" => (Duration::from_secs(5), None, None, None, 0),
        "identity-publisher" => {
            let t = Duration::from_millis(300);
            (t, Some(t), Some(t), Some(2), 2)
        }
        other => {
            return Err(ConfigError::invalid(
                "client",
                other,
                "is not default or identity-publisher",
            ))
        }
    };
    if let Some(s) = opt(&a.timeout) {
        timeout = positive_duration("timeout", s)?;
    }
    if let Some(s) = opt(&a.connect_timeout) {
        connect = Some(positive_duration("connect-timeout", s)?);
    }
    if let Some(s) = opt(&a.pool_timeout) {
        pool_wait = Some(duration("pool-timeout", s)?);
    }
    if let Some(s) = opt(&a.pool_per_host) {
        per_host = Some(count32("pool-per-host", s, 1)?);
    }
    if let Some(s) = opt(&a.retries) {
        retries = count32("retries", s, 0)?;
        if retries > 10 {
            return Err(ConfigError::invalid("retries", s, "must be at most 10"));
        }
    }
    let client = ClientConfig {
        timeout,
        connect_timeout: connect.unwrap_or(timeout).min(timeout),
        pool_per_host: per_host,
        pool_timeout: pool_wait.unwrap_or(timeout).min(timeout),
        retries,
        preset: preset.to_string(),
    };

    // Levels.
    let requests = opt(&a.requests)
        .map(|s| count("requests", s, 1))
        .transpose()?;
    let duration_flag = opt(&a.duration)
        .map(|s| positive_duration("duration", s))
        .transpose()?;
    let level_duration = match (duration_flag, requests) {
        (Some(d), _) => Some(d),
        (None, Some(_)) => None,
        (None, None) => Some(Duration::from_secs(30)),
    };
    let warmup = opt(&a.warmup).map_or(Ok(Duration::ZERO), |s| duration("warmup", s))?;
    let ramp_up = opt(&a.ramp_up).map_or(Ok(Duration::ZERO), |s| duration("ramp-up", s))?;
    if level_duration.is_some_and(|d| ramp_up > d) {
        return Err(ConfigError::Conflict(
            "--ramp-up must not be longer than --duration".into(),
        ));
    }
    let arrivals = opt(&a.arrivals).map_or(Ok(Arrivals::Constant), |s| value("arrivals", s))?;
    let max_inflight = opt(&a.max_inflight)
        .map(|s| count32("max-inflight", s, 1))
        .transpose()?;
    let open_inflight = |rate: f64| {
        max_inflight.unwrap_or_else(|| {
            ((rate * client.timeout.as_secs_f64()).ceil() as u32).clamp(64, 20_000)
        })
    };
    if a.rate.is_some() && a.concurrency.is_some() {
        return Err(ConfigError::Conflict(
            "give --concurrency (closed model) or --rate (open model), not both".into(),
        ));
    }
    let stop = Stop {
        duration: level_duration,
        requests,
    };
    let level = |load| LevelSpec {
        load,
        stop,
        warmup,
        ramp_up,
    };
    let (model, levels): (&'static str, Vec<LevelSpec>) = if let Some(plan) = opt(&a.plan) {
        if a.rate.is_some() || a.concurrency.is_some() {
            return Err(ConfigError::Conflict(
                "--plan replaces --concurrency and --rate; give only one".into(),
            ));
        }
        let steps =
            PlanStep::parse_plan(plan).map_err(|e| ConfigError::invalid("plan", plan, e))?;
        let levels = steps
            .iter()
            .map(|s| {
                let load = if a.open {
                    Load::Open {
                        rate: s.value,
                        max_inflight: open_inflight(s.value),
                    }
                } else {
                    Load::Closed {
                        concurrency: s.value.round().max(1.0) as u32,
                    }
                };
                LevelSpec {
                    load,
                    stop: Stop {
                        duration: Some(s.duration),
                        requests,
                    },
                    warmup,
                    ramp_up,
                }
            })
            .collect();
        (if a.open { "open" } else { "closed" }, levels)
    } else if let Some(r) = opt(&a.rate) {
        let rates = list("rate", r, rate)?;
        (
            "open",
            rates
                .into_iter()
                .map(|r| {
                    level(Load::Open {
                        rate: r,
                        max_inflight: open_inflight(r),
                    })
                })
                .collect(),
        )
    } else {
        let cs = opt(&a.concurrency).map_or(Ok(vec![20]), |s| {
            list("concurrency", s, |f, v| count32(f, v, 1))
        })?;
        if let Some(c) = cs.iter().find(|c| **c > 100_000) {
            return Err(ConfigError::invalid(
                "concurrency",
                &c.to_string(),
                "must be at most 100000",
            ));
        }
        (
            "closed",
            cs.into_iter()
                .map(|c| level(Load::Closed { concurrency: c }))
                .collect(),
        )
    };
    if model == "closed" && a.max_inflight.is_some() {
        return Err(ConfigError::Conflict(
            "--max-inflight applies to the open model (--rate)".into(),
        ));
    }

    // Target.
    let kinds = match opt(&a.target) {
        None => vec![TargetKind::Websub],
        Some(s) => list("target", s, |f, v| match v {
            "websub" => Ok(TargetKind::Websub),
            "servicebus" => Ok(TargetKind::Servicebus),
            _ => Err(ConfigError::invalid(f, v, "is not websub or servicebus")),
        })?,
    };
    let hub_url = opt(&a.hub_url)
        .map(|s| {
            let u = url::Url::parse(s.trim()).map_err(|e| ConfigError::invalid("hub-url", s, e))?;
            match u.scheme() {
                "http" | "https" if u.host().is_some() => Ok(u),
                _ => Err(ConfigError::invalid(
                    "hub-url",
                    s,
                    "must be an http:// or https:// URL with a host",
                )),
            }
        })
        .transpose()?;
    let sb_topics = match opt(&a.sb_topics) {
        None | Some("per-topic") => SbTopics::PerTopic,
        Some(s) => match s.strip_prefix("single:") {
            Some(name) if !name.trim().is_empty() => SbTopics::Single(name.trim().to_string()),
            _ => {
                return Err(ConfigError::invalid(
                    "sb-topics",
                    s,
                    "is not per-topic or single:NAME",
                ))
            }
        },
    };
    let target = TargetConfig {
        kinds,
        hub_url,
        hub_token: a.hub_token.clone().map(Secret::new),
        sb_connection_string: a.sb_connection_string.clone().map(Secret::new),
        sb_topics,
        sb_connections: opt(&a.sb_connections)
            .map_or(Ok(4), |s| count32("sb-connections", s, 1))?,
    };

    // Judging.
    let thresholds = a
        .threshold
        .iter()
        .map(|t| {
            t.parse::<Threshold>()
                .map_err(|e| ConfigError::invalid("threshold", t, e))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let capacity = if a.find_capacity {
        let slo = opt(&a.slo).ok_or_else(|| {
            ConfigError::Conflict(
                "--find-capacity needs --slo, e.g. --slo 'p99<300ms,errors<1%'".into(),
            )
        })?;
        let slo = list("slo", slo, |f, t| {
            t.parse::<Threshold>()
                .map_err(|e| ConfigError::invalid(f, t, e))
        })?;
        let max = opt(&a.capacity_max).map_or(Ok(4096.0), |s| rate("capacity-max", s))?;
        let budget = opt(&a.capacity_budget).map_or(Ok(Duration::from_secs(600)), |s| {
            positive_duration("capacity-budget", s)
        })?;
        Some(CapacityConfig { slo, max, budget })
    } else {
        if a.slo.is_some() {
            return Err(ConfigError::Conflict(
                "--slo is used by --find-capacity; add --find-capacity or use --threshold".into(),
            ));
        }
        None
    };
    let what_if = opt(&a.what_if_timeouts).map_or(
        Ok(["100ms", "300ms", "1s", "5s"]
            .iter()
            .map(|s| humantime::parse_duration(s).expect("valid"))
            .collect()),
        |s| list("what-if-timeouts", s, positive_duration),
    )?;

    let out_dir = a.out.clone().unwrap_or_else(|| {
        let ts = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
            .to_string()
            .replace(':', "");
        PathBuf::from("reports").join(ts)
    });
    let register_concurrency =
        opt(&a.register_concurrency).map_or(Ok(16), |s| count32("register-concurrency", s, 1))?;
    let mut cfg = RunConfig {
        workload,
        model,
        levels,
        arrivals,
        tls: tls::resolve(a, client.connect_timeout)?,
        client,
        target,
        register_concurrency,
        deregister: a.deregister,
        output: OutputConfig {
            out_dir,
            jtl: a.jtl.clone(),
            quiet: a.quiet,
        },
        thresholds,
        capacity,
        what_if,
        shown: serde_json::Value::Null,
    };
    cfg.shown = shown(a, &cfg);
    Ok(cfg)
}

/// The run's settings as people read them in reports: resolved values, secrets redacted.
fn shown(a: &RunArgs, cfg: &RunConfig) -> serde_json::Value {
    let w = &cfg.workload;
    serde_json::json!({
        "profile": a.profile.as_ref().map(|p| p.display().to_string()),
        "tenants": w.tenants,
        "sps": w.sps,
        "users": w.users,
        "channels": w.channels,
        "topics": w.layout.to_string(),
        "topic_count": w.layout.topic_count(w.tenants, w.channels.len()),
        "payload_bytes": w.payload_bytes,
        "seed": w.seed,
        "distribution": format!("{:?}", w.distribution).to_lowercase(),
        "model": cfg.model,
        "levels": cfg.levels.iter().map(|l| l.load.label()).collect::<Vec<_>>(),
        "duration": cfg.levels.first().and_then(|l| l.stop.duration).map(|d| humantime::format_duration(d).to_string()),
        "requests": cfg.levels.first().and_then(|l| l.stop.requests),
        "warmup": cfg.levels.first().map(|l| humantime::format_duration(l.warmup).to_string()),
        "ramp_up": cfg.levels.first().map(|l| humantime::format_duration(l.ramp_up).to_string()),
        "arrivals": format!("{:?}", cfg.arrivals).to_lowercase(),
        "client": cfg.client,
        "tls": cfg.tls,
        "target": cfg.target,
        "register_concurrency": cfg.register_concurrency,
        "deregister": cfg.deregister,
        "thresholds": cfg.thresholds.iter().map(|t| t.text.clone()).collect::<Vec<_>>(),
    })
}
