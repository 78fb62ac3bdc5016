//! The WebSub hub target (docs/protocol.md §7): in the Ballerina/WSO2 dialect register topics,
//! then `POST hub?hub.mode=publish&hub.topic=T` with the event as a JSON body; in the websub
//! dialect a publish is a thin ping naming the topic URL.
//!
//! Requests are pre-rendered per topic (`request.rs`); a Ballerina publish only appends the
//! correlation id, the length and the body, and goes out on the lean HTTP/1.1 pool.

use std::time::Duration;

use std::sync::Arc;

use futures_util::future::{BoxFuture, Either};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::first_failure::FirstFailures;
use super::h2::{H2Config, H2Local, H2Pool};
use super::http::{HttpPool, PoolConfig, Response};
use super::lanes::run_lanes;
use super::reason::{explain, hub_reason};
use super::request::{Dialect, ExtraHeaders, HubTarget, RequestShape};
use super::transport::Transport;
use super::{PhaseResult, Target, TopicRegistry};
use crate::result::{Attempt, Class, OtherReason, Outcome};
use crate::topic_server::TopicServer;
use crate::workload::{Event, Topic, Workload};

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
    /// Credentials and gateway headers, validated by `config`.
    pub headers: ExtraHeaders,
    /// The publisher convention the hub speaks.
    pub dialect: Dialect,
    /// Websub dialect: topic URL = this prefix + the topic name.
    pub topic_url_prefix: String,
    /// Concurrency of registration/deregistration.
    pub phase_concurrency: usize,
    /// The HTTP version requests speak.
    pub wire: HubWire,
}

/// The HTTP version a hub's requests speak, once chosen (by `--http-version` and, over TLS,
/// by ALPN).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HubWire {
    /// HTTP/1.1: one exchange per connection at a time.
    Http1,
    /// HTTP/2 with up to `streams` exchanges per connection.
    Http2 {
        /// Concurrent streams per connection.
        streams: usize,
    },
}

/// A WebSub hub.
#[derive(Debug)]
pub struct WebSubTarget {
    pool: Transport,
    timeout: Duration,
    /// Per topic: the Ballerina publish request up to (not including) the `activityid`
    /// value, or the complete websub thin ping.
    publish_heads: Vec<Vec<u8>>,
    shape: RequestShape,
    phase_concurrency: usize,
    /// The first failure of each class among the publishes.
    first: FirstFailures,
    /// Websub dialect: told of each event before its thin ping, so the hub's fetch finds it.
    topic_server: Option<Arc<TopicServer>>,
    /// Ballerina dialect: when set, publishes render the event's body from it into the
    /// request (see [`Target::renders_body`]).
    workload: Option<Arc<Workload>>,
    /// Over HTTP/2: the publish requests converted once per topic.
    h2: Option<H2Publishes>,
}

impl WebSubTarget {
    /// A target for `topics` at `hub`.
    pub fn new(hub: HubEndpoint, topics: &[Topic], client: &WebSubClient) -> Self {
        let pool = match client.wire {
            HubWire::Http1 => {
                let mut pool = HttpPool::with_addrs(
                    hub.addrs.clone(),
                    PoolConfig {
                        max_conns: client.max_conns,
                        connect_timeout: client.connect_timeout,
                        tls_timeout: client.tls_timeout,
                        pool_timeout: client.pool_timeout,
                    },
                )
                .with_counters(hub.counters.clone())
                .with_tunnel(hub.tunnel.clone());
                if let Some(tls) = &hub.tls {
                    pool = pool.with_tls(tls.clone());
                }
                Transport::Http1(pool)
            }
            HubWire::Http2 { streams } => Transport::Http2(
                H2Pool::new(
                    hub.addrs.clone(),
                    hub.counters.clone(),
                    H2Config {
                        conns: client.max_conns,
                        streams,
                        connect_timeout: client.connect_timeout,
                        tls_timeout: client.tls_timeout,
                        pool_timeout: client.pool_timeout,
                    },
                    hub.tls.as_ref(),
                )
                .with_tunnel(hub.tunnel.clone()),
            ),
        };
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
            .collect::<Vec<_>>();
        let h2 = match &pool {
            Transport::Http2(p) => Some(H2Publishes::new(p, shape.dialect, &publish_heads)),
            Transport::Http1(_) => None,
        };
        WebSubTarget {
            h2,
            pool,
            timeout: client.timeout,
            publish_heads,
            shape,
            phase_concurrency: client.phase_concurrency.max(1),
            first: FirstFailures::default(),
            topic_server: None,
            workload: None,
        }
    }

