//! The control API's handlers: `GET /v1/status` (k6's shape: `data.attributes`), `PATCH
//! /v1/status` (k6's verbs: `paused`, `stopped`, `vus`, plus `rate`), and one `POST` per action
//! for the page's buttons. GETs read; only the control verbs change anything.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::auth::check_control;
use super::feed::offered;
use super::state::WebState;
use crate::engine::{ControlEvent, Load, Refused};

/// An answer with a JSON error body, as k6 answers a bad request.
fn error(status: StatusCode, detail: impl std::fmt::Display) -> Response {
    let body =
        json!({"errors": [{"status": status.as_u16().to_string(), "detail": detail.to_string()}]});
    (status, Json(body)).into_response()
}

/// The run as it is now: the level, the time, the load offered and achieved, paused or not.
pub fn status(s: &WebState) -> Value {
    let level = s.control.level();
    let last = s.feed.last_second().unwrap_or(Value::Null);
    let stopped = s.control.is_stopped();
    let ended = s.ended();
    let paused = s.control.is_paused();
    let state = match () {
        _ if ended => "finished",
        _ if stopped => "stopping",
        _ if paused => "paused",
        _ if level.is_none() => "between levels",
        _ => "running",
    };
    let (vus, vus_max) = match level.as_ref().map(|(l, _)| (l.offered, l.started_with)) {
        Some((Load::Closed { concurrency }, Load::Closed { concurrency: max })) => {
            (json!(concurrency), json!(max))
        }
        _ => (Value::Null, Value::Null),
    };
    json!({"data": {"type": "status", "id": "default", "attributes": {
        "status": state,
        "paused": paused,
        "stopped": stopped,
        "running": !ended && !stopped,
        "model": s.model,
        "elapsed_s": s.started.elapsed().as_secs(),
        "level": level.as_ref().map(|(l, elapsed)| json!({
            "index": l.index,
            "label": l.label,
            "levels": s.levels,
            "elapsed_s": elapsed.as_secs(),
            "paused_s": l.paused_s,
            "started_with": offered(l.started_with),
        })),
        "offered": level.as_ref().map(|(l, _)| offered(l.offered)),
        "vus": vus,
        "vus-max": vus_max,
        "max_rate": s.max_rate,
        "second": last,
        "server": s.server.as_ref().map(|rx| rx.borrow().clone()),
        "controls": s.control.events().len(),
        "merge": s.merge.as_ref().map(|m| m.lock().unwrap_or_else(|e| e.into_inner()).clone()),
    }}})
}

/// `GET /v1/status`.
pub async fn get_status(State(s): State<Arc<WebState>>) -> Json<Value> {
    Json(status(&s))
}

/// `GET /v1/control`: every change so far.
pub async fn get_control(State(s): State<Arc<WebState>>) -> Json<Vec<ControlEvent>> {
    Json(s.control.events())
}

/// `GET /v1/config`: the run's settings, secrets redacted as in summary.json.
pub async fn get_config(State(s): State<Arc<WebState>>) -> Json<Value> {
    Json(s.config.clone())
}

/// `PATCH /v1/status`'s body, k6's: `{"data": {"attributes": {…}}}`.
#[derive(Debug, Deserialize)]
pub struct Patch {
    data: PatchData,
}

#[derive(Debug, Deserialize)]
struct PatchData {
    attributes: Attributes,
}

/// What a PATCH may change.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attributes {
    paused: Option<bool>,
    stopped: Option<bool>,
    vus: Option<u32>,
    rate: Option<f64>,
    end_level: Option<bool>,
}

/// One action asked for, as the handlers and the PATCH share them.
#[derive(Debug, Clone, Copy)]
pub enum Action {
    Pause,
    Resume,
    EndLevel,
    Stop,
    Rate(f64),
    Concurrency(u32),
}

