//! hubload-servicebus: an Azure Service Bus sender over AMQP 1.0, and a local emulator.
//!
//! - [`ConnectionString`]: the parsed, validated connection string (key redacted in `Debug`).
//! - [`given_token`]: a pre-made token given in the connection string (`SharedAccessSignature`).
//! - [`sas`]: SAS tokens (HMAC-SHA256), made by the sender and checked by the emulator.
//! - [`SbSender`]: a pool of AMQP connections with CBS auth, token refresh and reconnects.
//! - [`SbReceiver`]: a peek-lock receiver on one subscription, with re-attach on link loss.
//! - [`emulator`]: a Service Bus stand-in on fe2o3-amqp's acceptor, for tests and demos.
//! - [`admin`]: the emulator's entity-management API (ATOM/XML over HTTP).
//! - [`transport`]: AMQP over WebSockets (`TransportType=AmqpWebSockets`), both ends.
//!
//! See docs/protocol.md §6 for the wire facts and README.md for why not `azure_messaging_servicebus`.

pub mod connection_string;
pub mod emulator;
pub mod given_token;
/// The emulator's administration API (it lives in `emulator`, beside the state it serves).
pub use emulator::admin;
mod error;
mod message;
pub mod outcome;
mod receiver;
pub mod sas;
mod sender;
pub mod transport;

pub use connection_string::{ConnStrError, ConnectionString};
pub use error::SbError;
pub use message::OutgoingMessage;
pub use outcome::{SendOutcome, SendResult};
pub use receiver::{ReceiveError, Received, ReceiverConfig, SbReceiver};
pub use sender::{tls_connector, SbSender, SenderConfig};
pub use transport::TransportType;