    /// Render each published event's body from `workload` (the one the events come from)
    /// where the request is written, instead of taking it rendered.
    pub fn with_workload(mut self, workload: Arc<Workload>) -> Self {
        self.workload = Some(workload);
        self
    }

    /// Tell `server` of every event before its thin ping (the websub dialect).
    pub fn with_topic_server(mut self, server: Arc<TopicServer>) -> Self {
        self.topic_server = Some(server);
        self
    }

    /// The connections publishes go through.
    pub fn transport(&self) -> &Transport {
        &self.pool
    }

    /// One exchange; the response too when there was one.
    async fn exchange(&self, request: &[u8]) -> (Attempt, Option<Response>) {
        let mut resp = Response::default();
        let (a, answered) = self.exchange_into(request, Instant::now(), &mut resp).await;
        (a, answered.then_some(resp))
    }

    /// One exchange started at `started` into `resp` (its allocations reused); true when a
    /// response was read.
    async fn exchange_into(
        &self,
        request: &[u8],
        started: Instant,
        resp: &mut Response,
    ) -> (Attempt, bool) {
        let result = self
            .pool
            .send_bytes(request, started, started + self.timeout, resp)
            .await;
        self.attempt(result, request.len(), resp)
    }

    /// The attempt an exchange of a `bytes_sent`-byte request ended in; true when a response
    /// was read.
    fn attempt(
        &self,
        result: Result<(), Outcome>,
        bytes_sent: usize,
        resp: &Response,
    ) -> (Attempt, bool) {
        // Every byte read counts, whatever the outcome.
        let bytes_received = resp.bytes_received;
        let (outcome, status, server_timing, retry_after) = match result {
            Ok(()) => (
                self.classify(resp),
                resp.status,
                resp.server_timing,
                resp.retry_after,
            ),
            Err(outcome) => (
                outcome,
                0,
                crate::result::ServerTimings::NONE,
                crate::result::RetryAfter::NONE,
            ),
        };
        let a = Attempt {
            outcome,
            status,
            bytes_sent: bytes_sent as u64,
            bytes_received,
            server_timing,
            retry_after,
        };
        (a, result.is_ok())
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
    /// Inlined: once per attempt, in the worker loop's own code (see `Target::send`).
    #[inline(always)]
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

    /// One register/deregister over every topic, with bounded concurrency; stops on `cancel`
    /// (in-flight requests abandoned, counted `cancelled`).
    async fn phase(&self, topics: &[Topic], mode: &str, cancel: &CancellationToken) -> PhaseResult {
        let started = std::time::Instant::now();
        let done = run_lanes(topics, self.phase_concurrency, cancel, |topic| {
            let req = self.shape.phase_request(mode, &topic.name);
            async move {
                let (a, resp) = self.exchange(&req).await;
                // Explained here, while the response is at hand; only failures keep text.
                let why =
                    (a.outcome.class() != Class::Accepted).then(|| self.explain(&a, resp.as_ref()));
                (a, why)
            }
        })
        .await;
        let results = done.into_iter().map(|(t, r)| match r {
            Some((a, why)) => (a, why, &*t.name),
            None => (Attempt::CANCELLED, None, &*t.name),
        });
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
            if let Some(r) = a.outcome.reason() {
                p.reasons.add(r, 1);
            }
            if a.outcome.class() == Class::Cancelled {
                continue;
            }
            if let (Some(why), None) = (why, &p.first_error) {
                p.first_error = Some(format!("{mode} {}: {why}", self.shape.hub_topic(topic)));
            }
        }
        p.duration_s = started.elapsed().as_secs_f64();
        p
    }
}

