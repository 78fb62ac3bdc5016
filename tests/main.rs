//! hubload's integration tests: one binary, one module per area.

mod binary;
mod cli_errors;
mod csv_format;
mod delivery;
mod hlog;
mod https;
mod local_limits;
mod open_model;
mod profiles;
mod reconcile;
mod schema;
mod servicebus;
mod shards;
mod subscriber;
mod table;
mod topics;
mod util;
