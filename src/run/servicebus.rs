//! The Service Bus path of a run: connection string (or the embedded emulator), one shared
//! sender, topic links attached up front, then the same levels and reports as the hub path.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use hubload_servicebus::emulator::{Emulator, EmulatorConfig, EmulatorHandle};
use hubload_servicebus::{ConnectionString, SbSender, SenderConfig};

use super::{owned_topics, run_levels, RunRecord, Shared};
use crate::config::SbTopics;
use crate::engine::JtlSink;
use crate::report::{EmulatorTotals, ServiceBusInfo};
use crate::targets::servicebus::ServiceBusTarget;
use crate::targets::{PhaseResult, Target};

/// Lifetime of each SAS token; the sender puts it again at half this (PROTOCOL.md §6: 30–60 min).
const TOKEN_TTL: Duration = Duration::from_secs(60 * 60);

/// Opening a connection, a put-token or an attach is set-up, not load: at least this long,
/// whatever `--connect-timeout` says (a TLS + AMQP + CBS handshake to Azure takes several RTTs).
const MIN_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The embedded emulator on 127.0.0.1 with an ephemeral port and its development key.
async fn start_emulator() -> anyhow::Result<EmulatorHandle> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("cannot start the embedded Service Bus emulator: binding 127.0.0.1")?;
    let emu = Emulator::start(listener, EmulatorConfig::default())
        .await
        .context("cannot start the embedded Service Bus emulator")?;
    tracing::info!(addr = %emu.addr(), "embedded Service Bus emulator started");
    Ok(emu)
}

/// Refuse a run whose topic links could not be attached at all.
fn check_prepare(p: &PhaseResult, endpoint: &str) -> anyhow::Result<()> {
    if p.topics > 0 && p.ok() == 0 {
        let why = p.first_error.as_deref().unwrap_or("no answer");
        anyhow::bail!("cannot attach Service Bus topics at {endpoint}: {why}");
    }
    if p.failed() > 0 {
        tracing::warn!(
            failed = p.failed(),
            first = p.first_error.as_deref().unwrap_or(""),
            "some Service Bus topics could not be attached; sends to them are counted as they end"
        );
    }
    Ok(())
}

fn mapping_label(m: &SbTopics) -> String {
    match m {
        SbTopics::PerTopic => "per-topic".into(),
        SbTopics::Single(name) => format!("single:{name}"),
    }
}

/// Load Service Bus with the run's workload and levels, recording into `rec`.
pub(super) async fn run_servicebus(sh: &Shared<'_>, rec: &mut RunRecord) -> anyhow::Result<()> {
    let cfg = sh.cfg;
    let emulator = match &cfg.target.sb_connection_string {
        Some(_) => None,
        None => Some(start_emulator().await?),
    };
    let cs = match (&cfg.target.sb_connection_string, &emulator) {
        // The parser's errors name the field and never quote a value.
        (Some(s), _) => ConnectionString::from_str(s.expose())
            .map_err(|e| anyhow::anyhow!("invalid --sb-connection-string: {e}"))?,
        (None, Some(emu)) => emu.connection_string_parsed(),
        (None, None) => unreachable!("emulator started above"),
    };
    let endpoint = cs.amqp_base();
    let url = url::Url::parse(&endpoint).with_context(|| {
        format!(
            "invalid --sb-connection-string: Endpoint host `{}`",
            cs.host
        )
    })?;
    rec.set_target(crate::kind::TargetKind::Servicebus, &url);
    // JTL rows name the endpoint.
    let sh = &Shared {
        jtl: sh.jtl.as_ref().map(|j| JtlSink {
            sender: j.sender.clone(),
            url: endpoint.as_str().into(),
        }),
        ..sh.clone()
    };
    let sender = SbSender::connect(SenderConfig {
        connection: cs,
        connections: cfg.target.sb_connections as usize,
        connect_timeout: cfg.client.connect_timeout.max(MIN_CONNECT_TIMEOUT),
        send_timeout: cfg.client.timeout,
        token_ttl: TOKEN_TTL,
    })
    .await?;
    let target = ServiceBusTarget::new(
        Arc::new(sender),
        sh.workload.clone(),
        cfg.target.sb_topics.clone(),
        cfg.register_concurrency as usize,
    );
    let prepared = target.prepare(&owned_topics(&sh.workload, sh.shard)).await;
    check_prepare(&prepared, &endpoint)?;
    rec.set_registration(&prepared)?;
    let levels = run_levels(sh, rec, |_spec| target.clone()).await;
    let info = ServiceBusInfo {
        endpoint,
        topics: mapping_label(&cfg.target.sb_topics),
        connections: cfg.target.sb_connections,
        reconnects: target.sender().reconnects(),
        token_puts: target.sender().token_puts(),
        conditions: target.conditions(),
        emulator: emulator.as_ref().map(|e| {
            let c = e.counts();
            EmulatorTotals {
                accepted: c.accepted,
                throttled: c.throttled,
                unauthorized: c.unauthorized,
                accepted_per_topic: c.accepted_per_topic,
            }
        }),
    };
    rec.set_servicebus(info)?;
    levels?;
    drop(target);
    if let Some(emu) = emulator {
        emu.shutdown().await;
    }
    Ok(())
}
