//! The reasons of a `conn_closed` that AMQP tells apart: what the broker ended under a send
//! while the connection itself stayed open.

use serde::{Deserialize, Serialize};

/// Why a Service Bus send ended `conn_closed` when its connection did not close.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClosedReason {
    /// The broker ended the session the send's link was on (`end`, with or without an error).
    SessionEnded,
    /// The broker detached the send's link (`detach` with an error, e.g.
    /// `amqp:link:detach-forced`).
    LinkDetached,
}
