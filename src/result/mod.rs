//! Per-request results: the closed set of outcome classes and the pure classifier.

pub mod classify;
mod outcome;
pub mod server_timing_header;

pub use outcome::{
    Attempt, Class, ClientReason, ConnErrorKind, H2Code, OtherReason, Outcome, ProtocolReason,
    Reason, TimeoutKind, TlsReason,
};
pub use server_timing_header::ServerTimings;
