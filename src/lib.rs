//! hubload: a load tester for WebSub hubs and the Azure Service Bus behind them.

pub mod report;
pub mod result;
pub mod shard;
pub mod stats;
pub mod target;
pub mod workload;
