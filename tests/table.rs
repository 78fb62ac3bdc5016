//! The terminal table, exactly: `table.txt` of a fixed report (the sample summary fixture) is
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

#[test]
fn table_txt_of_the_sample_report_matches_its_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let summary = fixture("sample-summary.json");
    let out = bin(
        &["report", summary.to_str().unwrap(), "--out", "r"],
        dir.path(),
    );
    assert_exit(&out, 0);
    let got = std::fs::read_to_string(dir.path().join("r/table.txt")).unwrap();
    let snapshot = fixture("sample-table.txt");
    if std::env::var_os("HUBLOAD_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&snapshot, &got).unwrap();
    }
    let want = std::fs::read_to_string(&snapshot).unwrap_or_default();
    assert!(
        got == want,
        "table.txt differs from {}:\n--- got ---\n{got}\n--- want ---\n{want}",
        snapshot.display()
    );
}
