//! The hub's command line (`hubload-hub …`, and `hubload hub …` which embeds the same args).

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use tracing_subscriber::EnvFilter;

use crate::{FaultConfig, HubConfig, HubState, RetryPolicy, TenantLimit, TenantRate};

/// Run the reference WebSub hub.
#[derive(Clone, clap::Args)]
pub struct HubArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:9000")]
    pub listen: SocketAddr,
    /// TOML file of fault settings (the keys of the `/admin/faults` JSON); flags override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Require `Authorization: Bearer <TOKEN>` for register, deregister, publish and subscribe.
    #[arg(long, env = "HUBLOAD_HUB_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Hub URL written in distributions' `Link: <…>; rel="hub"` (default: `http://<listen>/`).
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,
    /// Largest request body, in bytes (larger gets 413).
    #[arg(long, default_value_t = 1 << 20)]
    pub max_body_bytes: usize,
    /// Deliveries queued per subscriber (waiting, not in flight) before they are dropped.
    #[arg(long, default_value_t = 8192)]
    pub queue_size: usize,
    /// Bytes of content one subscriber may hold (queued or in flight) before deliveries to it
    /// are dropped; suffixes K, M, G (powers of 1024).
    #[arg(long, default_value = "16M", value_parser = parse_bytes)]
    pub max_queue_bytes: u64,
    /// Bytes of content the hub may hold for delivery in all (each publish's body counted
    /// once); a publish beyond it is answered 503. Suffixes K, M, G.
    #[arg(long, default_value = "256M", value_parser = parse_bytes)]
    pub max_memory: u64,
    /// Most deliveries in flight per subscriber (1 keeps deliveries in publish order); the
    /// pool of workers grows to it only while deliveries wait. Also in broker mode
    /// (--servicebus): workers per broker subscription, up to this × --delivery-pipeline
    /// messages received and not yet settled, in no promised order.
    #[arg(long, default_value_t = 64)]
    pub delivery_concurrency: usize,
    /// Most deliveries a worker writes at once on its connection to an `http://` callback
    /// (HTTP/1.1 pipelining; answers read in order); 1 sends one at a time.
    #[arg(long, default_value_t = 16)]
    pub delivery_pipeline: usize,
    /// Timeout of one delivery attempt, in ms.
    #[arg(long, default_value_t = 10_000)]
    pub delivery_timeout_ms: u64,
    /// Lease granted when a subscriber asks for none, in seconds.
    #[arg(long, default_value_t = 864_000)]
    pub lease_default_secs: u64,
    /// Longest lease granted, in seconds.
    #[arg(long, default_value_t = 2_592_000)]
    pub lease_max_secs: u64,
    /// Delivery attempts per publish and subscriber, the first included.
    #[arg(long, default_value_t = 5)]
    pub retry_attempts: u32,
    /// Wait before the first delivery retry, in ms (doubles each retry).
    #[arg(long, default_value_t = 200)]
    pub retry_initial_ms: u64,
    /// Longest wait between delivery retries, in ms.
    #[arg(long, default_value_t = 10_000)]
    pub retry_max_ms: u64,
    /// Run on Azure Service Bus (broker mode): each topic a Service Bus topic, each subscriber
    /// a subscription with a peek-lock receive loop, publishes answered after the send
    /// settles (docs/hub-servicebus.md). A connection string; never logged.
    #[arg(
        long,
        env = "HUBLOAD_HUB_SERVICEBUS",
        hide_env_values = true,
        value_name = "CONNECTION_STRING"
    )]
    pub servicebus: Option<String>,
    /// The administration API of --servicebus (entity create/delete, ATOM over HTTP):
    /// `http://HOST:PORT` of an emulator's --admin-listen. Default: Azure's,
    /// `https://<namespace>`; none for an emulator (entities are then left at the broker).
    #[arg(
        long,
        env = "HUBLOAD_HUB_SERVICEBUS_ADMIN",
        value_name = "URL",
        requires = "servicebus"
    )]
    pub servicebus_admin: Option<String>,
    /// Trust this CA (PEM) on --servicebus's TLS (amqps and AMQP over WebSockets), besides
    /// the web PKI roots: a namespace behind a private CA, or an emulator's WebSocket port
    /// (repeatable).
    #[arg(long, value_name = "FILE", requires = "servicebus")]
    pub servicebus_ca_cert: Vec<PathBuf>,
    /// HTTP proxy of --servicebus connections, http://HOST:PORT, or http://USER:PASSWORD@HOST:PORT; overrides
    /// https_proxy, HTTPS_PROXY, all_proxy and ALL_PROXY, which AMQP over WebSockets follows
    /// (docs/servicebus-websockets.md, "Proxies"); "" for none.
    #[arg(long, value_name = "URL", requires = "servicebus")]
    pub proxy: Option<String>,
    /// Hosts reached directly despite a proxy, as curl's NO_PROXY; overrides no_proxy and
    /// NO_PROXY.
    #[arg(long, value_name = "LIST", requires = "servicebus")]
    pub no_proxy: Option<String>,
    /// Serve TLS with this PEM certificate chain (leaf first), offering ALPN h2 and
    /// http/1.1; needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Admit each tenant's publishes at most at RATE (`N/s`, `N/m` or `N/h`; the tenant is
    /// the topic's first dot-separated part); over it, 429 with `Retry-After`. Default: no limit.
    #[arg(long, value_name = "RATE", value_parser = parse_tenant_rate)]
    pub tenant_rate_limit: Option<TenantRate>,
    /// Publishes a tenant may send at once under --tenant-rate-limit [default: one second's
    /// worth of the rate, at least 1].
    #[arg(long, value_name = "N", requires = "tenant_rate_limit")]
    pub tenant_burst: Option<u32>,
    /// Most deliveries in flight over the whole hub, fed from one hub-wide queue
    /// (--delivery-queue orders it). Default: no hub-wide limit (each subscription's workers
    /// take from its own queue). Not with --servicebus.
    #[arg(long, value_name = "N")]
    pub delivery_workers: Option<usize>,
    /// The order of the hub-wide queue under --delivery-workers: fifo (arrival order) or fair
    /// (round robin across tenants, the topic's first dot-separated part).
    #[arg(
        long,
        value_name = "ORDER",
        default_value = "fifo",
        requires = "delivery_workers"
    )]
    pub delivery_queue: crate::QueueOrder,
    /// Deliveries the hub-wide queue holds under --delivery-workers; beyond, dropped and
    /// counted (`dropped_hub_queue_full`).
    #[arg(long, value_name = "N", default_value_t = crate::delivery_limit::QUEUE_SIZE, requires = "delivery_workers")]
    pub delivery_queue_size: usize,
    #[command(flatten)]
    pub faults: FaultFlags,
}

