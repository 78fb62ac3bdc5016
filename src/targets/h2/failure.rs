//! How an HTTP/2 stream or connection failed, as an outcome class (RFC 9113 §8.7 decides
//! which of them were not processed).

use crate::result::{H2Code, Outcome};
use crate::targets::http::io_error;

/// The outcome of a stream that failed after it was handed to the connection.
///
/// - a `RST_STREAM` from the server: `refused_stream` for REFUSED_STREAM, else
///   `stream_reset` with the code;
/// - a `GOAWAY` from the server that ended this stream: `goaway` (h2 fails a stream with the
///   GOAWAY only when its id is above the last-stream-id, or when the connection ends with
///   the GOAWAY's error before the stream completes);
/// - a socket error: as HTTP/1.1 counts it (`conn_reset`, `conn_closed`, `client_error`);
/// - anything h2 itself refused (a malformed frame or header block, a connection error it
///   raised): `protocol_error`.
pub(super) fn stream_outcome(e: &h2::Error) -> Outcome {
    if let Some(io) = e.get_io() {
        return io_error(io).outcome();
    }
    if e.is_remote() && e.is_go_away() {
        return Outcome::GoAway;
    }
    if e.is_remote() && e.is_reset() {
        return match e.reason() {
            Some(h2::Reason::REFUSED_STREAM) => Outcome::RefusedStream,
            Some(r) => Outcome::StreamReset(H2Code::from_u32(r.into())),
            None => Outcome::StreamReset(H2Code::Other),
        };
    }
    tracing::debug!(error = %e, "h2 stream failed: protocol_error");
    Outcome::ProtocolError
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resets_carry_their_code() {
        let reset = |r| stream_outcome(&h2::Error::from(r));
        // `From<Reason>` makes a local error (h2 refusing): a protocol error, not a reset.
        assert_eq!(reset(h2::Reason::CANCEL), Outcome::ProtocolError);
        assert_eq!(H2Code::from_u32(0x8), H2Code::Cancel);
        assert_eq!(H2Code::from_u32(0xd), H2Code::Http11Required);
        assert_eq!(H2Code::from_u32(0x7), H2Code::Other);
    }
}
