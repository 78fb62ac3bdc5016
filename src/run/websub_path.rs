//! The WebSub path: a hub URL (or the embedded hub), topics registered up front, callback
//! subscribers, one HTTP target per level, topics deregistered at the end when asked; and
//! the kind's banner line, pre-flight and side-by-side role.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::embedded::{EmbeddedHub, HubBroker};
use super::embedded_emulator::EmbeddedEmulator;
use super::levels::pool_size;
use super::one_path::run_path;
use super::path::{PathKind, TargetPath};
use super::record::RunRecord;
use super::run_inputs::Shared;
use super::subscribers::DeliveryRun;
use super::two_paths::Role;
use crate::check::Steps;
use crate::config::{DeliveryConfig, Dialect, HttpVersion, RunConfig, TargetKind};
use crate::engine::LevelSpec;
use crate::report::document::Report;
use crate::shard_contract::ShardSpec;
use crate::targets::h2::{negotiate, Alpn};
use crate::targets::websub::{HubEndpoint, HubWire, WebSubClient, WebSubTarget};
use crate::targets::{PhaseResult, Target, TopicRegistry};
use crate::topic_server::TopicServer;
use crate::workload::{Topic, Workload};

/// The WebSub kind: a hub over HTTP/1.1 or HTTP/2; the hub of a side-by-side run.
pub(crate) struct WebSub;

impl PathKind for WebSub {
    fn banner_line(&self, cfg: &RunConfig) -> String {
        let hub = match &cfg.target.hub_url {
            Some(u) => {
                let mut u = u.clone();
                if u.password().is_some() {
                    let _ = u.set_password(Some("redacted"));
                }
                u.to_string()
            }
            None => "the embedded hub on 127.0.0.1".into(),
        };
        // Header names only: every value may be a credential.
        let names: Vec<&str> = cfg
            .target
            .hub_headers
            .0
            .iter()
            .map(|h| h.name.as_str())
            .collect();
        let headers = match names.is_empty() {
            true => String::new(),
            false => format!(", headers {} (values hidden)", names.join(", ")),
        };
        let dialect = match (&cfg.websub.dialect, &cfg.websub.topic_url_prefix) {
            (Dialect::Websub, Some(p)) => format!("WebSub thin-ping dialect, topics at {p}<topic>"),
            (Dialect::Websub, None) => "WebSub thin-ping dialect".into(),
            (Dialect::Ballerina, _) => "Ballerina/WSO2 hub dialect".into(),
        };
        let register = match cfg.websub.register {
            true => "",
            false => ", no registration",
        };
        format!("websub ({dialect}{register}) at {hub}{headers}")
    }

    fn check<'a>(
        &'a self,
        cfg: &'a RunConfig,
        bound: Duration,
        steps: &'a mut Steps,
    ) -> BoxFuture<'a, ()> {
        Box::pin(crate::check::websub::check(cfg, bound, steps))
    }

    fn role(&self) -> Option<Role> {
        Some(Role::Hub)
    }

    fn run<'a>(
        &'a self,
        sh: &'a Shared<'a>,
        shared: Option<&'a EmbeddedEmulator>,
        dir: &'a Path,
        shard: Option<&'a ShardSpec>,
    ) -> BoxFuture<'a, anyhow::Result<Report>> {
        // `--hub-servicebus`: the embedded hub in broker mode on the shared emulator.
        let broker = shared.map(|e| HubBroker {
            cs: e.connection_string_parsed(),
            admin: e.admin_url(),
        });
        Box::pin(async move {
            let path = WebSubPath::open(sh.cfg, &sh.workload, broker).await?;
            run_path(sh, path, dir, shard).await
        })
    }
}

/// A hub, resolved, with the registration client ready.
pub(crate) struct WebSubPath<'a> {
    cfg: &'a RunConfig,
    workload: &'a Arc<Workload>,
    url: url::Url,
    endpoint: HubEndpoint,
    /// The registration phase's client (shared with `--topic-churn`).
    phase: Arc<WebSubTarget>,
    /// Websub dialect: serves each topic URL the hub fetches after a thin ping.
    topics: Option<Arc<TopicServer>>,
    /// The HTTP version hub requests speak.
    wire: HubWire,
    _embedded: Option<EmbeddedHub>,
}

/// The publish client for `wanted` exchanges at once (connections, over HTTP/1.1); topic URLs
/// start with `prefix`. Over HTTP/2 the connections are `--pool-per-host`, else as many as
/// `wanted` streams need.
fn client(cfg: &RunConfig, wanted: usize, prefix: &str, wire: HubWire) -> WebSubClient {
    let max_conns = match (wire, cfg.client.pool_per_host) {
        (HubWire::Http2 { streams }, None) => wanted.div_ceil(streams.max(1)),
        _ => wanted,
    };
    WebSubClient {
        timeout: cfg.client.timeout,
        connect_timeout: cfg.client.connect_timeout,
        tls_timeout: cfg.tls.tls_timeout,
        pool_timeout: cfg.client.pool_timeout,
        max_conns,
        headers: cfg.target.hub_headers.clone(),
        dialect: cfg.websub.dialect,
        topic_url_prefix: prefix.to_owned(),
        phase_concurrency: cfg.register_concurrency as usize,
        wire,
    }
}

