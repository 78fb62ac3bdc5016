//! hubload: a load tester for WebSub hubs and the Azure Service Bus behind them.

pub mod app;
pub mod cli;
pub mod config;
pub mod engine;
pub mod gate;
pub mod judge;
pub mod kind;
pub mod report;
pub mod result;
pub mod run;
pub mod secret;
pub mod shard;
pub mod stats;
pub mod subscriber;
pub mod targets;
pub mod topic_server;
pub mod verdict;
pub mod workload;