impl WebSubTarget {
    /// Write the publish of `event` into `req`: what `head_to` writes first (given the id's
    /// hex form and the body's length), then the body. The id's hex is made here, so the
    /// send's state does not carry it.
    fn write_event(
        &self,
        event: &Event,
        req: &mut Vec<u8>,
        head_to: impl FnOnce(&mut Vec<u8>, &[u8; 36], usize),
    ) {
        let jti = match &self.workload {
            Some(w) => w.jti_hex(&event.jti),
            None => crate::workload::hyphenated(event.jti),
        };
        // A body copied from its template has its length known first, so it is written
        // straight after the head; any other goes through `with_body`.
        let templated = match &self.workload {
            Some(w) if event.body.is_empty() => w.body_template(event),
            _ => None,
        };
        match templated {
            Some(body) => {
                head_to(req, &jti, body.body_len());
                body.append_to(&jti, req);
            }
            None => self.with_body(event, &jti, |body| {
                head_to(req, &jti, body.len());
                req.extend_from_slice(body);
            }),
        }
    }

    /// Call `f` with the body of `event`: its own, or rendered from the workload into this
    /// thread's body buffer when it came without one (and has no template: see `send`).
    /// `jti` is the event's in its hex form (`Workload::jti_hex`).
    fn with_body(&self, event: &Event, jti: &[u8; 36], f: impl FnOnce(&[u8])) {
        match &self.workload {
            Some(w) if event.body.is_empty() => BODY.with_borrow_mut(|body| {
                w.render_body_with_jti(event, jti, body);
                f(body);
                if body.capacity() > SCRATCH_BYTES {
                    *body = Vec::new();
                }
            }),
            _ => f(&event.body),
        }
    }
}

impl WebSubTarget {
    /// One publish over HTTP/1.1 (see [`Target::send`]).
    async fn send_http1(
        &self,
        pool: &HttpPool,
        topic: &Topic,
        event: &Event,
        started: Instant,
        resp: &mut Response,
    ) -> Attempt {
        let head = &self.publish_heads[event.topic];
        let deadline = started + self.timeout;
        let (a, answered) = if self.shape.dialect == Dialect::Websub {
            // The thin ping is the same for every event of a topic: the hub fetches content,
            // which the topic server must know before the ping leaves.
            self.note_published(event);
            let result = pool
                .send_into(head, started, deadline, resp)
                .await
                .map_err(|e| e.outcome());
            self.attempt(result, head.len(), resp)
        } else {
            // Rendered by the pool into its thread's write buffer once a connection is ready
            // (and the body with it, when the event came without one). The id's hex is made
            // there too, so the send's state does not carry it.
            let render = |req: &mut Vec<u8>| {
                self.write_event(event, req, |req, jti, body_len| {
                    req.extend_from_slice(head);
                    req.extend_from_slice(jti);
                    req.extend_from_slice(b"\r\nContent-Length: ");
                    req.extend_from_slice(itoa::Buffer::new().format(body_len).as_bytes());
                    req.extend_from_slice(b"\r\n\r\n");
                });
            };
            let result = pool
                .send_rendered(&render, started, deadline, resp)
                .await
                .map_err(|e| e.outcome());
            // Never rendered (no connection): the request the attempt was for, counted as
            // when it is sent.
            let size = match resp.request_bytes {
                0 => {
                    let mut req = Vec::new();
                    render(&mut req);
                    req.len()
                }
                n => n as usize,
            };
            self.attempt(result, size, resp)
        };
        let a = self.noted(a, answered.then_some(&*resp), topic);
        PublishScratch::trim(resp);
        a
    }

    /// One publish over HTTP/2 (see [`Target::send`]): the topic's head prepared once,
    /// the id and body from this thread's arena.
    async fn send_http2(
        &self,
        pool: &H2Pool,
        topic: &Topic,
        event: &Event,
        started: Instant,
        resp: &mut Response,
        local: &mut H2Local,
    ) -> Attempt {
        let deadline = started + self.timeout;
        let (result, size) = match &self.h2 {
            // `new` makes the requests with the pool.
            None => (Err(Outcome::Other(OtherReason::Unknown)), 0),
            Some(h2) if self.shape.dialect == Dialect::Websub => {
                self.note_published(event);
                let size = self.publish_heads[event.topic].len();
                (
                    h2.thin_ping(pool, event.topic, deadline, local, resp).await,
                    size,
                )
            }
            Some(h2) => {
                // The id, then the body: HTTP/2 sends them as a field and a frame, from one
                // buffer (see `H2Publishes::publish`).
                let rendered = h2_publish::render(|buf| {
                    self.write_event(event, buf, |buf, jti, _| buf.extend_from_slice(jti))
                });
                let result = h2
                    .publish(pool, event.topic, rendered, deadline, local, resp)
                    .await;
                (result, resp.request_bytes as usize)
            }
        };
        let (a, answered) = self.attempt(result, size, resp);
        let a = self.noted(a, answered.then_some(&*resp), topic);
        PublishScratch::trim(resp);
        a
    }

