//! `whatif.csv`: the timeout what-if table, one row per level, shares as percentages.

use super::Format;
use crate::report::document::Report;
use crate::report::judge::verdict::{pct, timeout_label};

/// Writes `whatif.csv` (only the header line `Level,Attempts` when the report has no table).
#[derive(Debug, Default)]
pub struct WhatIfCsvFormat;

/// Header: `Level,Attempts`, then `Exceed <T>` per timeout, then `Failed events <T>` per
/// timeout; a column at or above the run's own timeout gets ` (>= run timeout)`.
pub fn render_what_if_csv(report: &Report) -> anyhow::Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["Level".to_string(), "Attempts".to_string()];
    if let Some(t) = &report.what_if {
        let cols: Vec<String> = t
            .timeouts_ms
            .iter()
            .zip(&t.beyond_run_timeout)
            .map(|(ms, beyond)| {
                let mark = if *beyond { " (>= run timeout)" } else { "" };
                format!("{}{mark}", timeout_label(*ms))
            })
            .collect();
        header.extend(cols.iter().map(|c| format!("Exceed {c}")));
        header.extend(
            cols.iter()
                .map(|c| format!("Failed events {c} ({} retries)", t.retries)),
        );
    }
    w.write_record(&header)?;
    for r in report.what_if.iter().flat_map(|t| &t.rows) {
        let mut row = vec![r.level.clone(), r.attempts.to_string()];
        row.extend(r.exceed_share.iter().map(|s| pct(*s)));
        row.extend(r.failed_event_share.iter().map(|s| pct(*s)));
        w.write_record(&row)?;
    }
    Ok(w.into_inner()?)
}

impl Format for WhatIfCsvFormat {
    fn file_name(&self) -> &'static str {
        "whatif.csv"
    }
    fn render(&self, report: &Report) -> anyhow::Result<Vec<u8>> {
        render_what_if_csv(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::judge::verdict::{WhatIfRow, WhatIfTable};

    fn report(what_if: Option<WhatIfTable>) -> Report {
        let mut r: Report = serde_json::from_value(serde_json::json!({
            "tool": "hubload", "version": "0", "target": "websub", "target_url": "",
            "model": "closed", "started_at": "", "finished_at": "", "partial": false,
            "config": null, "topics": [], "levels": []
        }))
        .unwrap();
        r.what_if = what_if;
        r
    }

    #[test]
    fn header_and_rows() {
        let t = WhatIfTable {
            timeouts_ms: vec![300, 5000],
            retries: 2,
            run_timeout_ms: 5000,
            beyond_run_timeout: vec![false, true],
            rows: vec![WhatIfRow {
                level: "20".into(),
                attempts: 1000,
                exceed_share: vec![0.002, 0.0],
                failed_event_share: vec![0.000008, 0.0],
            }],
        };
        let out = String::from_utf8(render_what_if_csv(&report(Some(t))).unwrap()).unwrap();
        assert_eq!(
            out,
            "Level,Attempts,Exceed 300ms,Exceed 5s (>= run timeout),\
             Failed events 300ms (2 retries),Failed events 5s (>= run timeout) (2 retries)\n\
             20,1000,0.200%,0.000%,0.001%,0.000%\n"
        );
        let none = String::from_utf8(render_what_if_csv(&report(None)).unwrap()).unwrap();
        assert_eq!(none, "Level,Attempts\n");
    }
}
