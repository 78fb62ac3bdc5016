//! The hub's routes: `/stats`, `/metrics`, `/admin/faults`, and the hub on every other path.

use axum::routing::get;
use axum::Router;

use crate::state::HubState;
use crate::{admin, handlers};

/// The hub's routes: `/stats`, `/metrics`, `/admin/faults` (GET, PUT), and the hub itself
/// on every other path. Usable without a socket (e.g. with `tower::ServiceExt::oneshot`);
/// connection resets need [`crate::serve`].
pub fn router(state: HubState) -> Router {
    Router::new()
        .route("/stats", get(admin::stats))
        .route("/metrics", get(admin::prometheus))
        .route(
            "/admin/faults",
            get(admin::get_faults).put(admin::put_faults),
        )
        .fallback(handlers::hub)
        .with_state(state)
}
