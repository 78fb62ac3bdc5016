//! The Service Bus path of a run: connection string (or the embedded emulator), one shared
//! sender, the pre-flight `hubload check` would fail on (refused with exit 2 before any
//! load), topic links attached up front, broker subscribers, and the `servicebus` section of
//! the record; and the kind's banner line, pre-flight and side-by-side role.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use futures_util::future::BoxFuture;
use hubload_servicebus::{ConnectionString, SbSender, SenderConfig};
use tokio_util::sync::CancellationToken;

use super::embedded_emulator::EmbeddedEmulator;
use super::one_path::run_path;
use super::own_thread::{self, OwnThread};
use super::path::{PathKind, TargetPath};
use super::record::RunRecord;
use super::run_inputs::Shared;
use super::subscribers::DeliveryRun;
use super::two_paths::Role;
use crate::check::Steps;
use crate::config::{DeliveryConfig, RunConfig, SbTopics, TargetKind};
use crate::engine::LevelSpec;
use crate::report::document::Report;
use crate::report::model::{EmulatorTotals, ServiceBusInfo};
use crate::shard_contract::ShardSpec;
use crate::targets::servicebus::ServiceBusTarget;
use crate::targets::{PhaseResult, Target};
use crate::workload::{Topic, Workload};

/// Lifetime of each SAS token (30–60 min is usual); the sender puts it again at half this.
const TOKEN_TTL: Duration = Duration::from_secs(60 * 60);

/// Opening a connection, a put-token or an attach is set-up, not load: at least this long,
/// whatever `--connect-timeout` says (a TLS + AMQP + CBS handshake to Azure takes several RTTs).
const MIN_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

fn mapping_label(m: &SbTopics) -> String {
    match m {
        SbTopics::PerTopic => "per-topic".into(),
        SbTopics::Single(name) => format!("single:{name}"),
    }
}

/// The Service Bus kind: AMQP 1.0 to a namespace (or the embedded emulator); the broker of a
/// side-by-side run.
pub(crate) struct ServiceBus;

impl PathKind for ServiceBus {
    fn banner_line(&self, cfg: &RunConfig) -> String {
        let at = if cfg.target.sb_connection_string.is_some() {
            "the namespace of the connection string"
        } else {
            "the embedded emulator on 127.0.0.1"
        };
        let topics = match &cfg.target.sb_topics {
            SbTopics::PerTopic => "one Service Bus topic per topic".to_string(),
            SbTopics::Single(t) => format!("every event to topic {t}"),
        };
        // The transport and the proxy as the connection will use them (no secret shown).
        let via = match cfg.sb_connection() {
            Ok(Some(cs)) => {
                let ws = if cs.websockets() {
                    " over WebSockets"
                } else {
                    ""
                };
                match &cs.proxy {
                    Some(p) => format!("{ws}, through HTTP proxy {}", p.shown()),
                    None => ws.to_string(),
                }
            }
            _ => String::new(),
        };
        format!(
            "servicebus (AMQP 1.0{via}) at {at}, {} connections, {topics}",
            cfg.target.sb_connections
        )
    }

    fn check<'a>(
        &'a self,
        cfg: &'a RunConfig,
        bound: Duration,
        steps: &'a mut Steps,
    ) -> BoxFuture<'a, ()> {
        Box::pin(crate::check::servicebus::check(cfg, bound, steps))
    }

    fn role(&self) -> Option<Role> {
        Some(Role::Broker)
    }

    fn run<'a>(
        &'a self,
        sh: &'a Shared<'a>,
        shared: Option<&'a EmbeddedEmulator>,
        dir: &'a Path,
        shard: Option<&'a ShardSpec>,
    ) -> BoxFuture<'a, anyhow::Result<Report>> {
        let shared = shared.map(|e| e.connection_string_parsed());
        Box::pin(async move {
            let path = ServiceBusPath::open(sh.cfg, &sh.workload, shared).await?;
            run_path(sh, path, dir, shard).await
        })
    }
}

