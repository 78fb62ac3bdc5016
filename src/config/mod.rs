//! Profile + flags → one validated `RunConfig` (`model.rs`): `resolve` calls one function per
//! concern, and each concern's types, rules and tests live in its own file. Every cross-field
//! check lives in config; nothing downstream sees clap or re-validates.

mod auth;
mod client_flags;
mod delivery;
mod dialect;
mod error;
mod http_version;
pub mod inflight_default;
mod judging;
mod load;
mod model;
mod observe;
mod output;
mod parse;
pub mod profile;
mod proxy_flags;
mod resolve_hosts;
mod sb_connection;
mod serialize;
mod surge_flag;
mod target;
#[cfg(test)]
pub(crate) mod test_flags;
pub mod tls_flags;
mod topic_churn_flag;
mod web;
mod workload;

pub use client_flags::{threads, ClientConfig};
pub use delivery::{DeliveryConfig, SubscribeTopics};
pub use dialect::WebSubConfig;
pub use error::ConfigError;
pub use http_version::{HttpConfig, HttpVersion};
pub use judging::CapacityConfig;
pub use model::RunConfig;
pub use observe::{ObserveConfig, ObservedUrl, ServerQuery};
pub use output::OutputConfig;
pub use proxy_flags::ProxySettings;
pub use resolve_hosts::{HostPin, ResolveHosts};
pub use surge_flag::NOISE_FLOOR;
pub use target::TargetConfig;
pub use web::WebConfig;

/// `--web` and `--web-token-file` alone (`hubload merge --follow --web`): the address, and
/// the token a non-loopback address needs.
pub fn resolve_web(a: &crate::cli::RunArgs) -> Result<Option<WebConfig>, ConfigError> {
    web::resolve(a)
}

/// `merge --follow`'s default stall bound: how long no shard's stream may grow.
pub const STALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// `merge --stall-timeout`: a positive duration ([`STALL_TIMEOUT`] when not given).
pub fn stall_timeout(raw: Option<&str>) -> Result<std::time::Duration, ConfigError> {
    raw.map_or(Ok(STALL_TIMEOUT), |v| {
        parse::positive_duration("stall-timeout", v)
    })
}

pub use crate::kind::{Model, SbTopics, TargetKind};
pub use crate::secret::Secret;
pub use crate::targets::request::{Dialect, ExtraHeaders};

use self::parse::opt;
use crate::cli::RunArgs;
use crate::shard_contract::ShardSpec;
use crate::workload::SurgeStart;

/// Resolve flags (already merged with the profile by the parser) into a `RunConfig` for one
/// process that is not a shard, with an empty environment: [`resolve_for`] with neither.
pub fn resolve(a: &RunArgs) -> Result<RunConfig, ConfigError> {
    resolve_for(a, None, &|_| None)
}

/// [`resolve`] for a given shard (`None`: not sharded) and environment (`env` looks a
/// variable up: the proxy variables are read through it). The caller reads the shard from
/// the environment (`shard_contract::ShardSpec::from_env`): config reads no environment
/// itself. One line per concern; each concern's rules and their tests live in its own file.
pub fn resolve_for(
    a: &RunArgs,
    shard: Option<ShardSpec>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<RunConfig, ConfigError> {
    let threads = client_flags::threads(opt(&a.threads))?;
    let workload = workload::resolve(a)?;
    let client = client_flags::resolve(a)?;
    let mut load = load::resolve(a, client.timeout)?;
    let mut target = target::resolve(a)?;
    target.hub_headers = auth::resolve(a, target.hub_url.as_mut())?;
    let websub = dialect::resolve(a)?;
    target::check_sharded(&target, shard.as_ref())?;
    let judging = judging::resolve(a, shard.as_ref())?;
    let output = output::resolve(a);
    let topic_churn = topic_churn_flag::resolve(a, &target, &websub)?;
    let surge = surge_flag::resolve(a, load.model, &mut load.levels, &workload)?;
    let slo = judging.capacity.iter().flat_map(|c| &c.slo);
    surge_flag::check_gates(judging.thresholds.iter().chain(slo), surge.as_ref())?;
    let noise_floor = surge_flag::noise_floor(a, surge.as_ref())?;
    let mut cfg = RunConfig {
        workload,
        model: load.model,
        levels: load.levels,
        arrivals: load.arrivals,
        tls: tls_flags::resolve(a, client.connect_timeout)?,
        http: http_version::resolve(a)?,
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
        topic_churn,
        surge,
        noise_floor,
        observe: observe::resolve(a)?,
        shown: serde_json::Value::Null,
        descriptors: None,
        web: web::resolve(a)?,
        proxy: proxy_flags::resolve(a, env)?,
    };
    cfg.descriptors = inflight_default::apply(&mut cfg.levels, &cfg.target, a);
    cfg.shown = shown(a, &cfg);
    if let Some(r) = cfg.topic_churn {
        cfg.shown["topic_churn"] = r.into();
    }
    // As given: a merge reads it back for the isolation verdict.
    if let Some(s) = opt(&a.surge).filter(|_| cfg.surge.is_some()) {
        cfg.shown["surge"] = s.into();
        cfg.shown["noise_floor"] = humantime::format_duration(cfg.noise_floor)
            .to_string()
            .into();
    }
    // `@levelN`: each level's baseline seconds before its surge (null: no surge), which a
    // merge reads back, as it knows no level's duration.
    if let Some(s) = (cfg.surge.as_ref()).filter(|s| matches!(s.start, SurgeStart::Level(_))) {
        let from: Vec<Option<u64>> = (cfg.levels.iter().enumerate())
            .map(|(i, l)| s.from_in(i, l.stop.duration).map(|d| d.as_secs()))
            .collect();
        cfg.shown["surge_from_s"] = serde_json::json!(from);
    }
    if cfg.proxy.0.proxy.is_some() {
        cfg.shown["proxy"] = serde_json::to_value(&cfg.proxy).unwrap_or_default();
    }
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
        "http": cfg.http,
        "tls": cfg.tls,
        "target": cfg.target,
        "websub": cfg.websub,
        "register_concurrency": cfg.register_concurrency,
        "deregister": cfg.deregister,
        "thresholds": cfg.thresholds.iter().map(|t| t.text.clone()).collect::<Vec<_>>(),
        "delivery": cfg.delivery,
    })
}
