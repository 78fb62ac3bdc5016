//! How an HTTP/2 stream or connection failed, as an outcome class and reason (RFC 9113 §8.7
//! decides which of them were not processed).

use h2::Reason as Code;

use super::sniff::is_not_h2;
use crate::result::{H2Code, OtherReason, Outcome, ProtocolReason};
use crate::targets::http::io_error;

/// The outcome of a stream that failed after it was handed to the connection.
///
/// - a `RST_STREAM` from the server: `refused_stream` for REFUSED_STREAM, else
///   `stream_reset` with the code;
/// - a `GOAWAY` from the server that ended this stream: `goaway` with the GOAWAY's code (h2 fails a stream with the
///   GOAWAY only when its id is above the last-stream-id, or when the connection ends with
///   the GOAWAY's error before the stream completes);
/// - a socket error: as HTTP/1.1 counts it (`conn_reset`, `conn_closed`, `client_error`),
///   or `protocol_error.not_h2` when the server answered the preface with HTTP/1.x;
/// - anything h2 itself refused: the limits HTTP/1.1 has (`other.head_too_large`,
///   `other.too_many_headers`, `other.unexpected_1xx`), else `protocol_error` with the code
///   h2 raised or the guard that tripped ([`own`]).
pub(super) fn stream_outcome(e: &h2::Error) -> Outcome {
    if let Some(io) = e.get_io() {
        if is_not_h2(io) {
            return Outcome::ProtocolError(ProtocolReason::NotH2);
        }
        return io_error(io).outcome();
    }
    if e.is_remote() && e.is_go_away() {
        let code = e
            .reason()
            .map_or(H2Code::Other, |r| H2Code::from_u32(r.into()));
        return Outcome::GoAway(code);
    }
    if e.is_remote() && e.is_reset() {
        return match e.reason() {
            Some(Code::REFUSED_STREAM) => Outcome::RefusedStream,
            Some(r) => Outcome::StreamReset(H2Code::from_u32(r.into())),
            None => Outcome::StreamReset(H2Code::Other),
        };
    }
    let outcome = e
        .reason()
        .map_or(Outcome::ProtocolError(ProtocolReason::Other), own);
    tracing::debug!(error = %e, ?outcome, "h2 stream failed");
    outcome
}

/// The outcome of an error h2 raised itself with `code`: the vendored h2's own codes for the
/// limits and guards (vendor/h2/PATCHED.md), else the RFC 9113 code.
fn own(code: Code) -> Outcome {
    match code {
        Code::HEADER_LIST_TOO_LARGE | Code::HEADER_LIST_WAY_TOO_LARGE => {
            Outcome::Other(OtherReason::HeadTooLarge)
        }
        Code::TOO_MANY_HEADER_FIELDS => Outcome::Other(OtherReason::TooManyHeaders),
        Code::TOO_MANY_INFORMATIONAL => Outcome::Other(OtherReason::Unexpected1xx),
        Code::PING_FLOOD => Outcome::ProtocolError(ProtocolReason::PingFlood),
        Code::SETTINGS_FLOOD => Outcome::ProtocolError(ProtocolReason::SettingsFlood),
        Code::FRAME_FLOOD => Outcome::ProtocolError(ProtocolReason::FrameFlood),
        c => Outcome::ProtocolError(ProtocolReason::from_code(c.into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resets_carry_their_code() {
        let reset = |r| stream_outcome(&h2::Error::from(r));
        // `From<Reason>` makes a local error (h2 refusing): a protocol error, not a reset.
        assert_eq!(
            reset(Code::FRAME_SIZE_ERROR),
            Outcome::ProtocolError(ProtocolReason::FrameSize)
        );
        assert_eq!(
            reset(Code::CANCEL),
            Outcome::ProtocolError(ProtocolReason::Other)
        );
        assert_eq!(
            reset(Code::TOO_MANY_HEADER_FIELDS),
            Outcome::Other(OtherReason::TooManyHeaders)
        );
        assert_eq!(
            reset(Code::PING_FLOOD),
            Outcome::ProtocolError(ProtocolReason::PingFlood)
        );
        assert_eq!(H2Code::from_u32(0x8), H2Code::Cancel);
        assert_eq!(H2Code::from_u32(0xd), H2Code::Http11Required);
        assert_eq!(H2Code::from_u32(0x7), H2Code::Other);
    }
}
