//! The outcome of one attempt, as data: a closed enum of classes that every report counts.

use serde::{Deserialize, Serialize};

use super::closed_reason::ClosedReason;
use super::h2_reason::{H2Code, ProtocolReason};
use super::reason::{ClientReason, OtherReason, Reason, TlsReason};

/// Which deadline an attempt ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeoutKind {
    /// The TCP (or TLS/AMQP) connect did not finish within `--connect-timeout`.
    Connect,
    /// No pooled connection became free within `--pool-timeout`.
    PoolWait,
    /// The request was sent but the response did not complete within `--timeout`.
    Response,
}

/// How a connection failed before a complete response arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnErrorKind {
    /// The peer refused the connection.
    Refused,
    /// The peer reset the connection.
    Reset,
    /// The peer closed the connection before the response was complete.
    Closed,
}

/// What one attempt ended in. `classify` produces it; stats count it by [`Class`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// A 2xx whose body (when form-encoded) says `hub.mode=accepted`; for Service Bus, a settled *accepted*.
    Accepted,
    /// The body says `hub.mode=denied`, whatever the status.
    Denied,
    /// Any 4xx that is not a denial (status code kept).
    Http4xx(u16),
    /// 502 Bad Gateway.
    Http502,
    /// 503 Service Unavailable.
    Http503,
    /// 504 Gateway Timeout.
    Http504,
    /// Any other 5xx (status code kept).
    Http5xx(u16),
    /// The client gave up waiting.
    Timeout(TimeoutKind),
    /// The connection failed before the response was complete.
    ConnError(ConnErrorKind),
    /// Throttled: Service Bus rejected with `com.microsoft:server-busy`, or HTTP 429.
    Throttled,
    /// Service Bus: rejected with any other condition.
    Rejected,
    /// Service Bus: `amqp:unauthorized-access`, or CBS put-token answered 401.
    Unauthorized,
    /// Service Bus: `amqp:not-found`.
    NotFound,
    /// Service Bus: `amqp:link:message-size-exceeded`.
    TooLarge,
    /// The TLS handshake failed.
    TlsError(TlsReason),
    /// The generator ran out of a local resource (descriptors, ports, buffers).
    ClientError(ClientReason),
    /// The attempt was abandoned because the run was stopped.
    Cancelled,
    /// Anything else (1xx/3xx statuses, unparsable responses), with the reason.
    Other(OtherReason),
    /// HTTP/2: the stream was reset with REFUSED_STREAM (not processed; safe to retry).
    RefusedStream,
    /// HTTP/2: the stream was above the last-stream-id of the server's GOAWAY (not
    /// processed; safe to retry), with the GOAWAY's error code.
    GoAway(H2Code),
    /// HTTP/2: the stream was reset with any other error code (the reason).
    StreamReset(H2Code),
    /// HTTP/2: the connection broke the protocol (a connection error, a frame or header
    /// block the client refused, the server not speaking h2), with the reason.
    ProtocolError(ProtocolReason),
    /// HTTP/2: the request body was still blocked by flow control at the deadline
    /// (class `timeout_response`, reason `flow_control`).
    FlowControlTimeout,
    /// Service Bus: the broker ended the send's session or detached its link while the
    /// connection stayed open (class `conn_closed`, with the reason).
    AmqpClosed(ClosedReason),
    /// Service Bus: the HTTP proxy answered the tunnel's CONNECT with this status instead of
    /// opening it (class `conn_refused`, reason `proxy`).
    ProxyRefused(u16),
    /// A publish refused (404 or denied) while `--topic-churn` had its topic deregistered:
    /// the refusal the hub owes, not its error (docs/topic-churn.md).
    ExpectedRefusal,
}

/// The countable class of an [`Outcome`], without its payload. The order of
/// [`Class::ALL`] is the order of every report's columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    Accepted,
    Denied,
    Http4xx,
    Http502,
    Http503,
    Http504,
    Http5xx,
    TimeoutConnect,
    TimeoutPoolWait,
    TimeoutResponse,
    ConnRefused,
    ConnReset,
    ConnClosed,
    Throttled,
    Rejected,
    Unauthorized,
    NotFound,
    TooLarge,
    TlsError,
    ClientError,
    Cancelled,
    Other,
    RefusedStream,
    Goaway,
    StreamReset,
    ProtocolError,
    ExpectedRefusal,
}

impl Class {
    /// Number of classes; the length of every per-class counter array.
    pub const COUNT: usize = 27;