/// A Service Bus namespace (or the embedded emulator), connected, with one shared sender.
pub(crate) struct ServiceBusPath<'a> {
    cfg: &'a RunConfig,
    workload: Arc<Workload>,
    url: url::Url,
    endpoint: String,
    target: ServiceBusTarget,
    emulator: Option<EmbeddedEmulator>,
    /// The connection, for broker subscribers (`--subscribers`).
    connection: ConnectionString,
    /// The sender's own runtime thread beside the embedded hub (dropped after the target).
    _sender_thread: Option<OwnThread>,
}

impl<'a> ServiceBusPath<'a> {
    /// `--sb-connection-string`, or `shared` (the emulator the embedded hub runs on, for
    /// `--hub-servicebus`: its counts are both paths', so the report leaves them out), or the
    /// embedded emulator when neither is given.
    pub(crate) async fn open(
        cfg: &'a RunConfig,
        workload: &Arc<Workload>,
        shared: Option<ConnectionString>,
    ) -> anyhow::Result<Self> {
        // Beside the embedded hub on the same emulator, the sender gets a thread of its own as
        // the hub's has, so the two paths' sends are on an equal footing.
        let own_thread = shared.is_some();
        // Which connection, decided once: the flag's, the shared emulator's, or a new one's.
        let (cs, emulator) = match (cfg.sb_connection()?, shared) {
            // `--sb-transport`, `--ca-cert` and the proxy applied (config/sb_connection.rs).
            (Some(cs), _) => (cs, None),
            // `--ca-cert` is trusted on the Service Bus TLS too, and so by the broker
            // subscribers, which take this connection.
            (None, Some(cs)) => (cfg.sb_connection_for(cs), None),
            (None, None) => {
                let emu = EmbeddedEmulator::start().await?;
                (
                    cfg.sb_connection_for(emu.connection_string_parsed()),
                    Some(emu),
                )
            }
        };
        // Refused before any connection, as `hubload check` names it (check/token.rs).
        if let Some(step) = crate::check::token::step_now(cfg, &cs) {
            refuse(&step)?;
        }
        let endpoint = cs.amqp_base();
        let url = url::Url::parse(&endpoint).with_context(|| {
            format!(
                "invalid --sb-connection-string: Endpoint host `{}`",
                cs.host
            )
        })?;
        let sender_cfg = SenderConfig {
            connection: cs.clone(),
            connections: cfg.target.sb_connections as usize,
            connect_timeout: cfg.client.connect_timeout.max(MIN_CONNECT_TIMEOUT),
            send_timeout: cfg.client.timeout,
            token_ttl: TOKEN_TTL,
        };
        // The connections' engines run where they are opened.
        let (sender, sender_thread) = if own_thread {
            let (s, t) = own_thread::start("sb-sender", || SbSender::connect(sender_cfg)).await?;
            (s?, Some(t))
        } else {
            (SbSender::connect(sender_cfg).await?, None)
        };
        preflight(cfg, &sender, &cs, workload).await?;
        let target = ServiceBusTarget::new(
            Arc::new(sender),
            workload.clone(),
            cfg.target.sb_topics.clone(),
            cfg.register_concurrency as usize,
        );
        Ok(ServiceBusPath {
            cfg,
            workload: workload.clone(),
            url,
            endpoint,
            target,
            emulator,
            connection: cs,
            _sender_thread: sender_thread,
        })
    }
}

/// A failed pre-flight step as the run's one-line error (exit 2).
fn refuse(step: &crate::check::Step) -> anyhow::Result<()> {
    if step.status != crate::check::Status::Fail {
        return Ok(());
    }
    let fix = step.fix.as_deref().unwrap_or("see the cause");
    anyhow::bail!("Service Bus pre-flight: {} (fix: {fix})", step.detail)
}

