//! The WebSub hub target (docs/protocol.md §7): in the Ballerina/WSO2 dialect register topics,
//! then `POST hub?hub.mode=publish&hub.topic=T` with the event as a JSON body; in the websub
//! dialect a publish is a thin ping naming the topic URL.
//!
//! Requests are pre-rendered per topic (`request.rs`); a Ballerina publish only appends the
//! correlation id, the length and the body, and goes out on the lean HTTP/1.1 pool.

use std::net::SocketAddr;
use std::time::Duration;

use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::future::join_all;
use tokio::time::Instant;

use super::first_failure::FirstFailures;
use super::http::{HttpPool, PoolConfig, Response};
use super::reason::{explain, hub_reason};
use super::request::{Dialect, ExtraHeaders, HubTarget, RequestShape};
use super::{PhaseResult, Target};
use crate::result::{Attempt, Class, Outcome};
use crate::workload::{Event, Topic};

/// Where the hub is and how to reach it.
#[derive(Debug, Clone)]
pub struct HubEndpoint {
    /// Resolved socket address.
    pub addr: SocketAddr,
    /// `Host` header value.
    pub host: String,
    /// Path (and existing query) of the hub URL, e.g. `/hub`.
    pub path: String,
    /// Whether the path already has a query string.
    pub has_query: bool,
}

