//! Exact tests of `compare` on two crafted summaries (tests/fixtures/reports/compare-*.json).
//!
//! Baseline levels 1, 20, 50; candidate levels 20, 50, 100; both have TOTAL. The numbers are
//! chosen so every delta is a round value (see the expectations below).

use std::path::PathBuf;

use super::render::{render_csv, render_text};
use super::*;
use crate::report::judge::rules::{Bound, Op};

pub(crate) fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/reports/{name}"))
}

fn pair() -> Comparison {
    let b = load_report(&fixture("compare-baseline.json")).unwrap();
    let c = load_report(&fixture("compare-candidate.json")).unwrap();
    compare(&b, &c)
}

fn row<'a>(cmp: &'a Comparison, label: &str) -> &'a LevelComparison {
    cmp.rows().find(|r| r.label == label).unwrap()
}

/// (metric, baseline, candidate, Δ, Δ %) for one level.
fn assert_level(cmp: &Comparison, label: &str, want: &[(Metric, f64, f64, f64, f64)]) {
    let r = row(cmp, label);
    for (m, b, c, abs, pct) in want {
        assert_eq!(
            r.baseline.unwrap().get(*m),
            Some(*b),
            "{label} {m:?} baseline"
        );
        assert_eq!(
            r.candidate.unwrap().get(*m),
            Some(*c),
            "{label} {m:?} candidate"
        );
        let d = r.delta(*m).unwrap();
        assert_eq!(d.abs, *abs, "{label} {m:?} Δ");
        let p = d.pct.unwrap();
        assert!((p - pct).abs() < 1e-9, "{label} {m:?} Δ% {p} != {pct}");
    }
}

#[test]
fn levels_are_matched_by_label_and_flagged() {
    let cmp = pair();
    let labels: Vec<&str> = cmp.levels.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(labels, ["1", "20", "50", "100"]);
    let presence: Vec<Presence> = cmp.levels.iter().map(|r| r.presence()).collect();
    assert_eq!(
        presence,
        [
            Presence::BaselineOnly,
            Presence::Both,
            Presence::Both,
            Presence::CandidateOnly
        ]
    );
    assert_eq!(row(&cmp, "1").delta(Metric::P(99)), None);
    assert_eq!(cmp.total.as_ref().unwrap().presence(), Presence::Both);
    assert_eq!(cmp.level_title, "Concurrency");
    assert_eq!(
        cmp.baseline_name,
        "websub run of 2026-11-30T01:00:00Z against http://127.0.0.1:8080/hub"
    );
}

#[test]
fn deltas_are_exact() {
    use Metric::*;
    let cmp = pair();
    assert_level(
        &cmp,
        "20",
        &[
            (Avg, 10.0, 11.0, 1.0, 10.0),
            (P(50), 8.0, 8.0, 0.0, 0.0),
            (P(95), 20.0, 25.0, 5.0, 25.0),
            (P(99), 40.0, 38.0, -2.0, -5.0),
            (Errors, 0.5, 1.5, 1.0, 200.0),
            (Rate, 2000.0, 1800.0, -200.0, -10.0),
        ],
    );
    assert_level(
        &cmp,
        "50",
        &[
            (Avg, 20.0, 19.0, -1.0, -5.0),
            (P(95), 50.0, 45.0, -5.0, -10.0),
            (P(99), 100.0, 130.0, 30.0, 30.0),
            (Errors, 2.0, 2.0, 0.0, 0.0),
            (Rate, 2500.0, 2750.0, 250.0, 10.0),
        ],
    );
    assert_level(
        &cmp,
        "TOTAL",
        &[
            (Avg, 15.0, 16.0, 1.0, 100.0 / 15.0),
            (P(50), 10.0, 12.0, 2.0, 20.0),
            (P(99), 80.0, 120.0, 40.0, 50.0),
            (Errors, 1.25, 1.75, 0.5, 40.0),
            (Rate, 2250.0, 2000.0, -250.0, -1000.0 / 90.0),
        ],
    );
}