/// What `hubload check` would name before any load, at the cost of one attach and one
/// receiver: bodies over the broker's message size (only with `--payload-bytes`: unpadded
/// bodies are far below every tier's limit), and, with broker subscribers on a namespace of
/// `--sb-connection-string`, the first subscription missing or the policy without Listen.
async fn preflight(
    cfg: &RunConfig,
    sender: &SbSender,
    cs: &ConnectionString,
    workload: &Workload,
) -> anyhow::Result<()> {
    let bound = cfg.client.connect_timeout.max(MIN_CONNECT_TIMEOUT);
    if cfg.workload.payload_bytes.is_some() {
        if let Some(first) = workload.topics().first() {
            let name = crate::targets::servicebus::sb_topic(&cfg.target.sb_topics, first);
            // A topic that cannot be attached is the prepare phase's to count.
            if sender.prepare(name).await == hubload_servicebus::SendOutcome::Accepted {
                let limit = sender.max_message_size(name).await;
                refuse(&crate::check::size::step(cfg, workload, limit))?;
            }
        }
    }
    // An emulator this run started grants every right and makes entities on first use.
    if cfg.target.sb_connection_string.is_none() {
        return Ok(());
    }
    let pairs = crate::check::subscriptions::needed(cfg, workload);
    if let Some((topic, sub)) = pairs.first() {
        if let Err((detail, fix)) = crate::check::subscriptions::probe(cs, topic, sub, bound).await
        {
            anyhow::bail!("Service Bus pre-flight: {detail} (fix: {fix})");
        }
    }
    Ok(())
}

impl TargetPath for ServiceBusPath<'_> {
    type Target = ServiceBusTarget;
    const KIND: TargetKind = TargetKind::Servicebus;
    const PREPARE: &'static str = "attach Service Bus topics at";

    fn url(&self) -> &url::Url {
        &self.url
    }

    fn endpoint(&self) -> String {
        self.endpoint.clone()
    }

    /// Peek-lock receivers on the path's connection.
    async fn fleet(
        &self,
        d: &DeliveryConfig,
        mine: &[Topic],
    ) -> anyhow::Result<Option<DeliveryRun>> {
        let cs = self.connection.clone();
        let run = DeliveryRun::start_broker(self.cfg, d, &self.workload, mine, cs)?;
        Ok(Some(run))
    }

    async fn prepare(&self, mine: &[Topic], cancel: &CancellationToken) -> Option<PhaseResult> {
        Some(self.target.prepare(mine, cancel).await)
    }

    /// A topic the run sends to that does not exist stops it, as `hubload check` names it:
    /// the namespace is misconfigured, and every send to it would be `not_found`.
    fn refuse_prepared(&self) -> anyhow::Result<()> {
        let missing = self.target.missing();
        match missing.first() {
            Some(first) => refuse(&crate::check::servicebus::missing_topic(
                first,
                missing.len() - 1,
            )),
            None => Ok(()),
        }
    }

    fn target(&self, _spec: &LevelSpec) -> ServiceBusTarget {
        self.target.clone()
    }

    /// What the sender (and the embedded emulator) saw over the run.
    fn add_section(&self, rec: &mut RunRecord) -> anyhow::Result<()> {
        let cfg = self.cfg;
        rec.set_servicebus(ServiceBusInfo {
            endpoint: self.endpoint.clone(),
            topics: mapping_label(&cfg.target.sb_topics),
            connections: cfg.target.sb_connections,
            reconnects: self.target.sender().reconnects(),
            token_puts: self.target.sender().token_puts(),
            conditions: self.target.conditions(),
            emulator: self.emulator.as_ref().map(|e| {
                let c = e.counts();
                EmulatorTotals {
                    accepted: c.accepted,
                    throttled: c.throttled,
                    unauthorized: c.unauthorized,
                    accepted_per_topic: c.accepted_per_topic,
                }
            }),
        })
    }

    async fn close(self) {
        drop(self.target);
        if let Some(emu) = self.emulator {
            emu.shutdown().await;
        }
    }
}
