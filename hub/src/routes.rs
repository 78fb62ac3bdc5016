//! The hub's routes: `/stats`, `/metrics`, `/admin/faults`, and the hub on every other path.

use axum::routing::get;
use axum::Router;

use crate::state::HubState;
use crate::{handlers, operator_endpoints as ops};

/// The hub's routes: `/stats`, `/metrics`, `/admin/faults` (GET, PUT), and the hub itself
/// on every other path. Usable without a socket (e.g. with `tower::ServiceExt::oneshot`);
/// connection resets need [`crate::serve`].
pub fn router(state: HubState) -> Router {
    Router::new()
        .route("/stats", get(ops::stats))
        .route("/metrics", get(ops::prometheus))
        .route("/admin/faults", get(ops::get_faults).put(ops::put_faults))
        .fallback(handlers::hub)
        .with_state(state)
}