/// Do `a` for `client`; the change (if any) is announced on stderr and in the feed.
fn act(s: &WebState, a: Action, client: &str) -> Result<Option<ControlEvent>, Refused> {
    let c = &s.control;
    let e = match a {
        Action::Pause => c.pause(client),
        Action::Resume => c.resume(client),
        Action::EndLevel => Some(c.end_current_level(client)?),
        // After the run, while it lingers: a stop only closes the server.
        Action::Stop if s.ended() => {
            s.linger_end.cancel();
            None
        }
        Action::Stop => {
            let e = c.stop(client);
            if e.is_some() {
                (s.on_stop)();
            }
            e
        }
        Action::Rate(r) => Some(c.set_rate(r, client)?),
        Action::Concurrency(n) => Some(c.set_concurrency(n, client)?),
    };
    if let Some(e) = &e {
        s.announce(e);
    }
    Ok(e)
}

/// The control verbs' checks (token, origin), before a body is read: the refusal, if any.
fn guard(s: &WebState, headers: &HeaderMap) -> Option<Response> {
    check_control(s.token.as_ref(), headers).err().map(|d| {
        let (code, text) = d.answer();
        error(code, text.trim())
    })
}

/// Check, act, answer with the status.
fn control(s: &WebState, headers: &HeaderMap, peer: SocketAddr, actions: &[Action]) -> Response {
    if let Some(r) = guard(s, headers) {
        return r;
    }
    if s.merge.is_some() && actions.iter().any(|a| !matches!(a, Action::Stop)) {
        return error(
            StatusCode::CONFLICT,
            "this page is a merge following shards: it steers none of them; control applies to each shard's own process",
        );
    }
    for a in actions {
        if let Err(e) = act(s, *a, &peer.to_string()) {
            let code = match e {
                Refused::NoLevel => StatusCode::CONFLICT,
                _ => StatusCode::UNPROCESSABLE_ENTITY,
            };
            return error(code, e);
        }
    }
    Json(status(s)).into_response()
}

/// `PATCH /v1/status`.
pub async fn patch_status(
    State(s): State<Arc<WebState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if let Some(r) = guard(&s, &headers) {
        return r;
    }
    let p: Patch = match serde_json::from_slice(&body) {
        Ok(p) => p,
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("bad body: {e}")),
    };
    let at = p.data.attributes;
    let mut actions = Vec::new();
    match at.paused {
        Some(true) => actions.push(Action::Pause),
        Some(false) => actions.push(Action::Resume),
        None => {}
    }
    if let Some(n) = at.vus {
        actions.push(Action::Concurrency(n));
    }
    if let Some(r) = at.rate {
        actions.push(Action::Rate(r));
    }
    if at.end_level == Some(true) {
        actions.push(Action::EndLevel);
    }
    if at.stopped == Some(true) {
        actions.push(Action::Stop);
    }
    control(&s, &headers, peer, &actions)
}

/// The body of `POST /v1/load`: a rate or a concurrency.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadBody {
    rate: Option<f64>,
    concurrency: Option<u32>,
}

/// `POST /v1/load`.
pub async fn post_load(
    State(s): State<Arc<WebState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if let Some(r) = guard(&s, &headers) {
        return r;
    }
    let action = match serde_json::from_slice::<LoadBody>(&body) {
        Ok(LoadBody {
            rate: Some(r),
            concurrency: None,
        }) => Action::Rate(r),
        Ok(LoadBody {
            rate: None,
            concurrency: Some(n),
        }) => Action::Concurrency(n),
        Ok(_) => {
            return error(
                StatusCode::BAD_REQUEST,
                "give one of `rate` or `concurrency`",
            )
        }
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("bad body: {e}")),
    };
    control(&s, &headers, peer, &[action])
}

/// `POST /v1/pause`, `/v1/resume`, `/v1/end_level`, `/v1/stop`.
pub async fn post_verb(
    State(s): State<Arc<WebState>>,
    Path(verb): Path<String>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    let action = match verb.as_str() {
        "pause" => Action::Pause,
        "resume" => Action::Resume,
        "end_level" => Action::EndLevel,
        "stop" => Action::Stop,
        _ => return error(StatusCode::NOT_FOUND, format!("no action `{verb}`")),
    };
    control(&s, &headers, peer, &[action])
}
