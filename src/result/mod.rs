//! Per-request results: the closed set of outcome classes and the pure classifier.

pub mod classify;
mod closed_reason;
mod h2_reason;
mod outcome;
mod reason;
mod retry_after;
pub mod server_timing_header;

pub use closed_reason::ClosedReason;
pub use h2_reason::{H2Code, ProtocolReason};
pub use outcome::{Attempt, Class, ConnErrorKind, Outcome, TimeoutKind};
pub use reason::{ClientReason, OtherReason, Reason, TlsReason};
pub use retry_after::RetryAfter;
pub use server_timing_header::ServerTimings;
