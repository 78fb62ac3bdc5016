//! The list of formats a run writes: one `Format` per file of this folder.

use super::csv::CsvFormat;
use super::delivery_csv::DeliveryCsvFormat;
use super::fairness_csv::FairnessCsvFormat;
use super::hlog::HlogFormat;
use super::html::HtmlFormat;
use super::json::JsonFormat;
use super::latency_csv::LatencyCsvFormat;
use super::server_csv::ServerCsvFormat;
use super::table::TableFormat;
use super::topics_csv::{TenantsCsvFormat, TopicsCsvFormat};
use super::whatif_csv::WhatIfCsvFormat;
use super::Format;

/// Every format a run writes, in the order they are written. A new format is one file
/// beside this one and one line here.
pub fn all() -> Vec<Box<dyn Format + Send + Sync>> {
    vec![
        Box::new(TableFormat),
        Box::new(CsvFormat),
        Box::new(LatencyCsvFormat),
        Box::new(DeliveryCsvFormat),
        Box::new(HlogFormat),
        Box::new(TopicsCsvFormat),
        Box::new(TenantsCsvFormat),
        Box::new(FairnessCsvFormat),
        Box::new(JsonFormat),
        Box::new(WhatIfCsvFormat),
        Box::new(ServerCsvFormat),
        Box::new(HtmlFormat),
    ]
}
