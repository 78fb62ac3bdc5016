//! What a link does when its entity is deleted through the administration API: Azure
//! detaches it with `amqp:not-found` ("The messaging entity … could not be found"), so the
//! client's next attach is refused the same way (or, on this emulator without `--strict`,
//! makes a new, empty entity of the same name).

use fe2o3_amqp::types::definitions::{self, AmqpError};
use tokio::sync::watch;

use super::amqp_errors::amqp_error;

/// Wait until the deletion signal moves and `still_there` says the link's entity is gone.
/// Never returns while it is there (nor once the signal's sender is dropped).
pub async fn entity_gone(rx: &mut watch::Receiver<u64>, still_there: impl Fn() -> bool) {
    loop {
        if rx.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
        if !still_there() {
            return;
        }
    }
}

/// The error a link on the deleted entity `path` is detached with.
pub fn not_found(path: &str) -> definitions::Error {
    amqp_error(
        AmqpError::NotFound.into(),
        format!("The messaging entity '{path}' could not be found: it was deleted."),
    )
}