impl fmt::Debug for HubArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HubArgs")
            .field("listen", &self.listen)
            .field("config", &self.config)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("public_url", &self.public_url)
            .field(
                "servicebus",
                &self.servicebus.as_ref().map(|_| "<redacted>"),
            )
            .field("tenant_rate_limit", &self.tenant_rate_limit)
            .field("faults", &self.faults)
            .finish_non_exhaustive()
    }
}

/// Fault flags; each overrides the same key of `--config`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct FaultFlags {
    /// Answer 503 to requests beyond this many in flight.
    #[arg(long)]
    pub max_inflight: Option<u64>,
    /// Fraction (0..1) of requests answered 502.
    #[arg(long)]
    pub fail_502_ratio: Option<f64>,
    /// Answer 502 to every Nth request.
    #[arg(long)]
    pub fail_502_every: Option<u64>,
    /// Fraction (0..1) of requests answered 503.
    #[arg(long)]
    pub fail_503_ratio: Option<f64>,
    /// Answer 503 to every Nth request.
    #[arg(long)]
    pub fail_503_every: Option<u64>,
    /// Fraction (0..1) of requests whose connection is reset.
    #[arg(long)]
    pub reset_ratio: Option<f64>,
    /// Reset the connection of every Nth request.
    #[arg(long)]
    pub reset_every: Option<u64>,
    /// Extra latency before answering, in ms.
    #[arg(long)]
    pub latency_ms: Option<u64>,
    /// Extra random latency, uniform in 0..N ms.
    #[arg(long)]
    pub jitter_ms: Option<u64>,
    /// Latency inside publish (the broker round trip), in ms.
    #[arg(long)]
    pub broker_latency_ms: Option<u64>,
    /// Start a stall every N ms (with --stall-for-ms).
    #[arg(long)]
    pub stall_every_ms: Option<u64>,
    /// Length of each periodic stall, in ms.
    #[arg(long)]
    pub stall_for_ms: Option<u64>,
    /// An explicit stall window START-END in ms after hub start (repeatable).
    #[arg(long, value_parser = parse_window)]
    pub stall_window: Vec<[u64; 2]>,
    /// Seed for the fault ratios and jitter.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Fault only requests whose hub.topic begins with PREFIX, e.g. `tenant0007.` for one
    /// tenant's topics (repeatable; default: every request).
    #[arg(long, value_name = "PREFIX")]
    pub fault_topic_prefix: Vec<String>,
}