    /// Every class, in report order.
    pub const ALL: [Class; Class::COUNT] = [
        Class::Accepted,
        Class::Denied,
        Class::Http4xx,
        Class::Http502,
        Class::Http503,
        Class::Http504,
        Class::Http5xx,
        Class::TimeoutConnect,
        Class::TimeoutPoolWait,
        Class::TimeoutResponse,
        Class::ConnRefused,
        Class::ConnReset,
        Class::ConnClosed,
        Class::Throttled,
        Class::Rejected,
        Class::Unauthorized,
        Class::NotFound,
        Class::TooLarge,
        Class::TlsError,
        Class::ClientError,
        Class::Cancelled,
        Class::Other,
        Class::RefusedStream,
        Class::Goaway,
        Class::StreamReset,
        Class::ProtocolError,
        Class::ExpectedRefusal,
    ];

    /// Stable snake_case name used as a JSON key and in logs.
    pub fn name(self) -> &'static str {
        match self {
            Class::Accepted => "accepted",
            Class::Denied => "denied",
            Class::Http4xx => "http_4xx",
            Class::Http502 => "http_502",
            Class::Http503 => "http_503",
            Class::Http504 => "http_504",
            Class::Http5xx => "http_5xx",
            Class::TimeoutConnect => "timeout_connect",
            Class::TimeoutPoolWait => "timeout_pool_wait",
            Class::TimeoutResponse => "timeout_response",
            Class::ConnRefused => "conn_refused",
            Class::ConnReset => "conn_reset",
            Class::ConnClosed => "conn_closed",
            Class::Throttled => "throttled",
            Class::Rejected => "rejected",
            Class::Unauthorized => "unauthorized",
            Class::NotFound => "not_found",
            Class::TooLarge => "too_large",
            Class::TlsError => "tls_error",
            Class::ClientError => "client_error",
            Class::Cancelled => "cancelled",
            Class::Other => "other",
            Class::RefusedStream => "refused_stream",
            Class::Goaway => "goaway",
            Class::StreamReset => "stream_reset",
            Class::ProtocolError => "protocol_error",
            Class::ExpectedRefusal => "expected_refusal",
        }
    }

    /// The class with this [`name`](Self::name), if any.
    pub fn from_name(name: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Index into per-class counter arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// True for every class the errors count (the error %, its thresholds, the capacity
    /// finder): all but `accepted` and `expected_refusal`, a refusal `--topic-churn` caused.
    pub fn is_error(self) -> bool {
        !matches!(self, Class::Accepted | Class::ExpectedRefusal)
    }

    /// True for every class that is a client-side timeout.
    pub fn is_timeout(self) -> bool {
        matches!(
            self,
            Class::TimeoutConnect | Class::TimeoutPoolWait | Class::TimeoutResponse
        )
    }

    /// True for every class that is a connection error.
    pub fn is_conn_error(self) -> bool {
        matches!(
            self,
            Class::ConnRefused | Class::ConnReset | Class::ConnClosed
        )
    }

    /// True for the classes only HTTP/2 has.
    pub fn is_http2(self) -> bool {
        matches!(
            self,
            Class::RefusedStream | Class::Goaway | Class::StreamReset | Class::ProtocolError
        )
    }

    /// Whether the real publisher would retry this attempt: on a 5xx, a timeout or an I/O error
    /// (docs/protocol.md §3); never on a denial or a 4xx. Service Bus throttling is retried too.
    /// HTTP/2 streams refused or above a GOAWAY's last id were not processed, so they are
    /// safe to retry even for POST (RFC 9113 §8.7); any other stream reset is retried as a
    /// connection reset is.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            Class::Http502
                | Class::Http503
                | Class::Http504
                | Class::Http5xx
                | Class::Throttled
                | Class::RefusedStream
                | Class::Goaway
                | Class::StreamReset
        ) || self.is_timeout()
            || self.is_conn_error()
    }
}

