//! Where the hub is: its resolved addresses, TLS, host and path, and which addresses accept.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;

use hubload_http1::proxy::ProxyUrl;

use super::super::http::{HostCounters, HubTunnel, Tls};

/// Where the hub is and how to reach it.
#[derive(Debug, Clone)]
pub struct HubEndpoint {
    /// Resolved socket addresses that accepted a connection at start (at least one).
    pub addrs: Vec<SocketAddr>,
    /// The TLS settings for an `https://` hub.
    pub tls: Option<Tls>,
    /// Attempts per address and TLS handshakes of every target made from this endpoint
    /// (clones share them; [`with_own_counters`](Self::with_own_counters) does not).
    pub counters: Arc<HostCounters>,
    /// `Host` header value.
    pub host: String,
    /// Path (and existing query) of the hub URL, e.g. `/hub`.
    pub path: String,
    /// Whether the path already has a query string.
    pub has_query: bool,
    /// `Some` when the hub is reached through an HTTP proxy: `addrs` are then the proxy's,
    /// and every connection asks it for a tunnel to the hub.
    pub tunnel: Option<HubTunnel>,
}

impl HubEndpoint {
    /// Resolve a hub URL (`tls` is given for an `https://` URL) to the addresses `pinned`
    /// gives (`--resolve`), or else to those DNS gives; through `proxy`, to the proxy's
    /// addresses instead (the proxy resolves the hub). Every address is probed once; those
    /// that refuse are left out (and logged), as Go's dialer falls back to the next address
    /// (so `localhost` works when the hub listens on one of `::1` and `127.0.0.1`). When none
    /// accepts, all are kept: the load then counts the refusals. Errors are one line naming
    /// the URL's host (or the proxy, shown without its credentials).
    pub async fn resolve(
        url: &url::Url,
        tls: Option<Tls>,
        pinned: Option<Vec<SocketAddr>>,
        proxy: Option<&ProxyUrl>,
    ) -> anyhow::Result<Self> {
        let host = url.host_str().unwrap_or_default().to_string();
        let port = url.port_or_known_default().unwrap_or(80);
        let tunnel = proxy.map(|p| HubTunnel::new(p.clone(), &host, port));
        let (name, at, what) = match proxy {
            Some(p) if pinned.is_none() => (p.host().to_string(), p.port(), "proxy"),
            Some(_) => anyhow::bail!(
                "--resolve pins the hub's address, but the hub is reached through a proxy, which resolves it: drop --resolve or bypass the proxy (--no-proxy)"
            ),
            None => (host.clone(), port, "hub"),
        };
        let bare = name.trim_start_matches('[').trim_end_matches(']');
        let mut resolved: Vec<SocketAddr> = match pinned {
            Some(addrs) => addrs,
            None => tokio::net::lookup_host((bare, at))
                .await
                .map(Iterator::collect)
                .unwrap_or_default(),
        };
        resolved.dedup();
        if resolved.is_empty() {
            match proxy {
                Some(p) => anyhow::bail!("invalid proxy: cannot resolve {}", p.shown()),
                None => anyhow::bail!("invalid --hub-url: cannot resolve host `{host}`"),
            }
        }
        let addrs = accepting(resolved.clone(), Duration::from_secs(2)).await;
        for skipped in resolved.iter().filter(|a| !addrs.contains(a)) {
            tracing::warn!("{what} {name}: {skipped} refused at start; not used");
        }
        let mut endpoint = Self::at(url, addrs, tls)?;
        endpoint.tunnel = tunnel;
        Ok(endpoint)
    }

    /// The endpoint of `url` at these addresses, without resolving or probing.
    pub fn at(url: &url::Url, addrs: Vec<SocketAddr>, tls: Option<Tls>) -> anyhow::Result<Self> {
        let host = url.host_str().unwrap_or_default().to_string();
        if url.scheme() == "https" && tls.is_none() {
            anyhow::bail!("invalid --hub-url `{host}`: https needs TLS settings");
        }
        let host_header = match url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.clone(),
        };
        Ok(HubEndpoint {
            counters: HostCounters::new(addrs.len()),
            addrs,
            tls: if url.scheme() == "https" { tls } else { None },
            host: host_header,
            path: url.path().to_string()
                + url
                    .query()
                    .map(|q| format!("?{q}"))
                    .as_deref()
                    .unwrap_or(""),
            has_query: url.query().is_some(),
            tunnel: None,
        })
    }
}

impl HubEndpoint {
    /// The same endpoint counting into counters of its own (registration, say, apart from
    /// the load).
    pub fn with_own_counters(&self) -> Self {
        HubEndpoint {
            counters: HostCounters::new(self.addrs.len()),
            ..self.clone()
        }
    }
}

/// The addresses of `all` that accept a TCP connection within `limit`; all of them when
/// none does (so the run reports the refusals rather than failing to start).
pub(crate) async fn accepting(all: Vec<SocketAddr>, limit: Duration) -> Vec<SocketAddr> {
    if all.len() == 1 {
        return all;
    }
    let probes = all.iter().map(|a| async move {
        matches!(
            tokio::time::timeout(limit, tokio::net::TcpStream::connect(a)).await,
            Ok(Ok(_))
        )
    });
    let ok = join_all(probes).await;
    let up: Vec<SocketAddr> = all
        .iter()
        .zip(ok)
        .filter_map(|(a, ok)| ok.then_some(*a))
        .collect();
    if up.is_empty() {
        all
    } else {
        up
    }
}
