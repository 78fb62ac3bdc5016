//! Reports: the `Reporter` trait (`reporter.rs`) and the list of formats (`formats.rs`), one
//! writer per format, and the manager that writes them (`writer.rs`). What they render is the
//! report model, `summary`. This file only declares and re-exports.

pub mod csv;
pub mod delivery_csv;
pub mod fairness_csv;
pub mod fairness_file;
mod formats;
pub mod hlog;
pub mod html;
pub mod json;
pub mod jtl;
pub mod latency_csv;
pub mod level_lines;
pub mod observe_notes;
pub mod precision;
mod reporter;
pub mod server_csv;
pub mod subscribers_file;
pub mod table;
pub mod table_delivery;
pub mod table_delivery_stages;
pub mod table_fairness;
pub mod table_server_timing;
pub mod topic_names;
pub mod topics_csv;
pub mod topics_file;
pub mod whatif_csv;
pub mod writer;

pub use formats::reporters;
pub use html::HtmlReporter;
pub use reporter::Reporter;
