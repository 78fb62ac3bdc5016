//! hubload's integration tests: one binary, one module per area.

mod binary;
mod capture;
mod cli_errors;
mod creds;
mod csv_format;
mod delivery;
mod delivery_binary;
mod dialect;
mod first_failures;
mod flask_websub;
mod hlog;
mod https;
mod local_limits;
mod open_model;
mod profiles;
mod reconcile;
mod resolve;
mod schema;
mod servicebus;
mod shard_delivery;
mod shards;
mod stops;
mod subscriber;
mod table;
mod topics;
mod util;
