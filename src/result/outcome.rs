//! The outcome of one attempt, as data: a closed enum of classes that every report counts.

use serde::{Deserialize, Serialize};

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
    /// Service Bus: rejected with `com.microsoft:server-busy`.
    Throttled,
    /// Service Bus: rejected with any other condition.
    Rejected,
    /// Service Bus: `amqp:unauthorized-access`, or CBS put-token answered 401.
    Unauthorized,
    /// Service Bus: `amqp:not-found`.
    NotFound,
    /// Service Bus: `amqp:link:message-size-exceeded`.
    TooLarge,
    /// Anything else (1xx/3xx statuses, unparsable responses, unexpected errors).
    Other,
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
    Other,
}

impl Class {
    /// Number of classes; the length of every per-class counter array.
    pub const COUNT: usize = 19;

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
        Class::Other,
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
            Class::Other => "other",
        }
    }

    /// Index into per-class counter arrays.
    pub fn index(self) -> usize {
        self as usize
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

    /// Whether the real publisher would retry this attempt: on a 5xx, a timeout or an I/O error
    /// (PROTOCOL.md §3); never on a denial or a 4xx. Service Bus throttling is retried too.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            Class::Http502 | Class::Http503 | Class::Http504 | Class::Http5xx | Class::Throttled
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
            Outcome::ConnError(ConnErrorKind::Refused) => Class::ConnRefused,
            Outcome::ConnError(ConnErrorKind::Reset) => Class::ConnReset,
            Outcome::ConnError(ConnErrorKind::Closed) => Class::ConnClosed,
            Outcome::Throttled => Class::Throttled,
            Outcome::Rejected => Class::Rejected,
            Outcome::Unauthorized => Class::Unauthorized,
            Outcome::NotFound => Class::NotFound,
            Outcome::TooLarge => Class::TooLarge,
            Outcome::Other => Class::Other,
        }
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
    fn class_names_are_unique() {
        let mut names: Vec<_> = Class::ALL.iter().map(|c| c.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Class::COUNT);
    }
}
