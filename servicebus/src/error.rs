//! [`SbError`]: why a Service Bus sender could not be set up (per-send failures are data).

use crate::connection_string::ConnStrError;

/// A set-up failure of [`crate::SbSender::connect`]. One line; never contains the key.
#[derive(Debug, thiserror::Error)]
pub enum SbError {
    /// The connection string was refused.
    #[error(transparent)]
    ConnectionString(#[from] ConnStrError),
    /// A sender setting is out of range.
    #[error("Service Bus sender: {0}")]
    Config(String),
    /// CBS put-token was refused: the key name or key is wrong, or lacks Send rights.
    #[error("Service Bus refused the SAS token for {audience} (status {status}): check SharedAccessKeyName and SharedAccessKey")]
    Unauthorized {
        /// The audience the token was put for.
        audience: String,
        /// The CBS status code (401 or 403).
        status: u16,
    },
    /// CBS put-token answered 404: no such entity.
    #[error("Service Bus entity not found: {audience}")]
    NotFound {
        /// The audience the token was put for.
        audience: String,
    },
    /// The connection (TCP, TLS or AMQP open) failed or timed out.
    #[error("cannot connect to Service Bus at {endpoint}: {reason}")]
    Connect {
        /// `host:port`.
        endpoint: String,
        /// What went wrong, one line.
        reason: String,
    },
    /// Any other AMQP failure during set-up (session, CBS link).
    #[error("Service Bus AMQP set-up failed: {0}")]
    Amqp(String),
}
