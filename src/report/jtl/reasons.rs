//! The JTL response columns of the classes that carry a reason (`other`, `tls_error`,
//! `client_error`) and of `cancelled`: the exception JMeter's Apache HttpClient sampler
//! would have reported for the same failure, with the reason as the failure message.

use super::{non_http, Response};
use crate::result::{ClientReason, OtherReason, Outcome, TlsReason};

/// The response columns of a transport failure with a reason (no HTTP status was read).
/// Outcomes mapped elsewhere fall back to JMeter's generic I/O error.
pub(super) fn response(outcome: Outcome) -> Response {
    let failure = outcome.reason().map_or("", |r| r.name());
    let (exception, message) = match outcome {
        Outcome::Other(r) => match r {
            OtherReason::MalformedStatusLine | OtherReason::NotHttp => (
                "org.apache.http.ProtocolException",
                "The server failed to respond with a valid HTTP response",
            ),
            OtherReason::MalformedHead => ("org.apache.http.ProtocolException", "Invalid header"),
            OtherReason::HeadTooLarge => (
                "org.apache.http.MessageConstraintException",
                "Maximum line length limit exceeded",
            ),
            OtherReason::TooManyHeaders => (
                "org.apache.http.MessageConstraintException",
                "Maximum header count exceeded",
            ),
            OtherReason::BadChunk => (
                "org.apache.http.MalformedChunkCodingException",
                "Bad chunk header",
            ),
            _ => ("java.io.IOException", "Unexpected error"),
        },
        Outcome::TlsError(r) => (
            "javax.net.ssl.SSLHandshakeException",
            match r {
                TlsReason::UnknownIssuer => {
                    "unable to find valid certification path to requested target"
                }
                TlsReason::NameMismatch => "No subject alternative names matching the host name",
                TlsReason::Expired => "The certificate is expired or not yet valid",
                TlsReason::BadCertificate => "Received fatal alert: bad_certificate",
                TlsReason::Handshake => "Received fatal alert: handshake_failure",
                TlsReason::Other => "Remote host terminated the handshake",
            },
        ),
        Outcome::ClientError(r) => (
            "java.net.SocketException",
            match r {
                ClientReason::TooManyOpenFiles => "Too many open files",
                ClientReason::NoEphemeralPorts => "Cannot assign requested address",
                ClientReason::NoBuffers => "No buffer space available",
                ClientReason::Other => "Socket error",
            },
        ),
        Outcome::Cancelled => ("java.io.InterruptedIOException", "Request cancelled"),
        _ => ("java.io.IOException", "Unexpected error"),
    };
    non_http(exception, message, failure)
}
