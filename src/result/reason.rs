//! Why an attempt failed, beside its class: the closed set of reasons every report counts,
//! each with a fixed index and a stable `class.reason` key.

use super::closed_reason::ClosedReason;
use super::h2_reason::{h2_code_key, H2Code, ProtocolReason};
use serde::{Deserialize, Serialize};

/// Why a response was not understood (class `other`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OtherReason {
    /// The status line is not `HTTP/1.x NNN ...`.
    MalformedStatusLine,
    /// A header line, `Content-Length` or the framing headers are invalid.
    MalformedHead,
    /// The response head is longer than the client accepts (64 KiB).
    HeadTooLarge,
    /// More header fields than the client accepts.
    TooManyHeaders,
    /// The chunked framing is invalid (size line, CRLF after data, trailers).
    BadChunk,
    /// A 1xx status the client cannot act on (101 Switching Protocols), or more interim
    /// responses before the final one than any server sends (over five).
    Unexpected1xx,
    /// A 3xx: hubload never follows redirects on the publish path.
    Unexpected3xx,
    /// The bytes are not HTTP at all.
    NotHttp,
    /// A 2xx with a form body that does not say `hub.mode=accepted`, or another status
    /// outside the known classes.
    UnexpectedBody,
    /// A failure that fits no other class (kept so every attempt is counted somewhere).
    Unknown,
}

/// Why a TLS handshake failed (class `tls_error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TlsReason {
    /// The certificate chain does not lead to a trusted root (`--ca-cert` missing?).
    UnknownIssuer,
    /// The certificate is not valid for the host name in the URL.
    NameMismatch,
    /// The certificate is expired or not yet valid.
    Expired,
    /// The certificate is malformed, revoked or otherwise refused.
    BadCertificate,
    /// The handshake itself failed: no common version or cipher, an alert, bad records.
    Handshake,
    /// Anything else.
    Other,
}

/// Which local resource the generator itself ran out of (class `client_error`): never the
/// hub's fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientReason {
    /// EMFILE / ENFILE: too many open files.
    TooManyOpenFiles,
    /// EADDRNOTAVAIL / EADDRINUSE on connect: no free ephemeral port.
    NoEphemeralPorts,
    /// ENOBUFS / ENOMEM: the kernel had no buffers.
    NoBuffers,
    /// Any other local socket error.
    Other,
}
/// A reason of any class that has one; counted per level in a fixed array
/// ([`Reason::index`]) and named `class.reason` in `summary.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    Other(OtherReason),
    Tls(TlsReason),
    Client(ClientReason),
    /// The error code of a `stream_reset`.
    Reset(H2Code),
    /// A `timeout_response` whose request body was blocked by HTTP/2 flow control.
    FlowControl,
    /// Why a `protocol_error`.
    Protocol(ProtocolReason),
    /// What the broker ended under a Service Bus send (`conn_closed`).
    Closed(ClosedReason),
    /// The error code of the GOAWAY that ended a stream (`goaway`).
    GoAway(H2Code),
    /// The HTTP proxy in front refused the tunnel (`conn_refused`).
    ProxyRefused,
}

impl Reason {
    /// Number of reasons; the length of every per-reason counter array.
    pub const COUNT: usize = 59;

    /// Every reason, in index order.
    pub const ALL: [Reason; Reason::COUNT] = [
        Reason::Other(OtherReason::MalformedStatusLine),
        Reason::Other(OtherReason::MalformedHead),
        Reason::Other(OtherReason::HeadTooLarge),
        Reason::Other(OtherReason::TooManyHeaders),
        Reason::Other(OtherReason::BadChunk),
        Reason::Other(OtherReason::Unexpected1xx),
        Reason::Other(OtherReason::Unexpected3xx),
        Reason::Other(OtherReason::NotHttp),
        Reason::Other(OtherReason::UnexpectedBody),
        Reason::Other(OtherReason::Unknown),
        Reason::Tls(TlsReason::UnknownIssuer),
        Reason::Tls(TlsReason::NameMismatch),
        Reason::Tls(TlsReason::Expired),
        Reason::Tls(TlsReason::BadCertificate),
        Reason::Tls(TlsReason::Handshake),
        Reason::Tls(TlsReason::Other),
        Reason::Client(ClientReason::TooManyOpenFiles),
        Reason::Client(ClientReason::NoEphemeralPorts),
        Reason::Client(ClientReason::NoBuffers),
        Reason::Client(ClientReason::Other),
        Reason::Reset(H2Code::NoError),
        Reason::Reset(H2Code::ProtocolError),
        Reason::Reset(H2Code::InternalError),
        Reason::Reset(H2Code::FlowControlError),
        Reason::Reset(H2Code::StreamClosed),
        Reason::Reset(H2Code::FrameSizeError),
        Reason::Reset(H2Code::Cancel),
        Reason::Reset(H2Code::CompressionError),
        Reason::Reset(H2Code::EnhanceYourCalm),
        Reason::Reset(H2Code::Http11Required),
        Reason::Reset(H2Code::Other),
        Reason::FlowControl,
        Reason::Protocol(ProtocolReason::Protocol),
        Reason::Protocol(ProtocolReason::Internal),
        Reason::Protocol(ProtocolReason::FlowControl),
        Reason::Protocol(ProtocolReason::SettingsTimeout),
        Reason::Protocol(ProtocolReason::StreamClosed),
        Reason::Protocol(ProtocolReason::FrameSize),
        Reason::Protocol(ProtocolReason::Compression),
        Reason::Protocol(ProtocolReason::EnhanceYourCalm),
        Reason::Protocol(ProtocolReason::PingFlood),
        Reason::Protocol(ProtocolReason::SettingsFlood),
        Reason::Protocol(ProtocolReason::FrameFlood),
        Reason::Protocol(ProtocolReason::NotH2),
        Reason::Protocol(ProtocolReason::Other),
        Reason::Closed(ClosedReason::SessionEnded),
        Reason::Closed(ClosedReason::LinkDetached),
        Reason::GoAway(H2Code::NoError),
        Reason::GoAway(H2Code::ProtocolError),
        Reason::GoAway(H2Code::InternalError),
        Reason::GoAway(H2Code::FlowControlError),
        Reason::GoAway(H2Code::StreamClosed),
        Reason::GoAway(H2Code::FrameSizeError),
        Reason::GoAway(H2Code::Cancel),
        Reason::GoAway(H2Code::CompressionError),
        Reason::GoAway(H2Code::EnhanceYourCalm),
        Reason::GoAway(H2Code::Http11Required),
        Reason::GoAway(H2Code::Other),
        Reason::ProxyRefused,
    ];

