//! The JTL response columns of each outcome: status and reason phrase for HTTP answers, and
//! for transport failures the exception JMeter's Apache HttpClient sampler would have
//! reported, with the reason (`other`, `tls_error`, `client_error`) as the failure message.

use crate::result::{
    ClientReason, ClosedReason, ConnErrorKind, OtherReason, Outcome, TimeoutKind, TlsReason,
};

/// The response columns of a row: code, message, success, failure message.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Response {
    pub code: String,
    pub message: String,
    pub success: bool,
    pub failure: &'static str,
}

/// A JMeter transport failure: the exception class and its message.
fn non_http(exception: &str, message: &str, failure: &'static str) -> Response {
    Response {
        code: format!("Non HTTP response code: {exception}"),
        message: format!("Non HTTP response message: {message}"),
        success: false,
        failure,
    }
}

fn reason(status: u16) -> String {
    http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("")
        .to_string()
}

/// Map an outcome to JMeter's response columns.
pub(super) fn response(outcome: Outcome, status: u16) -> Response {
    let status = if status != 0 {
        status
    } else {
        outcome.status().unwrap_or(0)
    };
    let http = |success: bool, failure: &'static str| Response {
        code: status.to_string(),
        message: reason(status),
        success,
        failure,
    };
    match outcome {
        // Service Bus settles without a status: JMeter's generic "OK" (SampleResult.setResponseCodeOK).
        Outcome::Accepted if status == 0 => Response {
            code: "200".into(),
            message: "OK".into(),
            success: true,
            failure: "",
        },
        Outcome::Accepted => http(true, ""),
        Outcome::Denied => http(false, "hub.mode=denied"),
        // Not an error (docs/topic-churn.md): a success row, the class kept as its message.
        Outcome::ExpectedRefusal => http(true, "expected_refusal"),
        Outcome::Http4xx(_)
        | Outcome::Http502
        | Outcome::Http503
        | Outcome::Http504
        | Outcome::Http5xx(_) => http(false, ""),
        Outcome::Other(OtherReason::Unexpected1xx) if status != 0 => {
            http(false, "unexpected informational response")
        }
        Outcome::Other(OtherReason::Unexpected3xx) if status != 0 => {
            http(false, "unexpected redirect (not followed)")
        }
        Outcome::Other(_) if status != 0 => {
            http(false, "unexpected response (no hub.mode=accepted)")
        }
        Outcome::Timeout(TimeoutKind::Response) => {
            non_http("java.net.SocketTimeoutException", "Read timed out", "")
        }
        Outcome::Timeout(TimeoutKind::PoolWait) => non_http(
            "org.apache.http.conn.ConnectionPoolTimeoutException",
            "Timeout waiting for connection from pool",
            "",
        ),
        Outcome::Timeout(TimeoutKind::Connect) => non_http(
            "org.apache.http.conn.ConnectTimeoutException",
            "Connect timed out",
            "",
        ),
        Outcome::ConnError(ConnErrorKind::Refused) => {
            non_http("java.net.ConnectException", "Connection refused", "")
        }
        Outcome::ConnError(ConnErrorKind::Reset) => {
            non_http("java.net.SocketException", "Connection reset", "")
        }
        Outcome::ConnError(ConnErrorKind::Closed) => non_http(
            "org.apache.http.NoHttpResponseException",
            "The target server failed to respond",
            "",
        ),
        // HTTP 429 (the status is the attempt's): a plain failed HTTP row.
        Outcome::Throttled if status != 0 => http(false, ""),
        // Service Bus: the AMQP condition stands in for the exception class.
        Outcome::Throttled => non_http(
            "com.microsoft:server-busy",
            "The request was throttled",
            "throttled",
        ),
        Outcome::Rejected => non_http("amqp:rejected", "The message was rejected", ""),
        // What the broker ended under the send, with the class's reason as the message.
        Outcome::AmqpClosed(r) => non_http(
            match r {
                ClosedReason::SessionEnded => "amqp:end",
                ClosedReason::LinkDetached => "amqp:detach",
            },
            match r {
                ClosedReason::SessionEnded => "The broker ended the session",
                ClosedReason::LinkDetached => "The broker detached the link",
            },
            outcome.reason().map_or("conn_closed", |r| r.name()),
        ),
        // The proxy's own answer to the tunnel's CONNECT, as JMeter shows a proxy's refusal.
        Outcome::ProxyRefused(code) => Response {
            code: code.to_string(),
            message: reason(code),
            success: false,
            failure: "conn_refused.proxy",
        },
        Outcome::Unauthorized => non_http("amqp:unauthorized-access", "Unauthorized access", ""),
        Outcome::NotFound => non_http("amqp:not-found", "The entity was not found", ""),
        Outcome::TooLarge => non_http(
            "amqp:link:message-size-exceeded",
            "The message is too large",
            "",
        ),
        // HTTP/2 (JMeter's HttpClient 4 has none): the exceptions of OkHttp, a Java client
        // that speaks it, with the class (and reason) as the failure message.
        Outcome::RefusedStream => non_http(
            "okhttp3.internal.http2.StreamResetException",
            "stream was reset: REFUSED_STREAM",
            "refused_stream",
        ),
        Outcome::GoAway(_) => non_http(
            "okhttp3.internal.http2.ConnectionShutdownException",
            "connection shut down (GOAWAY)",
            outcome.reason().map_or("goaway", |r| r.name()),
        ),
        Outcome::StreamReset(_) => non_http(
            "okhttp3.internal.http2.StreamResetException",
            "stream was reset",
            outcome.reason().map_or("stream_reset", |r| r.name()),
        ),
        Outcome::ProtocolError(_) => non_http(
            "java.net.ProtocolException",
            "HTTP/2 protocol error",
            outcome.reason().map_or("protocol_error", |r| r.name()),
        ),
        Outcome::FlowControlTimeout => non_http(
            "java.net.SocketTimeoutException",
            "Read timed out",
            "timeout_response.flow_control",
        ),
        Outcome::Other(_) | Outcome::TlsError(_) | Outcome::ClientError(_) | Outcome::Cancelled => {
            with_reason(outcome)
        }
    }
}

/// The response columns of a transport failure with a reason (no HTTP status was read).
/// Outcomes mapped elsewhere fall back to JMeter's generic I/O error.
fn with_reason(outcome: Outcome) -> Response {
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
