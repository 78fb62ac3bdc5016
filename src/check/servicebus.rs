//! The Service Bus checks: the connection string and its own token's expiry (`token.rs`),
//! then the proxy (when one is set), DNS, TCP, the CONNECT tunnel, TLS and (with
//! `TransportType=AmqpWebSockets`) the WebSocket upgrade, then the SAS token over CBS, then
//! every topic the run would send to (it exists and the policy may send to it), the largest
//! body against the broker's message size, and the subscriptions broker subscribers would
//! receive from (`subscriptions.rs`). AMQP does not reveal the broker's clock, so a token's
//! expiry is checked against this machine's: a clock far off shows as a refused token.

use std::collections::BTreeSet;
use std::time::Duration;

use hubload_http1::proxy::Route;
use hubload_servicebus::transport::{tunnel, ws_client};
use hubload_servicebus::{ConnectionString, SbError, SbSender, SendOutcome, SenderConfig};

use super::step::{Step, Steps};
use super::{net, proxy};
use crate::config::RunConfig;
use crate::targets::servicebus::sb_topic;
use crate::workload::Workload;

/// At most this many failing topics are listed one per line; the rest are counted.
const LISTED: usize = 5;

/// This kind's steps, appended to `steps`; each network step bounded by `bound`.
pub(crate) async fn check(cfg: &RunConfig, bound: Duration, steps: &mut Steps) {
    let cs = match cfg.sb_connection() {
        Ok(Some(cs)) => cs,
        Ok(None) => {
            steps.push(Step::ok(
                "servicebus",
                "no --sb-connection-string: the run starts its own emulator",
            ));
            return;
        }
        Err(e) => {
            steps.push(Step::fail(
                "servicebus",
                e.to_string(),
                "copy the string from the portal's Shared access policies",
            ));
            return;
        }
    };
    if let Some(step) = super::token::step_now(cfg, &cs) {
        let failed = step.status == super::Status::Fail;
        steps.push(step);
        if failed {
            steps.skip("cbs");
            steps.skip("topics");
            return;
        }
    }
    let port = cs.amqp_port();
    if !network(cfg, &cs, port, bound, steps).await {
        steps.skip("cbs");
        steps.skip("topics");
        return;
    }
    let sender = match SbSender::connect(SenderConfig {
        connection: cs.clone(),
        connections: 1,
        connect_timeout: bound,
        send_timeout: bound,
        token_ttl: Duration::from_secs(3600),
    })
    .await
    {
        Ok(s) => s,
        Err(e) => {
            steps.push(cbs_failure(&cs, e));
            steps.skip("topics");
            return;
        }
    };
    steps.push(Step::ok(
        "cbs",
        format!(
            "SAS key name {} accepted for {}",
            cs.key_name,
            cs.validation_audience()
        ),
    ));
    let workload = Workload::new(cfg.workload.clone());
    topics(cfg, &sender, &workload, bound, steps).await;
    sender.close().await;
    super::subscriptions::check(cfg, &cs, &workload, bound, steps).await;
}

/// The proxy (when one is set), DNS, TCP, the CONNECT tunnel, TLS and the WebSocket upgrade,
/// as far as they go; whether all passed.
async fn network(
    cfg: &RunConfig,
    cs: &ConnectionString,
    port: u16,
    bound: Duration,
    steps: &mut Steps,
) -> bool {
    let route = hubload_servicebus::transport::route(&cfg.proxy.0, &cs.host, port, cs.transport);
    let direct_when = "AMQP over WebSockets (--proxy moves AMQP on its own port too)";
    if let Some(step) = proxy::route_step(&cfg.proxy.0, route, &cs.host, port, direct_when) {
        steps.push(step);
    }
    let via = match route {
        Route::Via(p) => Some(p),
        Route::Direct | Route::Bypassed => None,
    };
    // Through a proxy, only the proxy's name is resolved here: the proxy resolves the host.
    let (dns_host, dns_port) = via.map_or((cs.host.as_str(), port), |p| (p.host(), p.port()));
    let addrs = match net::resolve(dns_host, dns_port, bound).await {
        Ok((a, s)) => {
            steps.push(s);
            a
        }
        Err(s) => {
            steps.push(s);
            return false;
        }
    };
    let what = match (via, cs.websockets()) {
        (Some(_), _) => "the HTTP proxy",
        (None, true) => "Service Bus (AMQP over WebSockets)",
        (None, false) => "Service Bus (AMQP)",
    };
    let tcp = match net::connect(&addrs, bound, what).await {
        Ok((t, s)) => {
            steps.push(s);
            t
        }
        Err(s) => {
            steps.push(s);
            return false;
        }
    };
    let tcp = match via {
        None => tcp,
        Some(p) => match proxy::tunnel(tcp, p, &cs.host, port, bound).await {
            Ok((t, s)) => {
                steps.push(s);
                t
            }
            Err(s) => {
                steps.push(s);
                return false;
            }
        },
    };
    if !cs.uses_tls() {
        return true;
    }
    let connector = match hubload_servicebus::tls_connector(cs) {
        Ok(c) => c,
        Err(e) => {
            steps.push(Step::fail(
                "tls",
                e.to_string(),
                "check the --ca-cert files",
            ));
            return false;
        }
    };
    match net::tls(tcp, &connector, &cs.host, bound).await {
        Ok((_, s)) => steps.push(s),
        Err(s) => {
            steps.push(s);
            return false;
        }
    }
    if !cs.websockets() {
        return true;
    }
    let upgraded = async {
        let tcp = match via {
            Some(p) => tunnel::through(p, &cs.host, port)
                .await
                .map_err(|e| e.to_string())?,
            None => tokio::net::TcpStream::connect(addrs[0])
                .await
                .map_err(|e| e.to_string())?,
        };
        ws_client::upgrade(tcp, &cs.host, port, &connector)
            .await
            .map_err(|e| e.to_string())
    };
    match tokio::time::timeout(bound, upgraded).await {
        Ok(Ok(_)) => {
            steps.push(Step::ok(
                "websocket",
                format!(
                    "upgraded to AMQPWSB10 at {}",
                    hubload_servicebus::transport::WS_PATH
                ),
            ));
            true
        }
        Ok(Err(e)) => {
            steps.push(Step::fail(
                "websocket",
                e,
                "is this a Service Bus WebSocket endpoint? A proxy in between must pass WebSocket upgrades",
            ));
            false
        }
        Err(_) => {
            steps.push(Step::fail(
                "websocket",
                format!("no upgrade within {bound:?}"),
                "is this a Service Bus WebSocket endpoint?",
            ));
            false
        }
    }
}

