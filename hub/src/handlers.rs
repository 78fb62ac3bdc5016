//! The hub endpoint: accounting, the proxy-style fault layer, then the hub dialect.
//!
//! Order for each request: count it under the mode in its query string (or its form body),
//! apply the faults (in-flight limit, 502, 503, reset, latency, stall), then check the
//! declared body size, the mode, the bearer token and the actual body size, and dispatch to
//! register, deregister, publish (first through the tenant's admission limit, when one is
//! set) or (un)subscribe. Each request's answer is counted once, when it is decided.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, request::Parts, Method, StatusCode};
use axum::response::Response;
use http_body_util::{BodyExt, LengthLimitError, Limited};

use crate::conn_handle::ConnHandle;
use crate::faults::Action;
use crate::params::{self, HubParams};
use crate::server_timing::PublishTiming;
use crate::state::{HubState, Inner, RegistryResult};
use crate::stats::{Mode, Tally, Verdict};
use crate::subscribe;

/// The body, as far as it has been read.
enum BodyState {
    Unread(Body),
    Read(Bytes),
}

/// Why a body could not be read.
enum BodyError {
    TooLarge,
    /// The client broke off (counted as abandoned).
    Broken,
}

async fn read_body(body: Body, limit: usize) -> Result<Bytes, BodyError> {
    match Limited::new(body, limit).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => Err(BodyError::TooLarge),
        Err(_) => Err(BodyError::Broken),
    }
}

fn declared_len(parts: &Parts) -> Option<usize> {
    parts
        .headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// The hub endpoint (every path but the admin ones).
pub(crate) async fn hub(State(state): State<HubState>, req: Request) -> Response {
    let arrived = std::time::Instant::now();
    let inner = &state.inner;
    let (parts, body) = req.into_parts();
    let query = parts.uri.query().unwrap_or("").as_bytes();
    let qmode = HubParams::parse(query).mode.map(|m| Mode::parse(Some(&m)));
    let (mut tally, inflight) = Tally::enter(inner.counters.clone(), qmode.unwrap_or(Mode::Other));

    if parts.method != Method::POST {
        tally.decide(Verdict::BadRequest);
        return params::plain(StatusCode::METHOD_NOT_ALLOWED, "the hub takes POST");
    }

    // Without a mode in the query string, a form body names it: read it now so that even a
    // faulted request is counted under its mode.
    let limit = inner.cfg.max_body_bytes;
    let form = params::is_form(parts.headers.get(header::CONTENT_TYPE));
    let mut too_large = declared_len(&parts).is_some_and(|n| n > limit);
    let body = if qmode.is_none() && form && !too_large {
        match read_body(body, limit).await {
            Ok(bytes) => {
                tally.set_mode(Mode::parse(HubParams::parse(&bytes).mode.as_deref()));
                BodyState::Read(bytes)
            }
            Err(BodyError::TooLarge) => {
                too_large = true;
                BodyState::Read(Bytes::new())
            }
            Err(BodyError::Broken) => return params::plain(StatusCode::BAD_REQUEST, "broken body"),
        }
    } else {
        BodyState::Unread(body)
    };

    // The fault settings are read in short borrows: no guard is held across an await.
    let (action, broker_latency) = {
        let faults = inner.faults.load();
        // Faults scoped to topics: the topic is in the query, or in a form body read above.
        let scoped = faults.cfg.topic_prefixes.is_empty() || {
            let from_query = HubParams::parse(query).topic;
            let topic = match (&from_query, &body) {
                (None, BodyState::Read(b)) => HubParams::parse(b).topic,
                _ => from_query,
            };
            faults.cfg.scopes(topic.as_deref())
        };
        let action = (faults.active && scoped).then(|| {
            let seq = faults.seq.fetch_add(1, Relaxed) + 1;
            faults.cfg.decide(seq, inflight)
        });
        let broker = match scoped {
            true => Duration::from_millis(faults.cfg.broker_latency_ms),
            false => Duration::ZERO,
        };
        (action, broker)
    };
    match action {
        None => {}
        Some(Action::Fail502) => {
            tally.decide(Verdict::Fault502);
            return params::proxy_error(StatusCode::BAD_GATEWAY);
        }
        Some(Action::Fail503) => {
            tally.decide(Verdict::Fault503);
            return params::proxy_error(StatusCode::SERVICE_UNAVAILABLE);
        }
        Some(Action::Reset) => {
            tally.decide(Verdict::FaultReset);
            return reset(&parts).await;
        }
        Some(Action::Pass { delay }) => {
            if delay > Duration::ZERO {
                tokio::time::sleep(delay).await;
            }
            let stall_end = inner.faults.load().cfg.stall_end(inner.now_ms());
            if let Some(end) = stall_end {
                inner.counters.stalled.fetch_add(1, Relaxed);
                tokio::time::sleep_until(inner.at_ms(end)).await;
            }
        }
    }

    if too_large {
        tally.decide(Verdict::TooLarge);
        return params::plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the body is larger than {limit} bytes"),
        );
    }
    let mode = tally.mode();
    if mode == Mode::Other {
        tally.decide(Verdict::BadRequest);
        return params::plain(
            StatusCode::BAD_REQUEST,
            "hub.mode must be one of register, deregister, publish, subscribe, unsubscribe",
        );
    }
    if !authorized(inner, &parts) {
        tally.decide(Verdict::Unauthorized);
        let mut r = params::plain(StatusCode::UNAUTHORIZED, "a valid bearer token is required");
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer"),
        );
        return r;
    }
    let (bytes, from_body) = match body {
        BodyState::Read(b) => (b, true),
        BodyState::Unread(b) => match read_body(b, limit).await {
            Ok(b) => (b, false),
            Err(BodyError::TooLarge) => {
                tally.decide(Verdict::TooLarge);
                return params::plain(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("the body is larger than {limit} bytes"),
                );
            }
            Err(BodyError::Broken) => return params::plain(StatusCode::BAD_REQUEST, "broken body"),
        },
    };
    // The query string names the operation; a form body adds what it lacks. A publish with a
    // query mode carries content in its body; a publish named in a form body is a thin ping.
    let body_params = if form {
        HubParams::parse(&bytes)
    } else {
        HubParams::default()
    };
    let p = HubParams::parse(query).or(body_params);
    let (verdict, response) = match mode {
        Mode::Register | Mode::Deregister => match inner.broker.get() {
            Some(b) => broker_topic_op(inner, b, mode, &p).await,
            None => topic_op(inner, mode, &p),
        },
        Mode::Publish => {
            if let Some(retry_after) = over_limit(inner, &p) {
                tally.decide(Verdict::Throttled);
                return retry_after;
            }
            let content = (!from_body).then(|| {
                let ct = parts.headers.get(header::CONTENT_TYPE).cloned();
                (bytes.clone(), ct)
            });
            if let Some(b) = inner.broker.get() {
                let answer = match topic(inner, &p) {
                    Ok(t) => broker_publish(inner, b, t, content, arrived).await,
                    Err(reason) => bad_request(reason),
                };
                tally.decide(answer.0);
                return answer.1;
            }
            if broker_latency > Duration::ZERO {
                tokio::time::sleep(broker_latency).await;
            }
            // Accepted now (the injected broker latency is behind it): what each delivery's
            // `Hub-Timing` carries.
            let timing = PublishTiming::accepted_now(arrived, broker_latency);
            let (verdict, mut response) = publish(inner, &p, content, timing);
            crate::server_timing::stamp(&mut response, arrived, broker_latency);
            (verdict, response)
        }
        Mode::Subscribe => subscribe::handle(inner, &p),
        Mode::Other => unreachable!("answered above"),
    };
    tally.decide(verdict);
    response
}

