//! The endpoints around the hub: `/stats`, `/metrics`, and `/admin/faults` (not counted as hub requests).

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::faults::FaultConfig;
use crate::state::HubState;
use crate::{metrics, params};

/// `GET /stats`.
pub(crate) async fn stats(State(state): State<HubState>) -> Response {
    Json(state.stats()).into_response()
}

/// `GET /metrics`.
pub(crate) async fn prometheus(State(state): State<HubState>) -> Response {
    let text = metrics::render(&state.stats(), state.inflight());
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

/// `GET /admin/faults`.
pub(crate) async fn get_faults(State(state): State<HubState>) -> Response {
    Json(state.faults()).into_response()
}

/// `PUT /admin/faults`: replace the fault settings with the JSON body; answers the new ones.
pub(crate) async fn put_faults(State(state): State<HubState>, body: Bytes) -> Response {
    let f: FaultConfig = match serde_json::from_slice(&body) {
        Ok(f) => f,
        Err(e) => return params::plain(StatusCode::BAD_REQUEST, format!("faults: {e}")),
    };
    if let Err(e) = f.validate() {
        return params::plain(StatusCode::BAD_REQUEST, e.to_string());
    }
    tracing::info!(faults = ?f, "fault settings replaced");
    state.set_faults(f);
    Json(state.faults()).into_response()
}