/// Whether hub requests speak HTTP/2, and with how many streams per connection: `2` over
/// http is h2c with prior knowledge; over https one TLS handshake at start asks ALPN
/// (`2` offers h2 alone, and a server choosing HTTP/1.1 is an error before any load;
/// `auto` offers h2 and http/1.1 and takes the server's choice). A probe that fails
/// (refused, a certificate refused) decides nothing: the load counts that failure.
async fn hub_wire(
    cfg: &RunConfig,
    url: &url::Url,
    endpoint: &HubEndpoint,
) -> anyhow::Result<HubWire> {
    let h2 = HubWire::Http2 {
        streams: cfg.http.h2_streams as usize,
    };
    let version = cfg.http.version;
    let Some(tls) = &endpoint.tls else {
        return Ok(if version == HttpVersion::Http2 {
            h2
        } else {
            HubWire::Http1
        });
    };
    let offer: &[&[u8]] = match version {
        HttpVersion::Http1 => return Ok(HubWire::Http1),
        HttpVersion::Http2 => &[b"h2"],
        HttpVersion::Auto => &[b"h2", b"http/1.1"],
    };
    let limit = cfg.client.connect_timeout + cfg.tls.tls_timeout;
    let chosen = negotiate(
        endpoint.addrs[0],
        endpoint.tunnel.as_ref(),
        &tls.with_alpn(offer),
        limit,
    )
    .await;
    match (chosen, version) {
        (Ok(Alpn::H2), _) => Ok(h2),
        (Ok(Alpn::Http1), HttpVersion::Http2) => anyhow::bail!(
            "--http-version 2: the hub at {} did not choose h2 by ALPN (it speaks HTTP/1.1; \
             use --http-version auto or 1.1)",
            url.host_str().unwrap_or_default()
        ),
        (Ok(Alpn::Http1), _) => Ok(HubWire::Http1),
        (Err(_), HttpVersion::Http2) => Ok(h2),
        (Err(_), _) => Ok(HubWire::Http1),
    }
}

impl<'a> WebSubPath<'a> {
    /// `--hub-url`, or the embedded hub when none is given (in broker mode on `broker`,
    /// for `--hub-servicebus`).
    pub(crate) async fn open(
        cfg: &'a RunConfig,
        workload: &'a Arc<Workload>,
        broker: Option<HubBroker>,
    ) -> anyhow::Result<Self> {
        let embedded = match &cfg.target.hub_url {
            Some(_) => None,
            None => Some(EmbeddedHub::start(
                hubload_hub::HubConfig::default(),
                broker,
            )?),
        };
        let url = match (&cfg.target.hub_url, &embedded) {
            (Some(u), _) => u.clone(),
            (None, Some(h)) => h.url.clone(),
            (None, None) => unreachable!("embedded hub started above"),
        };
        let endpoint = HubEndpoint::resolve(
            &url,
            cfg.tls.for_url(&url)?,
            cfg.target.resolve.for_url(&url),
            // The embedded hub is in this process: never through a proxy.
            embedded
                .is_none()
                .then(|| cfg.proxy.proxy_for_hub(&url))
                .flatten(),
        )
        .await?;
        announce_endpoint(cfg, &url, &endpoint);
        let wire = hub_wire(cfg, &url, &endpoint).await?;
        if !cfg.output.quiet && cfg.http.version != HttpVersion::Http1 {
            let chosen = match wire {
                HubWire::Http1 => "HTTP/1.1",
                HubWire::Http2 { .. } => "HTTP/2",
            };
            crate::console::say!(
                "  http      {chosen} (--http-version {})",
                cfg.http.version.as_str()
            );
        }
        let topics = super::serve_topics::start(cfg, workload, &url).await?;
        let prefix = topics.as_ref().map_or("", |t| t.prefix());
        // Registration gets its own pool and at least 5 s per request: it is set-up, not load.
        let phase_client = WebSubClient {
            timeout: cfg.client.timeout.max(Duration::from_secs(5)),
            connect_timeout: cfg.client.connect_timeout.max(Duration::from_secs(5)),
            tls_timeout: cfg.tls.tls_timeout.max(Duration::from_secs(5)),
            pool_timeout: Duration::from_secs(60),
            ..client(cfg, cfg.register_concurrency as usize, prefix, wire)
        };
        // The set-up phase counts on its own, so per-address attempts are the load's alone.
        // It registers, deregisters and churns topics but never publishes, so it is given no
        // topics to prepare publish heads for (27 MB held all run at 100,000 topics).
        let phase = Arc::new(WebSubTarget::new(
            endpoint.with_own_counters(),
            &[],
            &phase_client,
        ));
        Ok(WebSubPath {
            cfg,
            workload,
            url,
            endpoint,
            phase,
            topics,
            wire,
            _embedded: embedded,
        })
    }
}