/// The 429 for a publish over its tenant's admission limit, or `None` to go on (no limit,
/// or no topic: the publish path answers that).
fn over_limit(inner: &Inner, p: &HubParams<'_>) -> Option<Response> {
    let admission = inner.admission.as_ref()?;
    let t = topic(inner, p).ok()?;
    let secs = admission.admit(t, inner.now_us()).err()?;
    let limit = admission.limit();
    let mut r = params::plain(
        StatusCode::TOO_MANY_REQUESTS,
        format!(
            "tenant {} is over its admission limit of {} (burst {}); retry after {secs} s",
            crate::admission::tenant_of(t),
            limit.rate,
            limit.burst
        ),
    );
    r.headers_mut()
        .insert(header::RETRY_AFTER, header::HeaderValue::from(secs));
    Some(r)
}

/// Reset the connection this request came on (TCP RST, no answer). Without a connection
/// (the router driven directly, as in unit tests) the answer is an empty 500.
async fn reset(parts: &Parts) -> Response {
    match parts.extensions.get::<ConnHandle>() {
        Some(conn) => {
            conn.reset();
            // The connection task drops this future with the connection.
            std::future::pending().await
        }
        None => {
            let mut r = Response::new(Body::empty());
            *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            r
        }
    }
}

fn authorized(inner: &Inner, parts: &Parts) -> bool {
    let Some(token) = inner.cfg.bearer_token.as_deref() else {
        return true;
    };
    let given = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "));
    // Compare without an early exit so the time taken says nothing about the token.
    given.is_some_and(|g| {
        g.len() == token.len()
            && g.iter()
                .zip(token.as_bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    })
}

/// Check `hub.topic`: present and not too long; `Err` is the 400 reason.
fn topic<'p>(inner: &Inner, p: &'p HubParams<'_>) -> Result<&'p str, String> {
    let max = inner.cfg.max_topic_len;
    match p.topic.as_deref() {
        None | Some("") => Err("hub.topic is required".to_owned()),
        Some(t) if t.len() > max => Err(format!("hub.topic is longer than {max} bytes")),
        Some(t) => Ok(t),
    }
}

fn bad_request(reason: String) -> (Verdict, Response) {
    (
        Verdict::BadRequest,
        params::plain(StatusCode::BAD_REQUEST, reason),
    )
}

fn topic_op(inner: &Inner, mode: Mode, p: &HubParams<'_>) -> (Verdict, Response) {
    let t = match topic(inner, p) {
        Ok(t) => t,
        Err(reason) => return bad_request(reason),
    };
    let result = if mode == Mode::Register {
        inner.register(t)
    } else {
        Some(inner.deregister(t))
    };
    match (mode, result) {
        (_, Some(RegistryResult::Ok)) => (Verdict::Accepted, params::accepted()),
        (Mode::Register, Some(_)) => (
            Verdict::Conflict,
            params::refused(
                StatusCode::CONFLICT,
                &format!("Topic [{t}] is already registered with the Hub"),
            ),
        ),
        (Mode::Register, None) => (
            Verdict::BadRequest,
            params::plain(StatusCode::BAD_REQUEST, "the hub keeps no more topics"),
        ),
        _ => (
            Verdict::NotFound,
            params::refused(StatusCode::NOT_FOUND, &params::not_registered(t)),
        ),
    }
}

/// A publish in broker mode: a topic the hub has not registered is denied as in memory
/// mode, without a send; otherwise one send, answered once it settles, with
/// `Server-Timing: broker;dur=<the send>` (docs/hub-servicebus.md).
async fn broker_publish(
    inner: &Arc<Inner>,
    broker: &Arc<crate::broker::Broker>,
    topic: &str,
    content: Option<(Bytes, Option<header::HeaderValue>)>,
    arrived: std::time::Instant,
) -> (Verdict, Response) {
    let registered = inner
        .topic(topic)
        .is_some_and(|t| t.registered.load(Relaxed));
    if !registered {
        // Counts the denial (per topic) exactly as the in-memory hub does.
        let r = inner.publish(topic, None, None);
        debug_assert_eq!(r, RegistryResult::Unknown);
        let mut response = params::denied(StatusCode::NOT_FOUND, &params::not_registered(topic));
        crate::server_timing::stamp(&mut response, arrived, Duration::ZERO);
        return (Verdict::Denied, response);
    }
    // Counts the publish once the broker accepted it, even if this handler is gone by then;
    // no content: delivery is the broker's subscriptions' job.
    let count = {
        let (inner, topic) = (inner.clone(), topic.to_owned());
        move || {
            inner.publish(&topic, None, None);
        }
    };
    let (outcome, took) = crate::broker::publish::send_detached(
        broker.clone(),
        topic.to_owned(),
        content,
        arrived,
        count,
    )
    .await;
    let (verdict, mut response) = match &outcome {
        hubload_servicebus::SendOutcome::Accepted => (Verdict::Accepted, params::accepted()),
        other => (
            Verdict::Broker,
            crate::broker::publish::failure_response(other),
        ),
    };
    crate::server_timing::stamp(&mut response, arrived, took);
    (verdict, response)
}

/// Register or deregister in broker mode: a register makes sure the topic exists at the
/// broker first (a broker failure is answered as a publish's is); a deregister stops the
/// topic's receive loops.
async fn broker_topic_op(
    inner: &Inner,
    broker: &crate::broker::Broker,
    mode: Mode,
    p: &HubParams<'_>,
) -> (Verdict, Response) {
    let t = match topic(inner, p) {
        Ok(t) => t,
        Err(reason) => return bad_request(reason),
    };
    if mode == Mode::Register {
        if let Err(o) = broker.ensure_topic(t).await {
            return (
                Verdict::Broker,
                crate::broker::publish::failure_response(&o),
            );
        }
    }
    let answer = topic_op(inner, mode, p);
    if mode == Mode::Deregister && answer.0 == Verdict::Accepted {
        broker.remove_topic(t);
    }
    answer
}

fn publish(
    inner: &Inner,
    p: &HubParams<'_>,
    content: Option<(Bytes, Option<header::HeaderValue>)>,
    timing: PublishTiming,
) -> (Verdict, Response) {
    let t = match topic(inner, p) {
        Ok(t) => t,
        Err(reason) => return bad_request(reason),
    };
    match inner.publish(t, content, Some(timing)) {
        RegistryResult::Ok => (Verdict::Accepted, params::accepted()),
        RegistryResult::OverMemory => (
            Verdict::OverMemory,
            params::plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "the hub holds its memory budget of queued content; retry later",
            ),
        ),
        _ => (
            Verdict::Denied,
            params::denied(StatusCode::NOT_FOUND, &params::not_registered(t)),
        ),
    }
}