#[test]
fn zero_baseline_has_no_relative_delta() {
    assert_eq!(
        Delta::between(0.0, 2.0),
        Delta {
            abs: 2.0,
            pct: None
        }
    );
    assert_eq!(Delta::between(0.0, 0.0).pct, Some(0.0));
    let rule: FailIf = "errors>+1%".parse().unwrap();
    assert!(rule.fails(Delta::between(0.0, 1.5)), "points, not relative");
    assert!(!rule.fails(Delta::between(0.0, 0.5)));
    let rel: FailIf = "p99>+10%".parse().unwrap();
    assert!(
        rel.fails(Delta::between(0.0, 0.001)),
        "from zero is infinitely worse"
    );
}

#[test]
fn fail_if_parses() {
    use Metric::*;
    // Spellings and canonical forms; the gate's own tests cover every bound and error.
    let cases: &[(&str, Metric, Op, Bound, &str)] = &[
        ("p99>+10%", P(99), Op::Gt, Bound::Relative(10.0), "p99>+10%"),
        ("avg>+5ms", Avg, Op::Gt, Bound::Ms(5.0), "avg>+5ms"),
        (
            "errors>+1%",
            Errors,
            Op::Gt,
            Bound::Percent(1.0),
            "errors>+1%",
        ),
        (
            "throughput<-10%",
            Rate,
            Op::Lt,
            Bound::Relative(-10.0),
            "throughput<-10%",
        ),
        (" P95 > 20 ms ", P(95), Op::Gt, Bound::Ms(20.0), "p95>+20ms"),
        ("mean>0.5ms", Avg, Op::Gt, Bound::Ms(0.5), "avg>+0.5ms"),
        (
            "tps<-100/s",
            Rate,
            Op::Lt,
            Bound::Number(-100.0),
            "throughput<-100/s",
        ),
        (
            "errors>+0.25pp",
            Errors,
            Op::Gt,
            Bound::Percent(0.25),
            "errors>+0.25%",
        ),
        ("p50>+5%", P(50), Op::Gt, Bound::Relative(5.0), "median>+5%"),
    ];
    for (text, metric, op, bound, canonical) in cases {
        let r: FailIf = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(
            (r.gate.metric, r.gate.op, r.gate.bound),
            (*metric, *op, *bound),
            "{text}"
        );
        assert_eq!(r.to_string(), *canonical);
    }
}

pub(crate) fn rules(list: &[&str]) -> Vec<FailIf> {
    list.iter().map(|r| r.parse().unwrap()).collect()
}

#[test]
fn check_finds_exactly_the_broken_levels() {
    let cmp = pair();
    let found = |list: &[&str]| -> Vec<String> {
        check(&cmp, &rules(list))
            .unwrap()
            .iter()
            .map(|v| format!("{} @ {}", v.rule, v.label))
            .collect()
    };
    assert_eq!(found(&["p99>+10%"]), ["p99>+10% @ 50", "p99>+10% @ TOTAL"]);
    assert_eq!(
        found(&["avg>+0.5ms"]),
        ["avg>+0.5ms @ 20", "avg>+0.5ms @ TOTAL"]
    );
    // Thresholds are strict: +1.0 points is not more than +1 %; -10 % is not less than -10 %.
    assert!(found(&["errors>+1%"]).is_empty());
    assert_eq!(found(&["errors>+0.5%"]), ["errors>+0.5% @ 20"]);
    assert_eq!(found(&["throughput<-10%"]), ["throughput<-10% @ TOTAL"]);
    assert_eq!(found(&["throughput<-200/s"]), ["throughput<-200/s @ TOTAL"]);
    assert_eq!(found(&["p99<-4%"]), ["p99<-4% @ 20"]);
    assert!(found(&["avg>+5ms", "p95>+30%"]).is_empty());
    // Levels on one side only are never checked.
    assert!(found(&["p99>+0ms"])
        .iter()
        .all(|v| !v.ends_with("@ 1") && !v.ends_with("@ 100")));
    let v = &check(&cmp, &rules(&["p99>+10%"])).unwrap()[0];
    assert_eq!(
        v.to_string(),
        "p99>+10%: level 50: 100.0 ms → 130.0 ms (+30.0 ms, +30.00%)"
    );
}

