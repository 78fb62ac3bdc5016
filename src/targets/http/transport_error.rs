//! Why an exchange produced no response, the outcome class each reason is counted in, and
//! which reason a socket error is.

use std::io;

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
    /// The HTTP proxy in front refused the tunnel to the hub with this status.
    #[error("proxy refused the tunnel ({0})")]
    ProxyRefused(u16),
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
            TransportError::ProxyRefused(status) => Outcome::ProxyRefused(status),
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

/// Map a socket error to its transport class. The generator's own resource limits
/// (descriptors, ephemeral ports, kernel buffers) are [`TransportError::Client`]: they must
/// never be read as the hub's failures.
pub(crate) fn io_error(e: &io::Error) -> TransportError {
    if let Some(reason) = e.raw_os_error().and_then(local_resource) {
        return TransportError::Client(reason);
    }
    match e.kind() {
        io::ErrorKind::ConnectionRefused => TransportError::Conn(ConnErrorKind::Refused),
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe => TransportError::Conn(ConnErrorKind::Reset),
        io::ErrorKind::UnexpectedEof => TransportError::Conn(ConnErrorKind::Closed),
        io::ErrorKind::AddrNotAvailable | io::ErrorKind::AddrInUse => {
            TransportError::Client(ClientReason::NoEphemeralPorts)
        }
        io::ErrorKind::OutOfMemory => TransportError::Client(ClientReason::NoBuffers),
        kind => TransportError::Io(kind),
    }
}

/// The local resource an OS error code says the generator ran out of.
fn local_resource(code: i32) -> Option<ClientReason> {
    match code {
        libc::EMFILE | libc::ENFILE => Some(ClientReason::TooManyOpenFiles),
        libc::EADDRNOTAVAIL | libc::EADDRINUSE => Some(ClientReason::NoEphemeralPorts),
        libc::ENOBUFS | libc::ENOMEM => Some(ClientReason::NoBuffers),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_map_to_classes() {
        let os = |code| io_error(&io::Error::from_raw_os_error(code)).outcome();
        use ClientReason::*;
        assert_eq!(os(libc::EMFILE), Outcome::ClientError(TooManyOpenFiles));
        assert_eq!(os(libc::ENFILE), Outcome::ClientError(TooManyOpenFiles));
        assert_eq!(
            os(libc::EADDRNOTAVAIL),
            Outcome::ClientError(NoEphemeralPorts)
        );
        assert_eq!(os(libc::ENOBUFS), Outcome::ClientError(NoBuffers));
        assert_eq!(os(libc::ENOMEM), Outcome::ClientError(NoBuffers));
        assert_eq!(
            os(libc::ECONNREFUSED),
            Outcome::ConnError(ConnErrorKind::Refused)
        );
        assert_eq!(
            os(libc::ECONNRESET),
            Outcome::ConnError(ConnErrorKind::Reset)
        );
        assert_eq!(os(libc::EPIPE), Outcome::ConnError(ConnErrorKind::Reset));
        let kind = |k| io_error(&io::Error::from(k)).outcome();
        assert_eq!(
            kind(io::ErrorKind::UnexpectedEof),
            Outcome::ConnError(ConnErrorKind::Closed)
        );
        assert_eq!(
            kind(io::ErrorKind::Other),
            Outcome::Other(OtherReason::Unknown)
        );
        assert_ne!(
            TransportError::Timeout(TimeoutKind::Connect)
                .outcome()
                .class(),
            crate::result::Class::ClientError
        );
    }
}
