//! Reports: the `Report` model (`model.rs`), the `Reporter` trait (`reporter.rs`) and one
//! reporter per file. This file only declares and re-exports.

pub mod align;
pub mod csv;
pub mod delivery_csv;
pub mod hlog;
pub mod html;
pub mod json;
pub mod jtl;
pub mod latency_csv;
pub mod precision;
mod reporter;
pub mod table;
pub mod table_delivery;
pub mod topics_csv;
pub mod whatif_csv;
pub mod writer;

pub use html::HtmlReporter;
pub use reporter::Reporter;
