//! The list of formats a run writes: one `Reporter` per file of this folder.

use super::csv::CsvReporter;
use super::delivery_csv::DeliveryCsvReporter;
use super::fairness_csv::FairnessCsvReporter;
use super::hlog::HlogReporter;
use super::html::HtmlReporter;
use super::json::JsonReporter;
use super::latency_csv::LatencyCsvReporter;
use super::server_csv::ServerCsvReporter;
use super::table::TableReporter;
use super::topics_csv::{TenantsCsvReporter, TopicsCsvReporter};
use super::whatif_csv::WhatIfCsvReporter;
use super::Reporter;

/// Every reporter a run writes, in the order they are written. A new format is one file
/// beside this one and one line here.
pub fn reporters() -> Vec<Box<dyn Reporter + Send + Sync>> {
    vec![
        Box::new(TableReporter),
        Box::new(CsvReporter),
        Box::new(LatencyCsvReporter),
        Box::new(DeliveryCsvReporter),
        Box::new(HlogReporter),
        Box::new(TopicsCsvReporter),
        Box::new(TenantsCsvReporter),
        Box::new(FairnessCsvReporter),
        Box::new(JsonReporter),
        Box::new(WhatIfCsvReporter),
        Box::new(ServerCsvReporter),
        Box::new(HtmlReporter),
    ]
}
