//! The WebSub hub target, in the Ballerina/WSO2 dialect (PROTOCOL.md §2–3): register topics,
//! then `POST hub?hub.mode=publish&hub.topic=T` with the event as a JSON body.
//!
//! Requests are pre-rendered per topic; a publish only appends the correlation id, the length
//! and the body, and goes out on the lean HTTP/1.1 pool.

use std::net::SocketAddr;
use std::time::Duration;

use std::sync::Arc;

use futures_util::future::join_all;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::http::{HostCounters, HttpPool, PoolConfig, Response, Tls};
use super::lanes::run_lanes;
use super::{PhaseResult, Target};
use crate::result::{Attempt, Class, Outcome};
use crate::secret::Secret;
use crate::workload::{Event, Topic};

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
}

impl HubEndpoint {
    /// Resolve a hub URL (`tls` is given for an `https://` URL). Every address the host
    /// resolves to is probed once; those that refuse are left out, as Go's dialer falls back
    /// to the next address (so `localhost` works when the hub listens on one of `::1` and
    /// `127.0.0.1`). When none accepts, all are kept: the load then counts the refusals.
    /// Errors are one line naming the URL's host.
    pub async fn resolve(url: &url::Url, tls: Option<Tls>) -> anyhow::Result<Self> {
        let host = url.host_str().unwrap_or_default().to_string();
        let port = url.port_or_known_default().unwrap_or(80);
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let mut resolved: Vec<SocketAddr> = tokio::net::lookup_host((bare, port))
            .await
            .map(Iterator::collect)
            .unwrap_or_default();
        resolved.dedup();
        if resolved.is_empty() {
            anyhow::bail!("invalid --hub-url: cannot resolve host `{host}`");
        }
        let addrs = accepting(resolved, Duration::from_secs(2)).await;
        Self::at(url, addrs, tls)
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

/// Percent-encode a query value (RFC 3986 unreserved kept).
fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The client settings the target applies.
#[derive(Debug, Clone)]
pub struct WebSubClient {
    /// Whole-attempt bound.
    pub timeout: Duration,
    /// Connect bound.
    pub connect_timeout: Duration,
    /// TLS handshake bound (https only).
    pub tls_timeout: Duration,
    /// Pool-wait bound.
    pub pool_timeout: Duration,
    /// Connections to the hub at most.
    pub max_conns: usize,
    /// Bearer token.
    pub token: Option<Secret>,
    /// Concurrency of registration/deregistration.
    pub phase_concurrency: usize,
}

/// A WebSub hub.
#[derive(Debug)]
pub struct WebSubTarget {
    pool: HttpPool,
    timeout: Duration,
    /// Per topic: the publish request up to (not including) the `activityid` value.
    publish_heads: Vec<Vec<u8>>,
    hub: HubEndpoint,
    token: Option<Secret>,
    phase_concurrency: usize,
}

impl WebSubTarget {
    /// A target for `topics` at `hub`.
    pub fn new(hub: HubEndpoint, topics: &[Topic], client: &WebSubClient) -> Self {
        let mut pool = HttpPool::with_addrs(
            hub.addrs.clone(),
            PoolConfig {
                max_conns: client.max_conns,
                connect_timeout: client.connect_timeout,
                tls_timeout: client.tls_timeout,
                pool_timeout: client.pool_timeout,
            },
        )
        .with_counters(hub.counters.clone());
        if let Some(tls) = &hub.tls {
            pool = pool.with_tls(tls.clone());
        }
        let mut t = WebSubTarget {
            pool,
            timeout: client.timeout,
            publish_heads: Vec::new(),
            hub,
            token: client.token.clone(),
            phase_concurrency: client.phase_concurrency.max(1),
        };
        t.publish_heads = topics
            .iter()
            .map(|topic| {
                let mut h = t.head("publish", &topic.name, "application/json");
                h.extend_from_slice(b"Accept: application/json\r\nactivityid: ");
                h
            })
            .collect();
        t
    }

    /// `POST {path}?hub.mode=M&hub.topic=T HTTP/1.1` plus the common headers, open for more.
    fn head(&self, mode: &str, topic: &str, content_type: &str) -> Vec<u8> {
        let sep = if self.hub.has_query { '&' } else { '?' };
        let mut h = format!(
            "POST {}{sep}hub.mode={mode}&hub.topic={} HTTP/1.1\r\nHost: {}\r\nUser-Agent: hubload/{}\r\nContent-Type: {content_type}\r\n",
            self.hub.path,
            enc(topic),
            self.hub.host,
            env!("CARGO_PKG_VERSION"),
        );
        if let Some(t) = &self.token {
            h.push_str("Authorization: Bearer ");
            h.push_str(t.expose());
            h.push_str("\r\n");
        }
        h.into_bytes()
    }

    /// The pool publishes go through (per-address counts, handshakes).
    pub fn pool(&self) -> &HttpPool {
        &self.pool
    }

    async fn exchange(&self, request: &[u8]) -> Attempt {
        let deadline = Instant::now() + self.timeout;
        let mut resp = Response::default();
        let result = self.pool.send_into(request, deadline, &mut resp).await;
        Attempt {
            outcome: match result {
                Ok(()) => resp.outcome(),
                Err(e) => e.outcome(),
            },
            status: if result.is_ok() { resp.status } else { 0 },
            bytes_sent: request.len() as u64,
            // Every byte read, whatever the outcome.
            bytes_received: resp.bytes_received,
        }
    }

    /// One register/deregister over every topic, with bounded concurrency; stops on `cancel`
    /// (in-flight requests abandoned, counted `cancelled`).
    async fn phase(&self, topics: &[Topic], mode: &str, cancel: &CancellationToken) -> PhaseResult {
        let started = std::time::Instant::now();
        let done = run_lanes(topics, self.phase_concurrency, cancel, |topic| {
            let mut req = self.head(mode, &topic.name, "application/json");
            req.extend_from_slice(b"Content-Length: 0\r\n\r\n");
            async move { self.exchange(&req).await }
        })
        .await;
        let results = done
            .into_iter()
            .map(|(t, a)| (a.unwrap_or(Attempt::CANCELLED), t.name.to_string()));
        let mut p = PhaseResult {
            topics: topics.len() as u64,
            ..PhaseResult::default()
        };
        for (a, topic) in results {
            if mode == "register" && a.outcome == Outcome::Http4xx(409) {
                p.already_registered += 1;
                continue;
            }
            p.counts.bump(a.outcome.class());
            if let Some(r) = a.outcome.reason() {
                p.reasons.add(r, 1);
            }
            let class = a.outcome.class();
            if !matches!(class, Class::Accepted | Class::Cancelled) && p.first_error.is_none() {
                p.first_error = Some(format!("{mode} `{topic}`: {}", describe(&a)));
            }
        }
        p.duration_s = started.elapsed().as_secs_f64();
        p
    }
}

/// A human description of a failed attempt, for the registration error line.
pub fn describe(a: &Attempt) -> String {
    match a.outcome {
        Outcome::ConnError(k) => format!("connection {}", format!("{k:?}").to_lowercase()),
        Outcome::Timeout(k) => format!("{} timeout", format!("{k:?}").to_lowercase()),
        Outcome::Denied => format!("denied (HTTP {})", a.status),
        Outcome::TlsError(crate::result::TlsReason::UnknownIssuer) => {
            "TLS handshake failed: tls_error.unknown_issuer (a private CA? give it with --ca-cert)"
                .into()
        }
        Outcome::TlsError(_) => format!(
            "TLS handshake failed: {}",
            a.outcome.reason().map_or("", |r| r.name())
        ),
        o => match (o.status(), o.reason()) {
            (Some(s), _) => format!("HTTP {s}"),
            (None, Some(r)) if a.status != 0 => {
                format!("unexpected reply (HTTP {}, {})", a.status, r.name())
            }
            (None, Some(r)) => r.name().to_string(),
            (None, None) => o.class().name().to_string(),
        },
    }
}

impl Target for WebSubTarget {
    async fn prepare(&self, topics: &[Topic], cancel: &CancellationToken) -> PhaseResult {
        self.phase(topics, "register", cancel).await
    }

    async fn send(&self, _topic: &Topic, event: &Event) -> Attempt {
        let head = &self.publish_heads[event.topic];
        let mut req = Vec::with_capacity(head.len() + 64 + event.body.len());
        req.extend_from_slice(head);
        req.extend_from_slice(
            event
                .jti
                .as_hyphenated()
                .encode_lower(&mut uuid::Uuid::encode_buffer())
                .as_bytes(),
        );
        req.extend_from_slice(b"\r\nContent-Length: ");
        req.extend_from_slice(itoa::Buffer::new().format(event.body.len()).as_bytes());
        req.extend_from_slice(b"\r\n\r\n");
        req.extend_from_slice(&event.body);
        self.exchange(&req).await
    }

    async fn teardown(&self, topics: &[Topic], cancel: &CancellationToken) -> PhaseResult {
        self.phase(topics, "deregister", cancel).await
    }
}
