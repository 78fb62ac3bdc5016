//! hubload-servicebus: an Azure Service Bus sender over AMQP 1.0, and a local emulator.
//!
//! [`ConnectionString`] (key redacted), [`given_token`] and [`sas`] (tokens), [`SbSender`]
//! (pooled connections, CBS auth, reconnects), [`SbReceiver`] (peek-lock, re-attach),
//! [`emulator`] (a stand-in on fe2o3-amqp's acceptor) with its [`admin`] API, and
//! [`transport`] (AMQP over WebSockets, both ends).
//!
//! docs/protocol.md §6 has the wire facts; README.md says why not `azure_messaging_servicebus`.

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