impl WebSubPath<'_> {
    /// What a topic name is prefixed with in `hub.topic`: the websub dialect's topic URL
    /// prefix, so subscribers name the topic exactly as the publishes do (empty otherwise).
    fn topic_url_prefix(&self) -> &str {
        self.topics.as_ref().map_or("", |t| t.prefix())
    }
}

impl TargetPath for WebSubPath<'_> {
    type Target = WebSubTarget;
    const KIND: TargetKind = TargetKind::Websub;
    const PREPARE: &'static str = "register topics at the hub";

    fn url(&self) -> &url::Url {
        &self.url
    }

    fn endpoint(&self) -> String {
        self.url.to_string()
    }

    fn jtl_url(&self) -> String {
        // A thin ping names its mode in the body, not the URL.
        match self.cfg.websub.dialect {
            Dialect::Ballerina => format!("{}?hub.mode=publish", self.url),
            Dialect::Websub => self.url.to_string(),
        }
    }

    async fn prepare(&self, mine: &[Topic], cancel: &CancellationToken) -> Option<PhaseResult> {
        // `--register never` (or the websub dialect's `auto`): no registration phase at all.
        match self.cfg.websub.register {
            true => Some(self.phase.prepare(mine, cancel).await),
            false => None,
        }
    }

    fn topic_server(&self) -> Option<Arc<TopicServer>> {
        self.topics.clone()
    }

    /// Callback subscribers, each subscribed to `<topic_url_prefix><name>`, the `hub.topic`
    /// the publishes name.
    async fn fleet(
        &self,
        d: &DeliveryConfig,
        mine: &[Topic],
    ) -> anyhow::Result<Option<DeliveryRun>> {
        let prefix = self.topic_url_prefix();
        let run = DeliveryRun::start(self.cfg, d, self.workload, mine, (&self.url, prefix)).await?;
        Ok(Some(run))
    }

    fn add_section(&self, rec: &mut RunRecord) -> anyhow::Result<()> {
        rec.set_hub_host(hub_host(self.cfg, &self.endpoint))
    }

    fn target(&self, spec: &LevelSpec) -> WebSubTarget {
        let prefix = self.topics.as_ref().map_or("", |t| t.prefix());
        let c = client(self.cfg, pool_size(self.cfg, spec), prefix, self.wire);
        let t = WebSubTarget::new(self.endpoint.clone(), self.workload.topics(), &c)
            .with_workload(self.workload.clone());
        match &self.topics {
            Some(ts) => t.with_topic_server(ts.clone()),
            None => t,
        }
    }

    async fn teardown(&self, mine: &[Topic], cancel: &CancellationToken) -> Option<PhaseResult> {
        match self.cfg.deregister && self.cfg.websub.register {
            true => Some(self.phase.teardown(mine, cancel).await),
            false => None,
        }
    }

    /// The registration phase's client (Ballerina dialect, registration on).
    fn topic_registry(&self) -> Option<Arc<dyn TopicRegistry>> {
        let registry: Arc<dyn TopicRegistry> = self.phase.clone();
        (self.cfg.websub.register && self.cfg.websub.dialect == Dialect::Ballerina)
            .then_some(registry)
    }

    async fn close(self) {}
}

/// The load's attempts per address and TLS handshakes, for the report.
fn hub_host(cfg: &RunConfig, endpoint: &HubEndpoint) -> crate::report::model::HubHost {
    let addresses = endpoint
        .addrs
        .iter()
        .zip(endpoint.counters.attempts())
        .map(|(a, attempts)| crate::report::model::AddressAttempts {
            address: a.to_string(),
            attempts,
        })
        .collect();
    let h = endpoint.counters.handshakes();
    crate::report::model::HubHost {
        addresses,
        tls_handshakes: endpoint
            .tls
            .as_ref()
            .map(|_| crate::report::model::Handshakes {
                count: h.count,
                sum_us: h.sum_us,
            }),
        tls_insecure: endpoint.tls.is_some() && cfg.tls.insecure,
    }
}

/// Say once on stderr what an https run will not check, and which addresses carry the load
/// (not with `--quiet`).
fn announce_endpoint(cfg: &RunConfig, url: &url::Url, endpoint: &HubEndpoint) {
    if endpoint.tls.is_some() && cfg.tls.insecure {
        tracing::warn!("--insecure: the hub's TLS certificate is NOT verified");
    }
    let addrs: Vec<String> = endpoint.addrs.iter().map(ToString::to_string).collect();
    let how = match cfg.target.resolve.for_url(url) {
        Some(_) => " (pinned by --resolve)",
        None => "",
    };
    let host = url.host_str().unwrap_or_default();
    // A banner line: which addresses carry the load is part of what is about to run.
    if cfg.output.quiet {
        return;
    }
    match &endpoint.tunnel {
        None => crate::console::say!("  hub at    {host}: {}{how}", addrs.join(", ")),
        Some(t) => crate::console::say!(
            "  hub at    {host} through the proxy {} ({}: {})",
            t.proxy().shown(),
            cfg.proxy.0.proxy_from,
            addrs.join(", ")
        ),
    }
}
