//! `fairness.jsonl`: every tenant's fairness row (`levels[].fairness.by_tenant`, and with
//! subscribers `fairness.delivery.by_tenant`), one JSON line per level
//! (`{"level":I,"label":L,"tenants":[TenantShare…],"delivery":[TenantDelivery…]}`), appended
//! once when the level ends, and TOTAL's (`"level":null`) when the run ends; and reading them
//! back into a loaded summary. The file's rules: `level_lines`.
//!
//! summary.json keeps each row's fairness figures (Jain's index, the spreads, the worst
//! tenants); the list of every tenant grows with the tenants, so it lives here.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::level_lines;
use crate::fairness::delivery::TenantDelivery;
use crate::fairness::{Fairness, TenantShare};
use crate::report::document::Report;

/// The file's name in the report directory (summary.json's `fairness_file`).
pub const FILE_NAME: &str = "fairness.jsonl";

/// One line: a level's (or TOTAL's) tenants with an attempt, by name.
#[derive(Debug, Serialize, Deserialize)]
struct TenantsLine<T, D> {
    /// Index of the level in summary.json's `levels`; `null` for TOTAL.
    level: Option<usize>,
    /// The row's label, as it has it.
    label: String,
    tenants: T,
    /// With subscribers: every tenant owed a delivery (absent without delivery figures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    delivery: Option<D>,
}

/// Start `dir`'s file empty; its name, for summary.json's `fairness_file`.
pub fn create(dir: &Path) -> anyhow::Result<String> {
    level_lines::create(dir, FILE_NAME)
}

/// Append the line of level `level` (`None`: TOTAL) with the tenants of `f` to `dir`'s file
/// and sync it.
pub fn append(dir: &Path, level: Option<usize>, label: &str, f: &Fairness) -> anyhow::Result<()> {
    let line = TenantsLine {
        level,
        label: label.to_string(),
        tenants: &f.by_tenant,
        delivery: f.delivery.as_ref().map(|d| &d.by_tenant),
    };
    level_lines::append(dir, FILE_NAME, &line)
}

/// Fill the fairness figures of `report` (read from `summary`) with their tenants from its
/// `fairness_file`. A summary with the tenants inline (written before the file) is left as
/// it is; a run that crashed before its end has no TOTAL line, and TOTAL no tenant rows.
pub fn attach(report: &mut Report, summary: &Path) -> anyhow::Result<()> {
    let field = "fairness_file";
    let Some(path) = level_lines::beside(summary, report.fairness_file.as_deref(), field)? else {
        return Ok(());
    };
    type Line = TenantsLine<Vec<TenantShare>, Vec<TenantDelivery>>;
    level_lines::for_each(&path, field, |n, l: Line| {
        let row = level_lines::row_of(report, l.level, &l.label, &path, n)?;
        if let Some(f) = row.and_then(|r| r.fairness.as_mut()) {
            f.by_tenant = l.tenants;
            if let (Some(d), Some(rows)) = (f.delivery.as_mut(), l.delivery) {
                d.by_tenant = rows;
            }
        }
        Ok(())
    })
}