impl HubEndpoint {
    /// Resolve a hub URL. Errors are one line naming the URL's host.
    pub async fn resolve(url: &url::Url) -> anyhow::Result<Self> {
        // `config` admits only http:// until TLS pools are wired here (`HTTPS_PUBLISH`).
        let host = url.host_str().unwrap_or_default().to_string();
        let port = url.port_or_known_default().unwrap_or(80);
        let addr =
            tokio::net::lookup_host((host.trim_start_matches('[').trim_end_matches(']'), port))
                .await
                .ok()
                .and_then(|mut a| a.next())
                .ok_or_else(|| {
                    anyhow::anyhow!("invalid --hub-url: cannot resolve host `{host}`")
                })?;
        let host_header = match url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.clone(),
        };
        Ok(HubEndpoint {
            addr,
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

/// The client settings the target applies.
#[derive(Debug, Clone)]
pub struct WebSubClient {
    /// Whole-attempt bound.
    pub timeout: Duration,
    /// Connect bound.
    pub connect_timeout: Duration,
    /// Pool-wait bound.
    pub pool_timeout: Duration,
    /// Connections to the hub at most.
    pub max_conns: usize,
    /// Credentials and gateway headers, validated by `config`.
    pub headers: ExtraHeaders,
    /// The publisher convention the hub speaks.
    pub dialect: Dialect,
    /// Websub dialect: topic URL = this prefix + the topic name.
    pub topic_url_prefix: String,
    /// Concurrency of registration/deregistration.
    pub phase_concurrency: usize,
}

/// A WebSub hub.
#[derive(Debug)]
pub struct WebSubTarget {
    pool: HttpPool,
    timeout: Duration,
    /// Per topic: the Ballerina publish request up to (not including) the `activityid`
    /// value, or the complete websub thin ping.
    publish_heads: Vec<Vec<u8>>,
    shape: RequestShape,
    phase_concurrency: usize,
    /// The first failure of each class among the publishes.
    first: FirstFailures,
}

impl WebSubTarget {
    /// A target for `topics` at `hub`.
    pub fn new(hub: HubEndpoint, topics: &[Topic], client: &WebSubClient) -> Self {
        let pool = HttpPool::new(
            hub.addr,
            PoolConfig {
                max_conns: client.max_conns,
                connect_timeout: client.connect_timeout,
                pool_timeout: client.pool_timeout,
            },
        );
        let shape = RequestShape {
            hub: HubTarget {
                host: hub.host.clone(),
                path: hub.path.clone(),
            },
            dialect: client.dialect,
            topic_url_prefix: client.topic_url_prefix.clone(),
            headers: client.headers.clone(),
        };
        let publish_heads = topics
            .iter()
            .map(|topic| match shape.dialect {
                Dialect::Ballerina => shape.publish_head(&topic.name),
                Dialect::Websub => shape.thin_ping(&topic.name),
            })
            .collect();
        WebSubTarget {
            pool,
            timeout: client.timeout,
            publish_heads,
            shape,
            phase_concurrency: client.phase_concurrency.max(1),
            first: FirstFailures::default(),
        }
    }

    /// One exchange; the response too when there was one.
    async fn exchange(&self, request: &[u8]) -> (Attempt, Option<Response>) {
        let deadline = Instant::now() + self.timeout;
        match self.pool.send(request, deadline).await {
            Ok(resp) => (
                Attempt {
                    outcome: self.classify(&resp),
                    status: resp.status,
                    bytes_sent: request.len() as u64,
                    bytes_received: resp.bytes_received,
                },
                Some(resp),
            ),
            Err(e) => (
                Attempt {
                    outcome: e.outcome(),
                    status: 0,
                    bytes_sent: request.len() as u64,
                    bytes_received: 0,
                },
                None,
            ),
        }
    }

    /// The outcome of a response, as the dialect reads it.
    fn classify(&self, resp: &Response) -> Outcome {
        match self.shape.dialect {
            Dialect::Ballerina => resp.outcome(),
            Dialect::Websub => crate::result::classify::classify_thin_ping(
                resp.status,
                resp.content_type.as_deref(),
                &resp.body,
            ),
        }
    }

    /// A failed attempt as one line: status, the hub's reason, a dialect hint.
    fn explain(&self, a: &Attempt, resp: Option<&Response>) -> String {
        let reason = resp.and_then(|r| hub_reason(r.content_type.as_deref(), &r.body));
        explain(self.shape.dialect, a, reason.as_deref())
    }

    /// `a`, after recording it when it is the first failure of its class (formatted only then).
    fn noted(&self, a: Attempt, resp: Option<&Response>, topic: &Topic) -> Attempt {
        let class = a.outcome.class();
        if class != Class::Accepted {
            self.first.note(class, || {
                format!(
                    "publish {}: {}",
                    self.shape.hub_topic(&topic.name),
                    self.explain(&a, resp)
                )
            });
        }
        a
    }

    /// One register/deregister over every topic, with bounded concurrency.
    async fn phase(&self, topics: &[Topic], mode: &str) -> PhaseResult {
        let started = std::time::Instant::now();
        // N lanes pulling topic indices: bounded concurrency without spawning.
        let next = AtomicUsize::new(0);
        let lanes = (0..self.phase_concurrency.min(topics.len().max(1))).map(|_| async {
            let mut done = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(topic) = topics.get(i) else { break };
                let req = self.shape.phase_request(mode, &topic.name);
                let (a, resp) = self.exchange(&req).await;
                // Explained here, while the response is at hand; only failures keep text.
                let why =
                    (a.outcome.class() != Class::Accepted).then(|| self.explain(&a, resp.as_ref()));
                done.push((a, why, &*topic.name));
            }
            done
        });
        let results: Vec<(Attempt, Option<String>, &str)> =
            join_all(lanes).await.into_iter().flatten().collect();
        let mut p = PhaseResult {
            topics: topics.len() as u64,
            ..PhaseResult::default()
        };
        for (a, why, topic) in results {
            if mode == "register" && a.outcome == Outcome::Http4xx(409) {
                p.already_registered += 1;
                continue;
            }
            p.counts.bump(a.outcome.class());
            if let (Some(why), None) = (why, &p.first_error) {
                p.first_error = Some(format!("{mode} {}: {why}", self.shape.hub_topic(topic)));
            }
        }
        p.duration_s = started.elapsed().as_secs_f64();
        p
    }
}

impl Target for WebSubTarget {
    async fn prepare(&self, topics: &[Topic]) -> PhaseResult {
        self.phase(topics, "register").await
    }

    async fn send(&self, topic: &Topic, event: &Event) -> Attempt {
        let head = &self.publish_heads[event.topic];
        if self.shape.dialect == Dialect::Websub {
            // The thin ping is the same for every event of a topic: the hub fetches content.
            let (a, resp) = self.exchange(head).await;
            return self.noted(a, resp.as_ref(), topic);
        }
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
        let (a, resp) = self.exchange(&req).await;
        self.noted(a, resp.as_ref(), topic)
    }

    async fn teardown(&self, topics: &[Topic]) -> PhaseResult {
        self.phase(topics, "deregister").await
    }

    fn first_failures(&self) -> std::collections::BTreeMap<String, String> {
        self.first.snapshot()
    }
}