#[test]
fn fairness_and_isolation_rules_judge_the_candidate_s_figures() {
    let mut cmp = pair();
    cmp.candidate_name = "b".into();
    // Levels both runs have: 20, 50 and TOTAL. The baseline has a figure at 20 only.
    let set = |cmp: &mut Comparison,
               label: &str,
               side: fn(&mut LevelComparison) -> &mut Metrics,
               f: fn(&mut Metrics) -> &mut Option<f64>,
               v: f64| {
        let row = cmp
            .levels
            .iter_mut()
            .chain(cmp.total.as_mut())
            .find(|r| r.label == label);
        *f(side(row.unwrap())) = Some(v);
    };
    let cand: fn(&mut LevelComparison) -> &mut Metrics = |r| r.candidate.as_mut().unwrap();
    let base: fn(&mut LevelComparison) -> &mut Metrics = |r| r.baseline.as_mut().unwrap();
    let jain: fn(&mut Metrics) -> &mut Option<f64> = |m| &mut m.tenant_fairness;
    let quiet: fn(&mut Metrics) -> &mut Option<f64> = |m| &mut m.quiet_p99_increase;
    // Without the figure in the candidate, the rule is an error naming the level and the run.
    let e = check(&cmp, &rules(&["tenant_fairness<0.95"])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "--fail-if \"tenant_fairness<0.95\": tenant_fairness needs a fairness figure (it needs \
         two tenants with attempts, and goodput), and level 20 of the candidate run (b) has none"
    );
    for (label, v) in [("20", 0.9), ("50", 0.99), ("TOTAL", 0.95)] {
        set(&mut cmp, label, cand, jain, v);
    }
    set(&mut cmp, "20", base, jain, 1.0);
    let found = |cmp: &Comparison, list: &[&str]| -> Vec<String> {
        check(cmp, &rules(list))
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    // Strict, as every --fail-if rule: 0.95 is not below 0.95. The baseline is shown, not judged.
    assert_eq!(
        found(&cmp, &["tenant_fairness<0.95"]),
        ["tenant_fairness<0.95: level 20: candidate 0.900 (baseline 1.000)"]
    );
    assert_eq!(
        found(&cmp, &["jain<0.96"]),
        [
            "tenant_fairness<0.96: level 20: candidate 0.900 (baseline 1.000)",
            "tenant_fairness<0.96: level TOTAL: candidate 0.950"
        ]
    );
    assert!(found(&cmp, &["tenant_fairness<0.9"]).is_empty());
    // An isolation rule: every level both runs have, but TOTAL (which never has a verdict).
    let e = check(&cmp, &rules(&["quiet_errors>0.1%"])).unwrap_err();
    assert!(
        e.to_string()
            .contains("quiet_errors needs an isolation verdict (it needs --surge"),
        "{e}"
    );
    set(&mut cmp, "20", cand, quiet, 25.0);
    set(&mut cmp, "50", cand, quiet, 20.0);
    assert_eq!(
        found(&cmp, &["quiet_p99_increase>20%"]),
        ["quiet_p99_increase>20%: level 20: candidate 25.000%"]
    );
    assert!(found(&cmp, &["quiet_p99_increase>25%"]).is_empty());
    // `--surge …@levelN`: a level where neither run has a verdict (before level N) is passed
    // over, and the levels with one are judged; a candidate missing one the baseline has is
    // still an error.
    let mut lv = pair();
    lv.candidate_name = "b".into();
    set(&mut lv, "50", cand, quiet, 30.0);
    set(&mut lv, "50", base, quiet, 5.0);
    assert_eq!(
        found(&lv, &["quiet_p99_increase>20%"]),
        ["quiet_p99_increase>20%: level 50: candidate 30.000% (baseline 5.000%)"]
    );
    set(&mut lv, "20", base, quiet, 5.0);
    let e = check(&lv, &rules(&["quiet_p99_increase>20%"])).unwrap_err();
    assert!(
        e.to_string()
            .contains("level 20 of the candidate run (b) has none"),
        "{e}"
    );
}

#[test]
fn text_table() {
    let cmp = pair();
    let r = rules(&["p99>+10%", "errors>+1%"]);
    let text = render_text(&cmp, &r, &check(&cmp, &r).unwrap());
    let lines: Vec<&str> = text.lines().collect();
    let expected_start = [
        "Baseline:  websub run of 2026-11-30T01:00:00Z against http://127.0.0.1:8080/hub",
        "Candidate: websub run of 2026-11-30T02:00:00Z against http://127.0.0.1:8080/hub",
        "",
        "Concurrency  Metric      Baseline  Candidate          Δ       Δ %",
        "-----------------------------------------------------------------",
        "1            only in the baseline run (4000 samples)",
        "-----------------------------------------------------------------",
        "20           Average      10.0 ms    11.0 ms    +1.0 ms   +10.00%",
        "             Median        8.0 ms     8.0 ms    +0.0 ms    +0.00%",
        "             95% Line     20.0 ms    25.0 ms    +5.0 ms   +25.00%",
        "             99% Line     40.0 ms    38.0 ms    -2.0 ms    -5.00%",
        "             Error %       0.500%     1.500%  +1.000 pp  +200.00%",
        "             Throughput  2000.0/s   1800.0/s   -200.0/s   -10.00%",
        "-----------------------------------------------------------------",
    ];
    assert_eq!(&lines[..expected_start.len()], expected_start, "\n{text}");
    assert!(lines.contains(&"100          only in the candidate run (30000 samples)"));
    assert!(lines.contains(&"TOTAL        Average      15.0 ms    16.0 ms    +1.0 ms    +6.67%"));
    assert_eq!(lines[lines.len() - 3], "FAIL: 2 threshold violation(s):");
    assert_eq!(
        lines[lines.len() - 1],
        "  p99>+10%: level TOTAL: 80.0 ms → 120.0 ms (+40.0 ms, +50.00%)"
    );
    let pass = render_text(&cmp, &rules(&["errors>+1%"]), &[]);
    assert!(pass.ends_with("\nPASS: no level breaks errors>+1%\n"));
    assert!(!render_text(&cmp, &[], &[]).contains("PASS"));
}

#[test]
fn csv_is_wide_and_exact() {
    let cmp = pair();
    let csv = String::from_utf8(render_csv(&cmp).unwrap()).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 6, "header, 4 levels, TOTAL");
    assert_eq!(
        lines[0],
        "Level,Present in,\
         Average baseline (ms),Average candidate (ms),Average delta (ms),Average delta %,\
         Median baseline (ms),Median candidate (ms),Median delta (ms),Median delta %,\
         95% Line baseline (ms),95% Line candidate (ms),95% Line delta (ms),95% Line delta %,\
         99% Line baseline (ms),99% Line candidate (ms),99% Line delta (ms),99% Line delta %,\
         Error % baseline,Error % candidate,Error % delta (pp),Error % delta %,\
         Throughput baseline (/s),Throughput candidate (/s),Throughput delta (/s),Throughput delta %"
    );
    assert_eq!(
        lines[1],
        "1,baseline only,2.0,,,,2.0,,,,3.0,,,,4.0,,,,0.000%,,,,400.0,,,"
    );
    assert_eq!(
        lines[2],
        "20,both,10.0,11.0,+1.0,+10.00%,8.0,8.0,+0.0,+0.00%,20.0,25.0,+5.0,+25.00%,\
         40.0,38.0,-2.0,-5.00%,0.500%,1.500%,+1.000,+200.00%,2000.0,1800.0,-200.0,-10.00%"
    );
    assert_eq!(
        lines[4],
        "100,candidate only,,40.0,,,,30.0,,,,90.0,,,,200.0,,,,4.000%,,,,3000.0,,"
    );
    assert!(lines[5].starts_with("TOTAL,both,15.0,16.0,+1.0,+6.67%,"));
    assert!(lines[5].ends_with(",2250.0,2000.0,-250.0,-11.11%"));
}

