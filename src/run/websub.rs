//! The WebSub path: a hub URL (or the embedded hub), topics registered up front, one HTTP
//! target per level, topics deregistered at the end when asked.

use std::time::Duration;

use super::embedded::EmbeddedHub;
use super::levels::pool_size;
use super::path::TargetPath;
use crate::config::{RunConfig, TargetKind};
use crate::engine::LevelSpec;
use crate::targets::websub::{HubEndpoint, WebSubClient, WebSubTarget};
use crate::targets::{PhaseResult, Target};
use crate::workload::{Topic, Workload};

/// A hub, resolved, with the registration client ready.
pub(crate) struct WebSubPath<'a> {
    cfg: &'a RunConfig,
    workload: &'a Workload,
    url: url::Url,
    endpoint: HubEndpoint,
    phase: WebSubTarget,
    _embedded: Option<EmbeddedHub>,
}

/// The publish client for `max_conns` connections.
fn client(cfg: &RunConfig, max_conns: usize) -> WebSubClient {
    WebSubClient {
        timeout: cfg.client.timeout,
        connect_timeout: cfg.client.connect_timeout,
        pool_timeout: cfg.client.pool_timeout,
        max_conns,
        token: cfg.target.hub_token.clone(),
        phase_concurrency: cfg.register_concurrency as usize,
    }
}

impl<'a> WebSubPath<'a> {
    /// `--hub-url`, or the embedded hub when none is given.
    pub(crate) async fn open(cfg: &'a RunConfig, workload: &'a Workload) -> anyhow::Result<Self> {
        let embedded = match &cfg.target.hub_url {
            Some(_) => None,
            None => Some(EmbeddedHub::start(hubload_hub::HubConfig::default())?),
        };
        let url = match (&cfg.target.hub_url, &embedded) {
            (Some(u), _) => u.clone(),
            (None, Some(h)) => h.url.clone(),
            (None, None) => unreachable!("embedded hub started above"),
        };
        let endpoint = HubEndpoint::resolve(&url).await?;
        // Registration gets its own pool and at least 5 s per request: it is set-up, not load.
        let phase_client = WebSubClient {
            timeout: cfg.client.timeout.max(Duration::from_secs(5)),
            connect_timeout: cfg.client.connect_timeout.max(Duration::from_secs(5)),
            pool_timeout: Duration::from_secs(60),
            ..client(cfg, cfg.register_concurrency as usize)
        };
        let phase = WebSubTarget::new(endpoint.clone(), workload.topics(), &phase_client);
        Ok(WebSubPath {
            cfg,
            workload,
            url,
            endpoint,
            phase,
            _embedded: embedded,
        })
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
        format!("{}?hub.mode=publish", self.url)
    }

    async fn prepare(&self, mine: &[Topic]) -> PhaseResult {
        self.phase.prepare(mine).await
    }

    fn target(&self, spec: &LevelSpec) -> WebSubTarget {
        let c = client(self.cfg, pool_size(self.cfg, spec));
        WebSubTarget::new(self.endpoint.clone(), self.workload.topics(), &c)
    }

    async fn teardown(&self, mine: &[Topic]) -> Option<PhaseResult> {
        match self.cfg.deregister {
            true => Some(self.phase.teardown(mine).await),
            false => None,
        }
    }

    async fn close(self) {}
}
