//! One complete HTTP response as the client keeps it, and how it is classified.

use crate::result::Outcome;

/// Most body bytes kept in [`Response::body`]; the rest is read and counted, not stored.
pub const BODY_CAP: usize = 64 * 1024;

/// One complete response.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Response {
    /// Status code of the final (non-1xx) response.
    pub status: u16,
    /// The `Content-Type` header value, as sent.
    pub content_type: Option<Vec<u8>>,
    /// The decoded body (chunk framing removed), at most [`BODY_CAP`] bytes.
    pub body: Vec<u8>,
    /// Bytes read off the wire for this response: status line, headers (of any skipped 1xx
    /// responses too), body with its chunk framing and trailers.
    pub bytes_received: u64,
    /// Bytes of the request as rendered for this exchange (head and body), 0 when no
    /// connection took it (the exchange failed before rendering it).
    pub request_bytes: u64,
    /// The final response's `Server-Timing` metrics (read only when the header is present).
    pub server_timing: crate::result::ServerTimings,
    /// The final response's `Retry-After`, read only on a 429 or a 503 (the answers a
    /// client retries after waiting).
    pub retry_after: crate::result::RetryAfter,
}

impl Response {
    /// Forget the last exchange's status, body and byte count (keeping the allocations): what
    /// every exchange does first, so one that fails before reading a byte reports none.
    pub(crate) fn reset(&mut self) {
        self.status = 0;
        self.body.clear();
        self.bytes_received = 0;
        self.request_bytes = 0;
        self.server_timing = crate::result::ServerTimings::NONE;
        self.retry_after = crate::result::RetryAfter::NONE;
    }

    /// Whether this status's `Retry-After` is read: a 429 or a 503.
    pub(crate) fn reads_retry_after(status: u16) -> bool {
        matches!(status, 429 | 503)
    }

    /// Classify this response (docs/protocol.md §2: a body saying `hub.mode=denied` wins).
    pub fn outcome(&self) -> Outcome {
        crate::result::classify::classify_http(
            self.status,
            self.content_type.as_deref(),
            &self.body,
        )
    }
}