/// The line for a sender that could not be opened or whose token was refused.
fn cbs_failure(cs: &ConnectionString, e: SbError) -> Step {
    match e {
        SbError::Unauthorized { audience, status } => Step::fail(
            "cbs",
            format!(
                "the SAS token of key name {} was refused for {audience} (status {status})",
                cs.key_name
            ),
            "check SharedAccessKeyName and SharedAccessKey against the portal's policy; a clock far off makes tokens look expired",
        ),
        SbError::NotFound { audience } => Step::fail(
            "cbs",
            format!("no such entity: {audience}"),
            "EntityPath names an entity that does not exist: create it or drop EntityPath",
        ),
        other => Step::fail(
            "cbs",
            other.to_string(),
            "the AMQP connection did not come up: see the cause",
        ),
    }
}

/// Every Service Bus topic the run would use: attached for sending, or why not.
async fn topics(
    cfg: &RunConfig,
    sender: &SbSender,
    workload: &Workload,
    bound: Duration,
    steps: &mut Steps,
) {
    let names: BTreeSet<&str> = workload
        .topics()
        .iter()
        .map(|t| sb_topic(&cfg.target.sb_topics, t))
        .collect();
    let mut failed = Vec::new();
    for name in &names {
        let outcome = tokio::time::timeout(bound, sender.prepare(name))
            .await
            .unwrap_or(SendOutcome::Timeout);
        if outcome != SendOutcome::Accepted {
            failed.push((*name, outcome));
        }
    }
    if failed.is_empty() {
        steps.push(Step::ok(
            "topics",
            format!(
                "all {} topics exist and the policy can send to them",
                names.len()
            ),
        ));
        if let Some(first) = names.first() {
            let limit = sender.max_message_size(first).await;
            steps.push(super::size::step(cfg, workload, limit));
        }
        return;
    }
    for (name, outcome) in failed.iter().take(LISTED) {
        let (detail, fix) = match outcome {
            SendOutcome::NotFound => {
                steps.push(missing_topic(name, 0));
                continue;
            }
            // The token was accepted for the namespace at `cbs`: the right is what is missing.
            SendOutcome::Unauthorized => (
                format!(
                    "the policy of key name {} lacks the Send right on {name}",
                    sender_key_name(cfg)
                ),
                "give the policy the Send right on the namespace or on this topic, or use a key that has it",
            ),
            other => (
                format!("{name}: attaching a sender failed ({other:?})"),
                "see the cause",
            ),
        };
        steps.push(Step::fail("topic", detail, fix));
    }
    if failed.len() > LISTED {
        steps.push(Step::fail(
            "topics",
            format!(
                "{} of {} topics failed (the first {LISTED} are listed)",
                failed.len(),
                names.len()
            ),
            "as above",
        ));
    }
}

/// The line for a Service Bus topic that does not exist, with how many more are missing.
pub(crate) fn missing_topic(name: &str, more: usize) -> Step {
    let also = match more {
        0 => String::new(),
        1 => " (and 1 more topic)".to_string(),
        n => format!(" (and {n} more topics)"),
    };
    Step::fail(
        "topic",
        format!("Service Bus topic {name} does not exist{also}"),
        "create it, or send everything to one topic with --sb-topics single:NAME",
    )
}

/// The key name of the run's connection string, for a line.
fn sender_key_name(cfg: &RunConfig) -> String {
    cfg.sb_connection()
        .ok()
        .flatten()
        .map_or_else(String::new, |cs| cs.key_name)
}
