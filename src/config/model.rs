//! `RunConfig`: everything a run needs, validated; each concern's part is defined in the file
//! that resolves it.

use std::time::Duration;

use serde::Serialize;

use super::client_flags::ClientConfig;
use super::delivery::DeliveryConfig;
use super::dialect::WebSubConfig;
use super::http_version::HttpConfig;
use super::inflight_default::DescriptorBudget;
use super::judging::CapacityConfig;
use super::output::OutputConfig;
use super::target::TargetConfig;
use super::tls_flags::TlsConfig;
use crate::engine::{Arrivals, LevelSpec};
use crate::kind::Model;
use crate::report::judge::rules::Threshold;
use crate::shard_contract::ShardSpec;
use crate::workload::WorkloadConfig;

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
    /// `--http-version` and `--h2-streams`.
    pub http: HttpConfig,
    /// How https hubs are verified.
    pub tls: TlsConfig,
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
    /// `--topic-churn`: topics deregistered and registered again per second while a level
    /// runs (Ballerina dialect); `None` when off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic_churn: Option<f64>,
    /// `--surge`: tenants publishing K× their share from a point in every level (open model);
    /// `None` when off.
    #[serde(skip)]
    pub surge: Option<crate::workload::Surge>,
    /// `--noise-floor`: the delivery isolation verdict's noise floor (docs/fairness.md).
    #[serde(skip)]
    pub noise_floor: std::time::Duration,
    /// Server metrics, PromQL queries, remote write and the /metrics listener.
    #[serde(skip)]
    pub observe: super::observe::ObserveConfig,
    /// The settings as given (profile + flags), for reports; secrets redacted.
    #[serde(skip)]
    pub shown: serde_json::Value,
    /// The open-files budget the open model's default in-flight bound was sized from.
    #[serde(skip)]
    pub descriptors: Option<DescriptorBudget>,
    /// `--web`: the live page and control API; `None` when off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub web: Option<super::web::WebConfig>,
    /// `--proxy`, `--no-proxy` and their variables: the proxy of Service Bus connections and `https://` hubs.
    #[serde(skip)]
    pub proxy: super::ProxySettings,
}
