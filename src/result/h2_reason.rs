//! The reasons of HTTP/2's failure classes: the error code a stream was reset with
//! (`stream_reset`), and why the connection broke the protocol (`protocol_error`).

use serde::{Deserialize, Serialize};

/// An HTTP/2 error code (RFC 9113 §7) a stream was reset with, or a GOAWAY carried: the reason
/// of `stream_reset` and of `goaway`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum H2Code {
    /// NO_ERROR (0x0).
    NoError,
    /// PROTOCOL_ERROR (0x1).
    ProtocolError,
    /// INTERNAL_ERROR (0x2).
    InternalError,
    /// FLOW_CONTROL_ERROR (0x3).
    FlowControlError,
    /// STREAM_CLOSED (0x5).
    StreamClosed,
    /// FRAME_SIZE_ERROR (0x6).
    FrameSizeError,
    /// CANCEL (0x8).
    Cancel,
    /// COMPRESSION_ERROR (0x9).
    CompressionError,
    /// ENHANCE_YOUR_CALM (0xb).
    EnhanceYourCalm,
    /// HTTP_1_1_REQUIRED (0xd).
    Http11Required,
    /// Any other code (SETTINGS_TIMEOUT, CONNECT_ERROR, INADEQUATE_SECURITY, unknown codes).
    Other,
}

/// The key of a reason `$class.<code>` for an [`H2Code`], e.g. `stream_reset.cancel`: one
/// spelling of the codes for every class that carries one.
macro_rules! h2_code_key {
    ($class:literal, $code:expr) => {
        match $code {
            H2Code::NoError => concat!($class, ".no_error"),
            H2Code::ProtocolError => concat!($class, ".protocol_error"),
            H2Code::InternalError => concat!($class, ".internal_error"),
            H2Code::FlowControlError => concat!($class, ".flow_control_error"),
            H2Code::StreamClosed => concat!($class, ".stream_closed"),
            H2Code::FrameSizeError => concat!($class, ".frame_size_error"),
            H2Code::Cancel => concat!($class, ".cancel"),
            H2Code::CompressionError => concat!($class, ".compression_error"),
            H2Code::EnhanceYourCalm => concat!($class, ".enhance_your_calm"),
            H2Code::Http11Required => concat!($class, ".http_1_1_required"),
            H2Code::Other => concat!($class, ".other"),
        }
    };
}
pub(super) use h2_code_key;

impl H2Code {
    /// The code of RFC 9113 §7's number (REFUSED_STREAM is a class of its own, not a code here).
    pub fn from_u32(code: u32) -> H2Code {
        match code {
            0x0 => H2Code::NoError,
            0x1 => H2Code::ProtocolError,
            0x2 => H2Code::InternalError,
            0x3 => H2Code::FlowControlError,
            0x5 => H2Code::StreamClosed,
            0x6 => H2Code::FrameSizeError,
            0x8 => H2Code::Cancel,
            0x9 => H2Code::CompressionError,
            0xb => H2Code::EnhanceYourCalm,
            0xd => H2Code::Http11Required,
            _ => H2Code::Other,
        }
    }
}

/// Why an HTTP/2 connection or stream broke the protocol (class `protocol_error`): the error
/// code h2 raised on what the server sent (a connection error ends every stream of the
/// connection, a stream error one), one of h2's guards, or a server that does not speak
/// HTTP/2. What the server itself reset or ended is `stream_reset` or `goaway` instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProtocolReason {
    /// PROTOCOL_ERROR: a frame or header block RFC 9113 forbids (a malformed response, a
    /// frame on a stream in the wrong state, a bad SETTINGS value).
    Protocol,
    /// INTERNAL_ERROR.
    Internal,
    /// FLOW_CONTROL_ERROR: the server sent more than its window, or overflowed one.
    FlowControl,
    /// SETTINGS_TIMEOUT.
    SettingsTimeout,
    /// STREAM_CLOSED: a frame on a stream already closed.
    StreamClosed,
    /// FRAME_SIZE_ERROR: a frame longer than allowed or of the wrong size for its type.
    FrameSize,
    /// COMPRESSION_ERROR: a header block HPACK cannot decode.
    Compression,
    /// ENHANCE_YOUR_CALM: one of h2's abuse guards (too many CONTINUATION frames, too many
    /// streams it had to reset).
    EnhanceYourCalm,
    /// More PING frames than the flood guard allows (1,000 in a second).
    PingFlood,
    /// More SETTINGS frames than the flood guard allows (1,000 in a second).
    SettingsFlood,
    /// More PRIORITY, unknown or empty frames than the flood guard allows (1,000 in a second).
    FrameFlood,
    /// The server does not speak HTTP/2: it answered the connection preface with HTTP/1.x,
    /// or chose another protocol by ALPN.
    NotH2,
    /// Any other error h2 raised.
    Other,
}

impl ProtocolReason {
    /// The reason of an error code h2 raised itself (RFC 9113 §7).
    pub fn from_code(code: u32) -> ProtocolReason {
        match code {
            0x1 => ProtocolReason::Protocol,
            0x2 => ProtocolReason::Internal,
            0x3 => ProtocolReason::FlowControl,
            0x4 => ProtocolReason::SettingsTimeout,
            0x5 => ProtocolReason::StreamClosed,
            0x6 => ProtocolReason::FrameSize,
            0x9 => ProtocolReason::Compression,
            0xb => ProtocolReason::EnhanceYourCalm,
            _ => ProtocolReason::Other,
        }
    }
}
