//! The terminal table, exactly: `table.txt` of fixed reports (the sample summary fixture, and
//! a real run with subscribers stopped by a signal in its last level's delivery grace) is
//! compared byte for byte with a snapshot. After an intended change to the table's format,
//! regenerate the snapshot with
//! `HUBLOAD_UPDATE_SNAPSHOTS=1 cargo test -p hubload --test integration table::` and review
//! the diff.

use std::path::{Path, PathBuf};

use crate::util::{assert_exit, bin};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reports")
        .join(name)
}

/// `hubload report SUMMARY` writes exactly the snapshot's table.txt.
fn table_txt_matches(summary: &str, snapshot: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let summary = fixture(summary);
    let out = bin(
        &["report", summary.to_str().unwrap(), "--out", "r"],
        dir.path(),
    );
    assert_exit(&out, 0);
    let got = std::fs::read_to_string(dir.path().join("r/table.txt")).unwrap();
    let snapshot = fixture(snapshot);
    if std::env::var_os("HUBLOAD_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&snapshot, &got).unwrap();
    }
    let want = std::fs::read_to_string(&snapshot).unwrap_or_default();
    assert!(
        got == want,
        "table.txt differs from {}:\n--- got ---\n{got}\n--- want ---\n{want}",
        snapshot.display()
    );
    got
}

#[test]
fn table_txt_of_the_sample_report_matches_its_snapshot() {
    table_txt_matches("sample-summary.json", "sample-table.txt");
}

/// The delivery block of a stopped run: level 2 lost 44 deliveries (its grace ran out), level
/// 4 owed 44 when the signal came, shown as NotYet and never as Lost.
#[test]
fn table_txt_of_a_stopped_delivery_run_matches_its_snapshot() {
    let got = table_txt_matches("delivery-stopped.json", "delivery-stopped-table.txt");
    let summary: hubload::report::document::Report =
        serde_json::from_str(&std::fs::read_to_string(fixture("delivery-stopped.json")).unwrap())
            .unwrap();
    let block: Vec<&str> = got
        .lines()
        .skip_while(|l| !l.starts_with("End-to-end delivery"))
        .collect();
    for l in &summary.levels {
        let c = &l.delivery.as_ref().unwrap().counts;
        let row = block
            .iter()
            .map(|r| r.split_whitespace().collect::<Vec<_>>())
            .find(|r| r[0] == l.label)
            .unwrap();
        let want = [c.expected, c.delivered, c.lost, c.not_yet_delivered].map(|n| n.to_string());
        assert_eq!(row[1..5], want, "level {}", l.label);
    }
    let owed: u64 = summary
        .levels
        .iter()
        .map(|l| l.delivery.as_ref().unwrap().counts.not_yet_delivered)
        .sum();
    assert!(owed > 0);
    assert_eq!(
        block.last().copied(),
        Some(format!(
            "NotYet: {owed} deliveries still owed when the run was stopped before the delivery \
             grace had passed; not counted lost."
        ))
        .as_deref()
    );
}