impl Outcome {
    /// The countable class of this outcome.
    pub fn class(self) -> Class {
        match self {
            Outcome::Accepted => Class::Accepted,
            Outcome::Denied => Class::Denied,
            Outcome::Http4xx(_) => Class::Http4xx,
            Outcome::Http502 => Class::Http502,
            Outcome::Http503 => Class::Http503,
            Outcome::Http504 => Class::Http504,
            Outcome::Http5xx(_) => Class::Http5xx,
            Outcome::Timeout(TimeoutKind::Connect) => Class::TimeoutConnect,
            Outcome::Timeout(TimeoutKind::PoolWait) => Class::TimeoutPoolWait,
            Outcome::Timeout(TimeoutKind::Response) => Class::TimeoutResponse,
            Outcome::ConnError(ConnErrorKind::Refused) | Outcome::ProxyRefused(_) => {
                Class::ConnRefused
            }
            Outcome::ConnError(ConnErrorKind::Reset) => Class::ConnReset,
            Outcome::ConnError(ConnErrorKind::Closed) | Outcome::AmqpClosed(_) => Class::ConnClosed,
            Outcome::Throttled => Class::Throttled,
            Outcome::Rejected => Class::Rejected,
            Outcome::Unauthorized => Class::Unauthorized,
            Outcome::NotFound => Class::NotFound,
            Outcome::TooLarge => Class::TooLarge,
            Outcome::TlsError(_) => Class::TlsError,
            Outcome::ClientError(_) => Class::ClientError,
            Outcome::Cancelled => Class::Cancelled,
            Outcome::Other(_) => Class::Other,
            Outcome::RefusedStream => Class::RefusedStream,
            Outcome::GoAway(_) => Class::Goaway,
            Outcome::StreamReset(_) => Class::StreamReset,
            Outcome::ProtocolError(_) => Class::ProtocolError,
            Outcome::FlowControlTimeout => Class::TimeoutResponse,
            Outcome::ExpectedRefusal => Class::ExpectedRefusal,
        }
    }

    /// The reason counted beside the class, for the classes that carry one.
    pub fn reason(self) -> Option<Reason> {
        match self {
            Outcome::Other(r) => Some(Reason::Other(r)),
            Outcome::TlsError(r) => Some(Reason::Tls(r)),
            Outcome::ClientError(r) => Some(Reason::Client(r)),
            Outcome::StreamReset(c) => Some(Reason::Reset(c)),
            Outcome::FlowControlTimeout => Some(Reason::FlowControl),
            Outcome::ProtocolError(r) => Some(Reason::Protocol(r)),
            Outcome::AmqpClosed(r) => Some(Reason::Closed(r)),
            Outcome::GoAway(c) => Some(Reason::GoAway(c)),
            Outcome::ProxyRefused(_) => Some(Reason::ProxyRefused),
            _ => None,
        }
    }

    /// Whether the hub refused the publish because of its topic: a denial or a 404. While
    /// `--topic-churn` has the topic deregistered, such a refusal is expected.
    pub fn is_topic_refusal(self) -> bool {
        matches!(self, Outcome::Denied | Outcome::Http4xx(404))
    }

    /// The HTTP status, when the outcome carries one.
    pub fn status(self) -> Option<u16> {
        match self {
            Outcome::Http4xx(s) | Outcome::Http5xx(s) => Some(s),
            Outcome::Http502 => Some(502),
            Outcome::Http503 => Some(503),
            Outcome::Http504 => Some(504),
            _ => None,
        }
    }
}

/// One attempt as the target reports it. Times are `Instant`s; stats convert them.
#[derive(Debug, Clone, Copy)]
pub struct Attempt {
    /// What it ended in.
    pub outcome: Outcome,
    /// The HTTP status line's code, when a response head was read (0 otherwise).
    pub status: u16,
    /// Bytes written: request line, headers and body (or the AMQP transfer size).
    pub bytes_sent: u64,
    /// Bytes read: status line, headers and body.
    pub bytes_received: u64,
    /// The response's `Server-Timing` metrics ([`ServerTimings::NONE`](super::ServerTimings::NONE) without the header).
    pub server_timing: super::ServerTimings,
    /// The `Retry-After` of a 429 or 503 ([`RetryAfter::NONE`](super::RetryAfter::NONE)
    /// otherwise): how long a retry waits (`engine/retry_wait.rs`).
    pub retry_after: super::RetryAfter,
}

impl Attempt {
    /// An attempt abandoned in flight because the run was stopped (`cancelled`): what it
    /// sent and read is unknown to the caller, so both are counted as 0.
    pub const CANCELLED: Attempt = Attempt {
        outcome: Outcome::Cancelled,
        status: 0,
        bytes_sent: 0,
        bytes_received: 0,
        server_timing: super::ServerTimings::NONE,
        retry_after: super::RetryAfter::NONE,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_order_matches_indices() {
        for (i, c) in Class::ALL.iter().enumerate() {
            assert_eq!(c.index(), i, "{c:?}");
        }
    }

    #[test]
    fn an_outcome_fits_in_four_bytes() {
        assert!(std::mem::size_of::<Outcome>() <= 4);
    }

    #[test]
    fn class_names_are_unique() {
        let mut names: Vec<_> = Class::ALL.iter().map(|c| c.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Class::COUNT);
    }
}
