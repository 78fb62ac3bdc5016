//! Integration tests of the reference hub: real sockets on 127.0.0.1, exact counts.

mod admission;
mod broker;
mod broker_admin;
mod broker_load;
mod dialect;
mod distribution;
mod emulator_cli;
mod faults;
mod framing;
mod hostile;
mod limits;
mod memory;
mod oneshot;
mod pipeline;
mod util;
mod websub;