/// `123`, `64K`, `16M`, `1G` (powers of 1024) as bytes.
fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, shift) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 10),
        Some((i, 'm' | 'M')) => (&t[..i], 20),
        Some((i, 'g' | 'G')) => (&t[..i], 30),
        _ => (t, 0),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .ok_or_else(|| format!("{s:?}: expected a number of bytes, e.g. 1048576, 64K, 16M or 1G"))
}

fn parse_tenant_rate(s: &str) -> Result<TenantRate, String> {
    s.parse()
}

fn parse_window(s: &str) -> Result<[u64; 2], String> {
    let (a, b) = s
        .split_once('-')
        .ok_or_else(|| format!("stall window {s:?}: expected START-END in ms"))?;
    let n = |x: &str| {
        x.trim()
            .parse::<u64>()
            .map_err(|_| format!("stall window {s:?}: {x:?} is not a number of ms"))
    };
    Ok([n(a)?, n(b)?])
}

impl FaultFlags {
    /// `base` with every flag that was given applied over it.
    pub fn apply(&self, mut base: FaultConfig) -> FaultConfig {
        macro_rules! over {
            ($($field:ident),*) => { $( if let Some(v) = self.$field { base.$field = v; } )* };
        }
        over!(
            fail_502_ratio,
            fail_503_ratio,
            reset_ratio,
            latency_ms,
            jitter_ms,
            broker_latency_ms,
            stall_for_ms,
            seed
        );
        macro_rules! over_opt {
            ($($field:ident),*) => { $( if self.$field.is_some() { base.$field = self.$field; } )* };
        }
        over_opt!(
            max_inflight,
            fail_502_every,
            fail_503_every,
            reset_every,
            stall_every_ms
        );
        if !self.stall_window.is_empty() {
            base.stall_windows = self.stall_window.clone();
        }
        if !self.fault_topic_prefix.is_empty() {
            base.topic_prefixes = self.fault_topic_prefix.clone();
        }
        base
    }
}

impl HubArgs {
    /// The validated hub settings: `--config` file, then flags.
    pub fn to_config(&self) -> anyhow::Result<HubConfig> {
        let file = match &self.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("--config {}", path.display()))?;
                toml::from_str(&text).with_context(|| format!("--config {}", path.display()))?
            }
            None => FaultConfig::default(),
        };
        let faults = self.faults.apply(file);
        faults.validate()?;
        if self.lease_default_secs == 0 || self.lease_max_secs == 0 {
            anyhow::bail!("--lease-default-secs and --lease-max-secs must be at least 1");
        }
        for (flag, v) in [
            ("--queue-size", self.queue_size as u64),
            ("--delivery-concurrency", self.delivery_concurrency as u64),
            ("--delivery-pipeline", self.delivery_pipeline as u64),
            ("--delivery-timeout-ms", self.delivery_timeout_ms),
            (
                "--delivery-workers",
                self.delivery_workers.unwrap_or(1) as u64,
            ),
            ("--delivery-queue-size", self.delivery_queue_size as u64),
        ] {
            if v == 0 {
                anyhow::bail!("{flag} must be at least 1");
            }
        }
        if self.delivery_workers.is_some() && self.servicebus.is_some() {
            anyhow::bail!(
                "--delivery-workers: the hub-wide delivery queue serves the in-memory store only, not --servicebus"
            );
        }
        if self.tenant_burst == Some(0) {
            anyhow::bail!("--tenant-burst must be at least 1");
        }
        let tenant_limit = self.tenant_rate_limit.map(|rate| {
            let limit = TenantLimit::new(rate);
            TenantLimit {
                burst: self.tenant_burst.unwrap_or(limit.burst),
                ..limit
            }
        });
        Ok(HubConfig {
            max_body_bytes: self.max_body_bytes,
            bearer_token: self.token.clone().filter(|t| !t.is_empty()),
            public_url: self.public_url.clone(),
            queue_size: self.queue_size,
            max_queue_bytes: self.max_queue_bytes,
            max_memory_bytes: self.max_memory,
            delivery_concurrency: self.delivery_concurrency,
            delivery_pipeline: self.delivery_pipeline,
            delivery_timeout: Duration::from_millis(self.delivery_timeout_ms),
            lease_default: Duration::from_secs(self.lease_default_secs),
            lease_max: Duration::from_secs(self.lease_max_secs),
            retry: RetryPolicy {
                max_attempts: self.retry_attempts.max(1),
                initial_backoff: Duration::from_millis(self.retry_initial_ms),
                max_backoff: Duration::from_millis(self.retry_max_ms),
            },
            faults,
            tenant_limit,
            delivery_limit: self.delivery_workers.map(|workers| crate::DeliveryLimit {
                workers,
                order: self.delivery_queue,
                queue_size: self.delivery_queue_size,
            }),
            ..HubConfig::default()
        })
    }
}