/// The ids of a page's charts, in order.
pub(crate) fn svg_ids<'a>(doc: &'a roxmltree::Document<'_>) -> Vec<&'a str> {
    doc.descendants()
        .filter(|n| n.tag_name().name() == "svg")
        .filter_map(|n| n.attribute("id"))
        .collect()
}

#[test]
fn html_page() {
    let cmp = pair();
    let r = rules(&["p99>+10%"]);
    let violations = check(&cmp, &r).unwrap();
    let html = html_page::render_html(&cmp, &r, &violations);
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(&html, opts).unwrap();
    let ids = svg_ids(&doc);
    assert_eq!(
        ids,
        [
            "chart-p99",
            "chart-median",
            "chart-throughput",
            "chart-errors"
        ]
    );
    let verdict = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("verdict"))
        .unwrap();
    assert_eq!(verdict.attribute("class"), Some("banner fail"));
    let items: Vec<&str> = verdict
        .descendants()
        .filter(|n| n.tag_name().name() == "li")
        .filter_map(|n| n.text())
        .collect();
    assert_eq!(
        items,
        [
            "p99>+10%: level 50: 100.0 ms → 130.0 ms (+30.0 ms, +30.00%)",
            "p99>+10%: level TOTAL: 80.0 ms → 120.0 ms (+40.0 ms, +50.00%)"
        ]
    );
    // The p99 of level 50 rose 30 %: coloured worse; throughput rose 10 %: better.
    assert!(html.contains(
        "<tr><td>50</td><td class=\"num\">100.0</td><td class=\"num\">130.0</td>\
         <td class=\"num worse\">+30.0</td><td class=\"num worse\">+30.00%</td></tr>"
    ));
    assert!(html.contains(
        "<tr><td>50</td><td class=\"num\">2500.0</td><td class=\"num\">2750.0</td>\
         <td class=\"num better\">+250.0</td><td class=\"num better\">+10.00%</td></tr>"
    ));
    // Small changes are not coloured.
    assert!(html.contains(
        "<tr><td>20</td><td class=\"num\">8.0</td><td class=\"num\">8.0</td>\
         <td class=\"num\">+0.0</td><td class=\"num\">+0.00%</td></tr>"
    ));
    // One table per metric, each with a header row, four levels and TOTAL.
    let tables: Vec<_> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("compare"))
        .collect();
    assert_eq!(tables.len(), 6);
    for t in &tables {
        let rows: Vec<_> = t
            .descendants()
            .filter(|n| n.tag_name().name() == "tr")
            .collect();
        assert_eq!(rows.len(), 6);
        let flag = rows[4].last_element_child().unwrap();
        assert_eq!(flag.text(), Some("only in the candidate run"));
        assert_eq!(flag.attribute("colspan"), Some("4"));
    }
    // Baseline points are missing where the baseline has no level: the dashed line breaks.
    let p99 = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("chart-p99"))
        .unwrap();
    let circles = p99
        .descendants()
        .filter(|n| n.tag_name().name() == "circle")
        .count();
    assert_eq!(circles, 3 + 3);
}

