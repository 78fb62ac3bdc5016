//! Serving one of hubload's own axum servers (the topic server; the callback server has its
//! own lean loop) on a bound listener in the background until the returned token stops it.

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Serve `app` on `listener` in a task of its own; cancel the token for a graceful stop. A
/// server that fails is logged once, naming `what`.
pub fn spawn(listener: TcpListener, app: axum::Router, what: &'static str) -> CancellationToken {
    let stop = CancellationToken::new();
    let s = stop.clone();
    tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(s.cancelled_owned())
            .await;
        if let Err(e) = served {
            tracing::warn!(error = %e, "{what} stopped");
        }
    });
    stop
}