/// The `--servicebus` connection string `s` parsed, trusting `--servicebus-ca-cert`, through
/// the proxy `--proxy`, `--no-proxy` and the variables (read through `env`) name for it.
/// Errors are one line naming the flag or variable, never a value.
pub fn servicebus_connection(
    args: &HubArgs,
    s: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> anyhow::Result<hubload_servicebus::ConnectionString> {
    let cs = s
        .parse::<hubload_servicebus::ConnectionString>()
        .map_err(|e| anyhow::anyhow!("--servicebus: {e}"))?;
    let mut pems = Vec::with_capacity(args.servicebus_ca_cert.len());
    for path in &args.servicebus_ca_cert {
        let pem = std::fs::read(path).map_err(|e| {
            anyhow::anyhow!(
                "--servicebus-ca-cert {}: cannot be read ({})",
                path.display(),
                e.kind()
            )
        })?;
        pems.push(pem);
    }
    let cs = cs.with_ca_pems(pems);
    // Checked now, so a file without a certificate is one line at start.
    hubload_servicebus::tls_connector(&cs)
        .map_err(|e| anyhow::anyhow!("--servicebus-ca-cert: {e}"))?;
    let proxy = hubload_http1::proxy::ProxyConfig::resolve(
        args.proxy.as_deref(),
        args.no_proxy.as_deref(),
        env,
    )
    .map_err(|e| anyhow::anyhow!("invalid {e}"))?;
    Ok(cs.with_proxy(&proxy))
}

/// Run the hub until Ctrl-C or SIGTERM.
pub async fn run(args: HubArgs) -> anyhow::Result<()> {
    // The embedding program may already have set a subscriber; then keep it.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .try_init();
    let cfg = args.to_config()?;
    // Parsed before binding, so a bad string is one line naming the flag (never its value).
    let servicebus = match &args.servicebus {
        Some(s) => Some(servicebus_connection(&args, s, &|k| std::env::var(k).ok())?),
        None => None,
    };
    if let Some(a) = &args.servicebus_admin {
        let ok = url::Url::parse(a)
            .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
        if !ok {
            anyhow::bail!("--servicebus-admin must be an http:// or https:// URL with a host");
        }
    }
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(crate::tls::acceptor(cert, key)?),
        _ => None,
    };
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("--listen {}", args.listen))?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, faults = ?cfg.faults, "hubload-hub listening");
    let state = HubState::new(cfg);
    if let Some(cs) = servicebus {
        let endpoint = cs.redacted();
        let broker = crate::Broker::connect(cs, args.servicebus_admin.as_deref())
            .await
            .map_err(|e| anyhow::anyhow!("--servicebus: {e}"))?;
        state.set_broker(broker);
        tracing::info!(%endpoint, "broker mode: Service Bus");
    }
    match tls {
        Some(tls) => crate::serve_tls(listener, state, tls, shutdown_signal()).await?,
        None => crate::serve(listener, state, shutdown_signal()).await?,
    }
    tracing::info!("hubload-hub stopped");
    Ok(())
}

/// Completes on Ctrl-C or (on Unix) SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down");
}

#[cfg(test)]
mod tests;
