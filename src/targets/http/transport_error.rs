//! Why an exchange produced no response, and the outcome class each reason is counted in.

use crate::result::{ClientReason, ConnErrorKind, OtherReason, Outcome, TimeoutKind, TlsReason};

/// Why an attempt produced no response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// A deadline ran out: pool wait, connect or response.
    #[error("timeout ({0:?})")]
    Timeout(TimeoutKind),
    /// The connection was refused, reset, or closed before the response was complete.
    #[error("connection error ({0:?})")]
    Conn(ConnErrorKind),
    /// The server's bytes are not a valid HTTP/1.x response.
    #[error("protocol error ({0:?})")]
    Protocol(OtherReason),
    /// The TLS handshake failed.
    #[error("TLS handshake failed ({0:?})")]
    Tls(TlsReason),
    /// The generator ran out of a local resource (descriptors, ports, buffers).
    #[error("local resource exhausted ({0:?})")]
    Client(ClientReason),
    /// Any other socket error.
    #[error("I/O error: {0}")]
    Io(std::io::ErrorKind),
}

impl TransportError {
    /// The outcome class this error is counted in.
    pub fn outcome(&self) -> Outcome {
        match *self {
            TransportError::Timeout(kind) => Outcome::Timeout(kind),
            TransportError::Conn(kind) => Outcome::ConnError(kind),
            TransportError::Protocol(reason) => Outcome::Other(reason),
            TransportError::Tls(reason) => Outcome::TlsError(reason),
            TransportError::Client(reason) => Outcome::ClientError(reason),
            TransportError::Io(_) => Outcome::Other(OtherReason::Unknown),
        }
    }
}

/// The codec's verdict on a response head, as an outcome reason.
impl From<hubload_http1::response::ResponseError> for OtherReason {
    fn from(e: hubload_http1::response::ResponseError) -> OtherReason {
        use hubload_http1::response::ResponseError as E;
        match e {
            E::NotHttp => OtherReason::NotHttp,
            E::MalformedStatusLine => OtherReason::MalformedStatusLine,
            E::MalformedHead => OtherReason::MalformedHead,
            E::TooManyHeaders => OtherReason::TooManyHeaders,
        }
    }
}
