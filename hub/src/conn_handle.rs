//! The handle a handler uses to reset its own connection (put in each request by `serve`).

use std::sync::Arc;

use tokio::sync::Notify;

/// Put in every request's extensions by [`crate::serve`]: lets a handler reset its connection.
#[derive(Clone, Debug, Default)]
pub(crate) struct ConnHandle(Arc<Notify>);

impl ConnHandle {
    /// Ask the connection task to reset the connection (SO_LINGER 0, then close: a TCP RST).
    pub fn reset(&self) {
        self.0.notify_one();
    }

    /// Resolves when a handler has asked for a reset.
    pub async fn reset_asked(&self) {
        self.0.notified().await;
    }
}
