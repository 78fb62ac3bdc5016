//! The report's one home. `document.rs` is the report: the one serializable document
//! (summary.json) every format renders. `model/` holds its rows and sections and builds a level's
//! row from its statistics; `judge/` judges the rows (gates, capacity, what-if) into the verdicts
//! the document carries. The `Format` trait (`format.rs`) is one rendered file, `formats.rs` lists
//! them, `writer.rs` writes them atomically; the writers are the other files and folders here
//! (the table's parts in `table/`, the page's in `html/`). This file only declares and re-exports.
//!
//! Inside, data flows one way: writers → `document` → `judge` → `model`.

pub mod csv;
pub mod delivery_csv;
pub mod document;
pub mod fairness_csv;
pub mod fairness_file;
mod format;
pub mod formats;
pub mod hlog;
pub mod html;
pub mod json;
pub mod jtl;
pub mod judge;
pub mod latency_csv;
pub mod level_lines;
pub mod model;
pub mod observe_notes;
pub mod precision;
pub mod server_csv;
pub mod subscribers_file;
pub mod table;
pub mod topic_names;
pub mod topics_csv;
pub mod topics_file;
pub mod whatif_csv;
pub mod writer;

pub use format::Format;
pub use html::HtmlFormat;