    /// The websub dialect: the topic server learns of `event` before its thin ping leaves.
    fn note_published(&self, event: &Event) {
        if let Some(ts) = &self.topic_server {
            ts.note_published(event.topic, event.seq, event.sent_us);
        }
    }
}

thread_local! {
    /// Where publishes render event bodies (see [`WebSubTarget::with_body`]).
    static BODY: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A register or deregister request exactly as the set-up phase sends it (a 409 to a register
/// is `Http4xx(409)`).
impl TopicRegistry for WebSubTarget {
    fn topic_request<'a>(&'a self, register: bool, topic: &'a str) -> BoxFuture<'a, Outcome> {
        let mode = if register { "register" } else { "deregister" };
        Box::pin(async move {
            let req = self.shape.phase_request(mode, topic);
            self.exchange(&req).await.0.outcome
        })
    }
}

impl Target for WebSubTarget {
    type Scratch = PublishScratch;

    fn renders_body(&self) -> bool {
        self.workload.is_some() && self.shape.dialect == Dialect::Ballerina
    }

    async fn prepare(&self, topics: &[Topic], cancel: &CancellationToken) -> PhaseResult {
        let registered = self.phase(topics, "register", cancel).await;
        // This pool's next use is deregistration at the end (topic churn, if any, opens what
        // it needs): its connections are closed now, not left idle for the whole load. An
        // HTTP/2 connection the hub closes ends on its own.
        if let Transport::Http1(pool) = &self.pool {
            pool.close_idle();
        }
        registered
    }

    /// The transport is chosen here, once per attempt, outside the exchange's own future: the
    /// HTTP/1.1 publish is a future with no HTTP/2 state or branch in it, small enough to be
    /// inlined into the worker loop (its per-request instructions, bench/README.md), and
    /// HTTP/2's is one boxed future of its own.
    fn send(
        &self,
        topic: &Topic,
        event: &Event,
        started: std::time::Instant,
        scratch: &mut PublishScratch,
    ) -> impl std::future::Future<Output = Attempt> + Send {
        let started = Instant::from_std(started);
        let PublishScratch { resp, h2 } = scratch;
        match &self.pool {
            Transport::Http1(pool) => {
                Either::Left(self.send_http1(pool, topic, event, started, resp))
            }
            Transport::Http2(pool) => {
                let publish = self.send_http2(pool, topic, event, started, resp, h2);
                Either::Right(Box::pin(publish))
            }
        }
    }

    async fn teardown(&self, topics: &[Topic], cancel: &CancellationToken) -> PhaseResult {
        self.phase(topics, "deregister", cancel).await
    }

    fn first_failures(&self) -> std::collections::BTreeMap<String, String> {
        self.first.snapshot()
    }
}

/// A worker's response buffers, reused by its next publish instead of allocated per attempt
/// (the request is rendered into the pool's write buffer). Each worker owns one
/// ([`Target::Scratch`]): no per-thread list to take it from and give it back to on every
/// attempt. The response is boxed: the worker's state then holds a pointer, not the
/// `Response` (that state is touched on every request, a cache line per 64 bytes).
#[derive(Debug, Default)]
pub struct PublishScratch {
    resp: Box<Response>,
    /// Over HTTP/2: the deadline timer and connection handles kept between attempts.
    h2: H2Local,
}

/// A buffer that grew past this many bytes (a large event, a long response body) is freed
/// rather than kept.
const SCRATCH_BYTES: usize = 16 * 1024;

impl PublishScratch {
    /// After an attempt: a body buffer that grew large is freed, not kept for the next one
    /// (the rest is cleared before use).
    #[inline(always)]
    fn trim(resp: &mut Response) {
        if resp.body.capacity() > SCRATCH_BYTES {
            resp.body = Vec::new();
        }
    }
}

mod endpoint;
#[cfg(test)]
pub(crate) use endpoint::accepting;
pub use endpoint::HubEndpoint;
mod h2_publish;
use h2_publish::H2Publishes;

#[cfg(test)]
mod tests;
