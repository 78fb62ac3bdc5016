//! Profile + flags → one validated `RunConfig`. Every cross-field check lives here; nothing
//! downstream sees clap or re-validates.

mod auth;
mod client;
mod delivery;
mod dialect;
mod judging;
pub mod limits;
mod load;
mod output;
mod parse;
pub mod profile;
mod resolve_hosts;
mod target;
#[cfg(test)]
mod testutil;
pub mod tls;
mod workload;

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

pub use client::threads;
pub use delivery::{DeliveryConfig, SubscribeTopics};
pub use resolve_hosts::{HostPin, ResolveHosts};

pub use crate::kind::{Model, SbTopics, TargetKind};
pub use crate::secret::Secret;
pub use crate::targets::request::{Dialect, ExtraHeaders};

use crate::cli::RunArgs;
use crate::engine::{Arrivals, LevelSpec};
use crate::gate::Threshold;
use crate::shard::ShardSpec;
use crate::workload::WorkloadConfig;

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
    /// A `--threshold` or `--slo` rule does not parse (the error names the flag).
    #[error("invalid {0}")]
    Gate(crate::gate::GateError),
    /// A secret-bearing flag is wrong; the message never repeats its value.
    #[error("invalid --{field}: {message}")]
    Secret { field: String, message: String },
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

/// Where the load goes.
#[derive(Debug, Clone, Serialize)]
pub struct TargetConfig {
    /// In run order; two entries give a side-by-side run.
    pub kinds: Vec<TargetKind>,
    /// The hub URL; `None` starts the embedded hub. Its user-info has been moved into
    /// `hub_headers` (Basic), so it carries no password; redacted again in case.
    #[serde(serialize_with = "redacted_url")]
    pub hub_url: Option<url::Url>,
    /// Credentials and `--header`s of every hub request (`auth.rs`); reports show names only.
    pub hub_headers: ExtraHeaders,
    /// Service Bus connection string; `None` starts the emulator.
    pub sb_connection_string: Option<Secret>,
    /// Service Bus topic mapping.
    pub sb_topics: SbTopics,
    /// AMQP connections.
    pub sb_connections: u32,
    /// `--resolve`: hosts pinned to addresses instead of DNS (`resolve_hosts.rs`).
    pub resolve: ResolveHosts,
}

/// The WebSub target's dialect settings (`dialect.rs`).
#[derive(Debug, Clone, Serialize)]
pub struct WebSubConfig {
    /// The hub's publisher convention.
    pub dialect: Dialect,
    /// Websub dialect: topic URL = this prefix + the topic name.
    #[serde(serialize_with = "redacted_url")]
    pub topic_url_prefix: Option<url::Url>,
    /// Whether topics are registered before the load (`--register`, resolved for the dialect).
    pub register: bool,
    /// Where the topic server listens (websub dialect); wired by the topic server.
    pub topic_server_listen: Option<std::net::SocketAddr>,
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
    /// Closed (concurrency levels) or open (rate levels).
    pub model: Model,
    #[serde(skip)]
    pub levels: Vec<LevelSpec>,
    /// Open model inter-arrival law.
    #[serde(skip)]
    pub arrivals: Arrivals,
    pub client: ClientConfig,
    /// How https hubs are verified.
    pub tls: tls::TlsConfig,
    pub target: TargetConfig,
    /// Dialect, topic URLs and whether to register.
    pub websub: WebSubConfig,
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
    /// `--threads`; `None` means one per CPU.
    #[serde(skip)]
    pub threads: Option<usize>,
    /// This process's part of a sharded run; `None` when not sharded.
    #[serde(skip)]
    pub shard: Option<ShardSpec>,
    /// End-to-end delivery measurement (`--subscribers` ≥ 1); `None` when off.
    pub delivery: Option<DeliveryConfig>,
    /// The settings as given (profile + flags), for reports; secrets redacted.
    #[serde(skip)]
    pub shown: serde_json::Value,
    /// The open-files budget the open model's default in-flight bound was sized from.
    #[serde(skip)]
    pub descriptors: Option<limits::DescriptorBudget>,
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

/// Resolve flags (already merged with the profile by the parser) into a `RunConfig`, for this
/// process's shard as the environment gives it (`shard::ShardSpec::from_env`).
pub fn resolve(a: &RunArgs) -> Result<RunConfig, ConfigError> {
    let shard = ShardSpec::from_env().map_err(|e| ConfigError::Conflict(e.to_string()))?;
    resolve_for(a, shard)
}

/// [`resolve`] for a given shard (`None`: not sharded). One line per concern; each concern's
/// rules and their tests live in its own file.
pub fn resolve_for(a: &RunArgs, shard: Option<ShardSpec>) -> Result<RunConfig, ConfigError> {
    let threads = client::threads(opt(&a.threads))?;
    let workload = workload::resolve(a)?;
    let client = client::resolve(a)?;
    let load = load::resolve(a, client.timeout)?;
    let mut target = target::resolve(a)?;
    target.hub_headers = auth::resolve(a, target.hub_url.as_mut())?;
    let websub = dialect::resolve(a)?;
    target::check_sharded(&target, shard.as_ref())?;
    let judging = judging::resolve(a, shard.as_ref())?;
    let output = output::resolve(a);
    let mut cfg = RunConfig {
        workload,
        model: load.model,
        levels: load.levels,
        arrivals: load.arrivals,
        tls: tls::resolve(a, client.connect_timeout)?,
        client,
        target,
        websub,
        register_concurrency: target::register_concurrency(a)?,
        deregister: a.deregister,
        output,
        thresholds: judging.thresholds,
        capacity: judging.capacity,
        what_if: judging.what_if,
        threads,
        shard,
        delivery: delivery::resolve(a)?,
        shown: serde_json::Value::Null,
        descriptors: None,
    };
    limits::apply(&mut cfg, a);
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
        "model": cfg.model.as_str(),
        "levels": cfg.levels.iter().map(|l| l.load.label()).collect::<Vec<_>>(),
        "duration": cfg.levels.first().and_then(|l| l.stop.duration).map(|d| humantime::format_duration(d).to_string()),
        "requests": cfg.levels.first().and_then(|l| l.stop.requests),
        "warmup": cfg.levels.first().map(|l| humantime::format_duration(l.warmup).to_string()),
        "ramp_up": cfg.levels.first().map(|l| humantime::format_duration(l.ramp_up).to_string()),
        "arrivals": format!("{:?}", cfg.arrivals).to_lowercase(),
        "client": cfg.client,
        "tls": cfg.tls,
        "target": cfg.target,
        "websub": cfg.websub,
        "register_concurrency": cfg.register_concurrency,
        "deregister": cfg.deregister,
        "thresholds": cfg.thresholds.iter().map(|t| t.text.clone()).collect::<Vec<_>>(),
        "delivery": cfg.delivery,
    })
}
