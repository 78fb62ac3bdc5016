//! Integration tests of the reference hub: real sockets on 127.0.0.1, exact counts.

mod admission;
mod broker;
mod broker_admin;
mod broker_load;
mod broker_tls;
mod dialect;
mod distribution;
mod emulator_cli;
mod faults;
mod framing;
mod hostile;
// The deadline tests' bound, shared with hubload's tests.
#[path = "../../tests/support/lateness.rs"]
mod lateness;
mod limits;
mod memory;
mod oneshot;
mod pipeline;
// The throw-away CA and the emulator's WebSocket port, shared with hubload-servicebus's tests.
#[path = "../../servicebus/tests/tls_common/mod.rs"]
mod tls_common;
mod util;
mod websub;
