//! report.html's delivery table: the terminal's delivery block, one row per level and TOTAL.

use std::fmt::Write;

use super::markup::{head_cells, table, Cell};
use super::svg::escape;
use crate::report::document::Report;
use crate::report::table::delivery::{cells, dead_letter_note, delivery_rows, not_yet_note, HEAD};
use crate::report::table::delivery_stages::{malformed_note, stage_rows, HEAD as STAGES_HEAD};

/// The "Deliveries per level" section (with the `NotYet` note when a level has any), or
/// nothing for a run without subscribers.
pub fn section(report: &Report) -> String {
    let rows = delivery_rows(report);
    if rows.is_empty() {
        return String::new();
    }
    let head = head_cells(&HEAD);
    let total = rows.last().is_some_and(|(l, _)| *l == "TOTAL") && report.total.is_some();
    let grid: Vec<Vec<Cell>> = rows
        .into_iter()
        .map(|(label, d)| {
            let mut row = vec![Cell::text(label)];
            row.extend(cells(d).into_iter().map(Cell::num));
            row
        })
        .collect();
    let mut out = String::from(
        "<h2 id=\"deliveries\">Deliveries per level (end-to-end latency: publish start → \
         subscriber, ms)</h2>",
    );
    out.push_str(&table(&head, &grid, total));
    if let Some(note) = not_yet_note(report) {
        let _ = write!(
            out,
            "<p class=\"meta\" id=\"not-yet\">{}</p>",
            escape(&note)
        );
    }
    if let Some(note) = dead_letter_note(report) {
        let _ = write!(
            out,
            "<p class=\"meta\" id=\"dead-lettered\">{}</p>",
            escape(&note)
        );
    }
    out.push_str(&stages(report));
    out
}

/// Where the deliveries' end-to-end latency went (the hub's `Hub-Timing`), when any carried it.
fn stages(report: &Report) -> String {
    let rows = stage_rows(report);
    let note = malformed_note(report);
    if rows.is_empty() && note.is_none() {
        return String::new();
    }
    let grid: Vec<Vec<Cell>> = rows
        .into_iter()
        .map(|[label, stage, rest @ ..]| {
            let mut row = vec![Cell::text(&label), Cell::text(&stage)];
            row.extend(rest.into_iter().map(Cell::num));
            row
        })
        .collect();
    let mut out = String::from(
        "<h3 id=\"delivery-stages\">Delivery stages (Hub-Timing, ms: end-to-end = hub + broker \
         + queue + rest per delivery)</h3>",
    );
    out.push_str(&table(&head_cells(&STAGES_HEAD), &grid, false));
    if let Some(note) = note {
        let _ = write!(out, "<p class=\"meta\">{}</p>", escape(&note));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::delivery_report::delivery_report;
    use crate::subscriber::DeliveryLevelStats;

    /// The sample run with deliveries: level `i` expected 100, delivered `100 - i`, and the
    /// rest lost, or (the last level, as a signal leaves it) not yet delivered.
    fn with_deliveries() -> Report {
        let mut report = crate::report::html::tests::sample();
        let n = report.levels.len();
        let mut total = DeliveryLevelStats::default();
        for (i, l) in report.levels.iter_mut().enumerate() {
            let mut s = DeliveryLevelStats::default();
            s.counts.expected = 100;
            s.counts.delivered = 100 - i as u64;
            match i + 1 == n {
                true => s.counts.not_yet_delivered = i as u64,
                false => s.counts.lost = i as u64,
            }
            total += &s;
            l.delivery = Some(delivery_report(&s, 10.0, 0));
        }
        report.total.as_mut().unwrap().delivery = Some(delivery_report(&total, 50.0, 0));
        report
    }

    #[test]
    fn one_row_per_level_and_total_with_not_yet_apart_from_lost() {
        let report = with_deliveries();
        let html = crate::report::html::render(&report);
        let doc = crate::report::html::tests::parse(&html);
        let heading = doc
            .descendants()
            .find(|n| n.attribute("id") == Some("deliveries"))
            .unwrap();
        let table = heading
            .next_sibling_element()
            .unwrap()
            .first_element_child()
            .unwrap();
        let rows: Vec<Vec<&str>> = table
            .descendants()
            .filter(|n| n.tag_name().name() == "tr")
            .map(|tr| {
                tr.children()
                    .filter(|c| c.is_element())
                    .map(|c| c.text().unwrap_or(""))
                    .collect()
            })
            .collect();
        assert_eq!(rows[0], HEAD);
        // Levels 1, 20, 50, 100, 200, then TOTAL: Expected, Delivered, Lost, NotYet.
        let counts: Vec<(&str, [&str; 4])> = rows[1..]
            .iter()
            .map(|r| (r[0], [r[1], r[2], r[3], r[4]]))
            .collect();
        assert_eq!(
            counts,
            [
                ("1", ["100", "100", "0", "0"]),
                ("20", ["100", "99", "1", "0"]),
                ("50", ["100", "98", "2", "0"]),
                ("100", ["100", "97", "3", "0"]),
                ("200", ["100", "96", "0", "4"]),
                ("TOTAL", ["500", "490", "6", "4"]),
            ]
        );
        let note = doc
            .descendants()
            .find(|n| n.attribute("id") == Some("not-yet"))
            .unwrap();
        assert_eq!(
            note.text(),
            Some(
                "NotYet: 4 deliveries still owed when the run was stopped before the delivery \
                 grace had passed; not counted lost."
            )
        );
        let plain = crate::report::html::render(&crate::report::html::tests::sample());
        assert!(!plain.contains("id=\"deliveries\""));
    }

    #[test]
    fn dead_lettered_events_have_their_note_only_when_there_are_any() {
        let mut report = with_deliveries();
        let html = crate::report::html::render(&report);
        assert!(!html.contains("id=\"dead-lettered\""), "none dead-lettered");
        let d = report.levels[1].delivery.as_mut().unwrap();
        d.counts.dead_lettered = 2;
        d.dead_letter_reasons = [("MaxDeliveryCountExceeded".to_string(), 2)].into();
        let html = crate::report::html::render(&report);
        let doc = crate::report::html::tests::parse(&html);
        let note = doc
            .descendants()
            .find(|n| n.attribute("id") == Some("dead-lettered"))
            .unwrap();
        assert_eq!(
            note.text(),
            Some(
                "DeadLettered: 2 events read from the subscriptions' dead-letter sub-queues \
                 (MaxDeliveryCountExceeded 2); not counted lost."
            )
        );
    }
}
