//! Per-request results: the closed set of outcome classes and the pure classifier.

pub mod classify;
mod outcome;

pub use outcome::{
    Attempt, Class, ClientReason, ConnErrorKind, H2Code, OtherReason, Outcome, Reason, TimeoutKind,
    TlsReason,
};