    /// Index into per-reason counter arrays.
    pub fn index(self) -> usize {
        match self {
            Reason::Other(r) => r as usize,
            Reason::Tls(r) => 10 + r as usize,
            Reason::Client(r) => 16 + r as usize,
            Reason::Reset(c) => 20 + c as usize,
            Reason::FlowControl => 31,
            Reason::Protocol(r) => 32 + r as usize,
            Reason::Closed(r) => 45 + r as usize,
            Reason::GoAway(c) => 47 + c as usize,
            Reason::ProxyRefused => 58,
        }
    }

    /// The stable key, `class.reason` (e.g. `other.head_too_large`).
    pub fn name(self) -> &'static str {
        match self {
            Reason::Other(r) => match r {
                OtherReason::MalformedStatusLine => "other.malformed_status_line",
                OtherReason::MalformedHead => "other.malformed_head",
                OtherReason::HeadTooLarge => "other.head_too_large",
                OtherReason::TooManyHeaders => "other.too_many_headers",
                OtherReason::BadChunk => "other.bad_chunk",
                OtherReason::Unexpected1xx => "other.unexpected_1xx",
                OtherReason::Unexpected3xx => "other.unexpected_3xx",
                OtherReason::NotHttp => "other.not_http",
                OtherReason::UnexpectedBody => "other.unexpected_body",
                OtherReason::Unknown => "other.unknown",
            },
            Reason::Tls(r) => match r {
                TlsReason::UnknownIssuer => "tls_error.unknown_issuer",
                TlsReason::NameMismatch => "tls_error.name_mismatch",
                TlsReason::Expired => "tls_error.expired",
                TlsReason::BadCertificate => "tls_error.bad_certificate",
                TlsReason::Handshake => "tls_error.handshake",
                TlsReason::Other => "tls_error.other",
            },
            Reason::Client(r) => match r {
                ClientReason::TooManyOpenFiles => "client_error.too_many_open_files",
                ClientReason::NoEphemeralPorts => "client_error.no_ephemeral_ports",
                ClientReason::NoBuffers => "client_error.no_buffers",
                ClientReason::Other => "client_error.other",
            },
            Reason::Reset(c) => h2_code_key!("stream_reset", c),
            Reason::FlowControl => "timeout_response.flow_control",
            Reason::Protocol(r) => match r {
                ProtocolReason::Protocol => "protocol_error.protocol",
                ProtocolReason::Internal => "protocol_error.internal",
                ProtocolReason::FlowControl => "protocol_error.flow_control",
                ProtocolReason::SettingsTimeout => "protocol_error.settings_timeout",
                ProtocolReason::StreamClosed => "protocol_error.stream_closed",
                ProtocolReason::FrameSize => "protocol_error.frame_size",
                ProtocolReason::Compression => "protocol_error.compression",
                ProtocolReason::EnhanceYourCalm => "protocol_error.enhance_your_calm",
                ProtocolReason::PingFlood => "protocol_error.ping_flood",
                ProtocolReason::SettingsFlood => "protocol_error.settings_flood",
                ProtocolReason::FrameFlood => "protocol_error.frame_flood",
                ProtocolReason::NotH2 => "protocol_error.not_h2",
                ProtocolReason::Other => "protocol_error.other",
            },
            Reason::Closed(r) => match r {
                ClosedReason::SessionEnded => "conn_closed.session_ended",
                ClosedReason::LinkDetached => "conn_closed.link_detached",
            },
            Reason::GoAway(c) => h2_code_key!("goaway", c),
            Reason::ProxyRefused => "conn_refused.proxy",
        }
    }

    /// The reason with this key, if any.
    pub fn from_name(name: &str) -> Option<Reason> {
        Reason::ALL.into_iter().find(|r| r.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_order_matches_indices_and_names_are_unique() {
        for (i, r) in Reason::ALL.iter().enumerate() {
            assert_eq!(r.index(), i, "{r:?}");
            assert_eq!(Reason::from_name(r.name()), Some(*r));
        }
        let mut names: Vec<_> = Reason::ALL.iter().map(|r| r.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Reason::COUNT);
    }
}
