//! AMQP client errors as sentences for people: what failed and why, never a `Debug` dump.

use std::io;

use fe2o3_amqp::connection::OpenError;
use fe2o3_amqp::transport::Error as TransportError;
use fe2o3_amqp::types::definitions;

use crate::outcome::condition_str;

/// Why an AMQP open (header exchange, SASL, `open`) failed.
pub(crate) fn open_error(e: &OpenError) -> String {
    match e {
        OpenError::Io(e) => io_error(e),
        OpenError::TransportError(t) => transport_error(t),
        OpenError::ProtocolHeaderMismatch(_) => {
            "the peer answered with a protocol header that is not AMQP 1.0".into()
        }
        OpenError::SaslError { code, .. } => {
            format!(
                "SASL refused the connection (outcome code {})",
                code.clone() as u8
            )
        }
        OpenError::RemoteClosed => "the broker closed the connection during the open".into(),
        OpenError::RemoteClosedWithError(e) => {
            format!(
                "the broker closed the connection during the open: {}",
                error(e)
            )
        }
        OpenError::DecodeError(s) => format!("a frame could not be decoded ({})", one_line(s)),
        other => one_line(&other.to_string()),
    }
}

/// Why reading or writing frames failed.
pub(crate) fn transport_error(e: &TransportError) -> String {
    match e {
        TransportError::Io(e) => io_error(e),
        TransportError::IdleTimeoutElapsed => {
            "the broker sent nothing within the idle timeout".into()
        }
        TransportError::DecodeError(s) => format!("a frame could not be decoded ({})", one_line(s)),
        TransportError::NotImplemented(_) => {
            "the broker used an AMQP feature hubload does not implement".into()
        }
        TransportError::FramingError => "the broker sent a malformed frame".into(),
    }
}

/// An I/O error as a short sentence; `InvalidData` is what the frame decoder reports for a
/// frame larger than the maximum frame size or a malformed length.
pub(crate) fn io_error(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => "the broker closed the connection".into(),
        io::ErrorKind::ConnectionReset => "the broker reset the connection".into(),
        io::ErrorKind::ConnectionRefused => "the connection was refused".into(),
        io::ErrorKind::InvalidData => format!(
            "the broker sent a frame larger than the maximum frame size or malformed ({})",
            one_line(&e.to_string())
        ),
        _ => one_line(&e.to_string()),
    }
}

/// An AMQP error: its condition and, when given, its description.
pub(crate) fn error(e: &definitions::Error) -> String {
    let condition = condition_str(&e.condition);
    match &e.description {
        Some(d) => format!("{condition} ({})", one_line(d)),
        None => condition,
    }
}

/// Keep an error on one line (some upstream messages span several).
pub(crate) fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_oversized_frame_is_a_sentence_not_a_debug_dump() {
        // What tokio-util's length-delimited decoder gives for a frame over the limit.
        let e = OpenError::Io(io::Error::new(
            io::ErrorKind::InvalidData,
            "frame size too big",
        ));
        let s = open_error(&e);
        assert_eq!(
            s,
            "the broker sent a frame larger than the maximum frame size or malformed (frame size too big)"
        );
        assert!(!s.contains("Custom") && !s.contains('{'));
    }

    #[test]
    fn each_open_failure_names_its_cause() {
        let eof = OpenError::Io(io::Error::from(io::ErrorKind::UnexpectedEof));
        assert_eq!(open_error(&eof), "the broker closed the connection");
        let idle = OpenError::TransportError(TransportError::IdleTimeoutElapsed);
        assert_eq!(
            open_error(&idle),
            "the broker sent nothing within the idle timeout"
        );
        let closed = OpenError::RemoteClosedWithError(definitions::Error::new(
            definitions::AmqpError::NotAllowed,
            Some("no\nthanks".into()),
            None,
        ));
        assert_eq!(
            open_error(&closed),
            "the broker closed the connection during the open: amqp:not-allowed (no thanks)"
        );
    }
}