#[test]
fn load_report_accepts_a_directory_and_names_bad_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture("compare-baseline.json"),
        dir.path().join("summary.json"),
    )
    .unwrap();
    let r = load_report(dir.path()).unwrap();
    assert_eq!(r.levels.len(), 3);

    let empty = tempfile::tempdir().unwrap();
    let err = format!("{:#}", load_report(empty.path()).unwrap_err());
    assert!(
        err.starts_with(&format!(
            "cannot read {}",
            empty.path().join("summary.json").display()
        )),
        "{err}"
    );

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, br#"{"tool":"hubload"}"#).unwrap();
    let err = format!("{:#}", load_report(&bad).unwrap_err());
    assert!(
        err.starts_with(&format!(
            "{} is not a hubload summary.json: missing field",
            bad.display()
        )),
        "{err}"
    );
    assert!(!err.contains('\n'));
}

/// Writes the compare page of the two fixtures for a screenshot (scripts/screenshot-report.sh):
/// `HUBLOAD_SAMPLE_COMPARE_HTML=/tmp/compare.html cargo test -p hubload --lib write_sample_compare_html -- --ignored`.
#[test]
#[ignore = "writes a file for the screenshot script"]
fn write_sample_compare_html() {
    let path = std::env::var_os("HUBLOAD_SAMPLE_COMPARE_HTML")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("hubload-sample-compare.html"));
    let cmp = pair();
    let r = rules(&["p99>+10%", "throughput<-10%"]);
    std::fs::write(
        &path,
        html_page::render_html(&cmp, &r, &check(&cmp, &r).unwrap()),
    )
    .unwrap();
    println!("{}", path.display());
}
