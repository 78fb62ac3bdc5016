//! The websub dialect's topic server for a run: started before the levels on
//! `--topic-server-listen` (default `127.0.0.1:0`), naming topics with `--topic-url-prefix`
//! or, without it, `http://<bound address>/topics/`.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;

use crate::config::{Dialect, RunConfig};
use crate::topic_server::{TopicServer, TopicServerConfig};
use crate::workload::Workload;

/// Where the topic server listens when `--topic-server-listen` is not given.
pub(crate) const DEFAULT_LISTEN: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 0);

/// Published events kept per topic for the hub's fetches; beyond, the oldest is dropped
/// (`overflowed`). 16 bytes each: a hub that never fetches costs at most 16 KiB per topic.
const QUEUE_CAP: usize = 1024;

/// The topic server of a websub-dialect run against `hub` (`None` in the ballerina dialect).
pub(crate) async fn start(
    cfg: &RunConfig,
    workload: &Arc<Workload>,
    hub: &url::Url,
) -> anyhow::Result<Option<Arc<TopicServer>>> {
    if cfg.websub.dialect != Dialect::Websub {
        return Ok(None);
    }
    // `rel="hub"` names the hub without credentials.
    let mut hub_url = hub.clone();
    let _ = hub_url.set_username("");
    let _ = hub_url.set_password(None);
    let listen = cfg.websub.topic_server_listen.unwrap_or(DEFAULT_LISTEN);
    let server = TopicServer::start(
        TopicServerConfig {
            listen,
            hub_url: hub_url.to_string(),
            topic_url_prefix: cfg.websub.topic_url_prefix.as_ref().map(|u| u.to_string()),
            queue_cap: QUEUE_CAP,
            deadlines: Default::default(),
        },
        workload.clone(),
    )
    .await
    .with_context(|| format!("--topic-server-listen {listen}: cannot start the topic server"))?;
    tracing::info!(
        "topic server on {}, topics at {}<topic>",
        server.local_addr(),
        server.prefix()
    );
    Ok(Some(Arc::new(server)))
}
