//! A schema 4 summary.json (written by the build before each level held its `LevelStats`)
//! still loads, and `hubload report` and `hubload compare` write from it what that build wrote.

use std::path::Path;

use hubload::result::Class;

use crate::util::{bin, read_summary};

const INPUTS: [&str; 4] = [
    "summary.json",
    "topics.jsonl",
    "topic-names.jsonl",
    "fairness.jsonl",
];

/// Written by the schema 4 build itself (`hubload --tenants 3 --concurrency 2,4 --requests 40`,
/// then its `report` and `compare summary.json summary.json`).
const WRITTEN: [&str; 7] = [
    "aggregate.csv",
    "latency.csv",
    "latency.hlog",
    "table.txt",
    "topics.csv",
    "tenants.csv",
    "fairness.csv",
];

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reports/v4")
}

#[test]
fn a_schema_4_level_reads_back_into_its_statistics() {
    let r = read_summary(&fixtures());
    assert_eq!(r.schema_version, 4);
    assert_eq!(r.levels.len(), 2);
    for l in r.levels.iter().chain(&r.total) {
        let (s, d) = (&l.stats, &l.derived);
        assert_eq!(s.counts.total(), d.samples, "{}", l.label);
        assert_eq!(s.counts.get(Class::Accepted), d.samples, "{}", l.label);
        assert_eq!(s.events, d.events.total, "{}", l.label);
        assert_eq!(
            (s.min_us, s.max_us),
            (Some(d.latency_us.min), Some(d.latency_us.max))
        );
        assert_eq!(s.timeline.iter().map(|b| b.count).sum::<u64>(), d.samples);
        // The last end, from the first start and the span, gives the span back exactly.
        assert_eq!(s.span_secs(), d.span_s, "{}", l.label);
    }
    // The levels kept their histograms (TOTAL never had one).
    for l in &r.levels {
        assert_eq!(l.stats.latency.len(), l.derived.samples, "{}", l.label);
        assert_eq!(
            l.stats.latency.max(),
            l.derived.latency_us.max,
            "{}",
            l.label
        );
    }
    assert_eq!(
        r.levels[0].derived.samples + r.levels[1].derived.samples,
        80
    );
}

#[test]
fn report_and_compare_write_from_a_schema_4_summary_what_its_build_wrote() {
    let dir = tempfile::tempdir().unwrap();
    for name in INPUTS {
        std::fs::copy(fixtures().join(name), dir.path().join(name)).unwrap();
    }
    let o = bin(&["report", "summary.json"], dir.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for name in WRITTEN {
        let want = std::fs::read_to_string(fixtures().join(name)).unwrap();
        let got = std::fs::read_to_string(dir.path().join(name)).unwrap();
        assert_eq!(got, want, "{name}");
    }
    let o = bin(
        &["compare", "summary.json", "summary.json", "--out", "cmp"],
        dir.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let want = std::fs::read_to_string(fixtures().join("compare.csv")).unwrap();
    let got = std::fs::read_to_string(dir.path().join("cmp/compare.csv")).unwrap();
    assert_eq!(got, want, "compare.csv");
}
