//! The HTML report's "First failures" section: per level, the first failure of each class as
//! the hub answered it.

use super::markup::{table, Cell};
use crate::report::document::Report;

/// The section, or nothing when no level recorded a failure.
pub(crate) fn section(report: &Report) -> String {
    let rows: Vec<Vec<Cell>> = report
        .levels
        .iter()
        .flat_map(|l| {
            l.first_failures.iter().map(|(class, text)| {
                vec![
                    Cell::text(l.label.clone()),
                    Cell::text(class.clone()),
                    Cell::text(text.clone()),
                ]
            })
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let head = [
        Cell::text("Level"),
        Cell::text("Class"),
        Cell::text("First failure"),
    ];
    format!("<h2>First failures</h2>{}", table(&head, &rows, false))
}
