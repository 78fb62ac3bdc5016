//! `compare` of two real runs with subscribers, checked against the summaries' own numbers.
//!
//! The fixtures are summaries of real runs (`--tenants 2 --sps 2 --users 3 --concurrency 2,4
//! --requests 60 --subscribers 1 --subscriber-latency 20ms`): `delivery-baseline.json` against
//! the embedded hub, `delivery-stopped.json` against `hubload hub --queue-size 1
//! --delivery-concurrency 1` with `--delivery-grace 4s`, stopped by SIGINT in level 4's grace
//! (level 2 lost deliveries, level 4 only not-yet-delivered ones). Every expectation below is
//! read from the JSON directly (serde_json, not the code under test).

use serde_json::Value;

use super::render::{render_csv, render_text};
use super::tests::{fixture, rules, svg_ids};
use super::*;

fn json(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixture(name)).unwrap()).unwrap()
}

/// A level (or TOTAL) of a summary, by label.
fn level<'a>(v: &'a Value, label: &str) -> &'a Value {
    if label == "TOTAL" {
        return &v["total"];
    }
    v["levels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["label"] == label)
        .unwrap()
}

/// A number of a level's delivery section: `counts.NAME`, `e2e_us.NAME` (in ms) or a top key.
fn num(v: &Value, label: &str, path: &[&str]) -> f64 {
    let mut n = &level(v, label)["delivery"];
    for p in path {
        n = &n[*p];
    }
    let x = n.as_f64().unwrap_or_else(|| panic!("{label} {path:?}"));
    if path[0] == "e2e_us" {
        x / 1000.0
    } else {
        x
    }
}

/// Where each compare metric is in `delivery`.
fn path(m: Metric) -> Vec<&'static str> {
    match m {
        Metric::Expected => vec!["counts", "expected"],
        Metric::Delivered => vec!["counts", "delivered"],
        Metric::Lost => vec!["counts", "lost"],
        Metric::NotYetDelivered => vec!["counts", "not_yet_delivered"],
        Metric::Duplicates => vec!["counts", "duplicates"],
        Metric::Redeliveries => vec!["counts", "redeliveries"],
        Metric::OutOfOrder => vec!["counts", "out_of_order"],
        Metric::BadSignature => vec!["counts", "bad_signature"],
        Metric::BodyMismatch => vec!["counts", "body_mismatch"],
        Metric::Unexpected => vec!["counts", "unexpected"],
        Metric::E2eAvg => vec!["e2e_us", "mean"],
        Metric::E2eP(50) => vec!["e2e_us", "p50"],
        Metric::E2eP(90) => vec!["e2e_us", "p90"],
        Metric::E2eP(95) => vec!["e2e_us", "p95"],
        Metric::E2eP(99) => vec!["e2e_us", "p99"],
        Metric::E2eMax => vec!["e2e_us", "max"],
        Metric::DeliveredRate => vec!["delivered_per_sec"],
        Metric::Backlog => vec!["backlog_at_level_end"],
        publish => panic!("{publish:?}"),
    }
}

fn pair() -> (Comparison, Value, Value) {
    let b = load_report(&fixture("delivery-baseline.json")).unwrap();
    let c = load_report(&fixture("delivery-stopped.json")).unwrap();
    (
        compare(&b, &c),
        json("delivery-baseline.json"),
        json("delivery-stopped.json"),
    )
}

const LABELS: [&str; 3] = ["2", "4", "TOTAL"];

#[test]
fn every_delivery_value_is_the_summary_s() {
    let (cmp, bj, cj) = pair();
    assert!(cmp.baseline_delivery && cmp.candidate_delivery);
    assert_eq!(cmp.metrics()[6..], Metric::DELIVERY);
    for label in LABELS {
        let row = cmp.rows().find(|r| r.label == label).unwrap();
        for m in Metric::DELIVERY {
            let (b, c) = (num(&bj, label, &path(m)), num(&cj, label, &path(m)));
            assert_eq!(row.baseline.unwrap().get(m), Some(b), "{label} {m:?}");
            assert_eq!(row.candidate.unwrap().get(m), Some(c), "{label} {m:?}");
            assert_eq!(row.delta(m).unwrap().abs, c - b, "{label} {m:?}");
        }
    }
    // The stopped run's level 4 owed 44 deliveries and lost none.
    assert_eq!(num(&cj, "4", &["counts", "lost"]), 0.0);
    assert_eq!(num(&cj, "4", &["counts", "not_yet_delivered"]), 44.0);
}

/// The levels a rule fails at, as `check` finds them.
fn failing(cmp: &Comparison, rule: &str) -> Vec<String> {
    check(cmp, &rules(&[rule]))
        .unwrap()
        .into_iter()
        .map(|v| v.label)
        .collect()
}

/// The levels where `broken(baseline value, candidate value)` holds, from the JSON.
fn expected(bj: &Value, cj: &Value, p: &[&str], broken: impl Fn(f64, f64) -> bool) -> Vec<String> {
    LABELS
        .iter()
        .filter(|l| broken(num(bj, l, p), num(cj, l, p)))
        .map(|l| l.to_string())
        .collect()
}

/// Whether a rule breaks, from the baseline's and the candidate's value.
type Broken = dyn Fn(f64, f64) -> bool;

#[test]
fn fail_if_on_delivery_metrics_breaks_exactly_the_levels_the_summaries_say() {
    let (cmp, bj, cj) = pair();
    let table: &[(&str, &[&str], &Broken)] = &[
        ("lost>0", &["counts", "lost"], &|b, c| c - b > 0.0),
        ("duplicates>0", &["counts", "duplicates"], &|b, c| {
            c - b > 0.0
        }),
        ("e2e_p99>+10%", &["e2e_us", "p99"], &|b, c| {
            (c - b) * 100.0 / b > 10.0
        }),
        ("e2e_avg>+5ms", &["e2e_us", "mean"], &|b, c| c - b > 5.0),
        ("delivered_rate<-5%", &["delivered_per_sec"], &|b, c| {
            (c - b) * 100.0 / b < -5.0
        }),
        ("backlog>+10", &["backlog_at_level_end"], &|b, c| {
            c - b > 10.0
        }),
    ];
    for (rule, p, broken) in table {
        assert_eq!(failing(&cmp, rule), expected(&bj, &cj, p, broken), "{rule}");
    }
    // What the summaries say, spelled out: level 2 lost 44, level 4 none (stopped), TOTAL 44.
    assert_eq!(failing(&cmp, "lost>0"), ["2", "TOTAL"]);
    assert!(failing(&cmp, "duplicates>0").is_empty());
    // Shares: lost 44 of 60 expected in level 2 (73.3 %), 44 of 120 in TOTAL (36.7 %).
    let share = |l: &str| {
        num(&cj, l, &["counts", "lost"]) * 100.0 / num(&cj, l, &["counts", "expected"])
            - num(&bj, l, &["counts", "lost"]) * 100.0 / num(&bj, l, &["counts", "expected"])
    };
    let over_50: Vec<&str> = LABELS.into_iter().filter(|l| share(l) > 50.0).collect();
    assert_eq!(failing(&cmp, "lost>+50%"), over_50);
    assert_eq!(over_50, ["2"]);
    let v = &check(&cmp, &rules(&["lost>+50%"])).unwrap()[0];
    assert_eq!(
        v.to_string(),
        format!(
            "lost>+50%: level 2: 0.000% → {:.3}% (+{:.3} pp)",
            share("2"),
            share("2")
        )
    );
    let v = &check(&cmp, &rules(&["lost>0"])).unwrap()[0];
    assert_eq!(v.to_string(), "lost>+0: level 2: 0 → 44 (+44, n/a)");
}

#[test]
fn a_delivery_rule_on_a_run_without_deliveries_is_an_error_naming_it() {
    let plain = load_report(&fixture("compare-baseline.json")).unwrap();
    let with = load_report(&fixture("delivery-baseline.json")).unwrap();
    let mut cmp = compare(&plain, &with);
    cmp.baseline_name = "plain/summary.json".into();
    assert!(!cmp.baseline_delivery && cmp.candidate_delivery);
    assert_eq!(
        cmp.metrics(),
        Metric::ALL,
        "no delivery rows unless both have them"
    );
    let e = check(&cmp, &rules(&["p99>+10%", "lost>0"])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "--fail-if \"lost>0\": lost needs deliveries, and the baseline run (plain/summary.json) \
         has none (run both with --subscribers)"
    );
    // Publish rules still work on such a pair.
    assert!(check(&cmp, &rules(&["p99>+10%"])).is_ok());
    let mut reversed = compare(&with, &plain);
    reversed.candidate_name = "plain".into();
    let e = check(&reversed, &rules(&["e2e_p99>+1ms"])).unwrap_err();
    assert!(
        e.to_string()
            .contains("e2e_p99 needs deliveries, and the candidate run (plain) has none"),
        "{e}"
    );
    // A level both runs have, without a delivery section on one side.
    let mut partial = with.clone();
    partial.levels[1].delivery = None;
    let mut cmp = compare(&with, &partial);
    cmp.candidate_name = "partial".into();
    assert_eq!(
        check(&cmp, &rules(&["lost>0"])).unwrap_err().to_string(),
        "--fail-if \"lost>0\": lost needs deliveries, and level 4 of the candidate run (partial) \
         has no delivery section"
    );
}

#[test]
fn text_csv_and_html_show_the_delivery_rows_side_by_side() {
    let (cmp, bj, cj) = pair();
    let text = render_text(&cmp, &[], &[]);
    let lines: Vec<&str> = text.lines().collect();
    let cells = |name: &str, nth: usize| -> Vec<String> {
        lines
            .iter()
            .filter(|l| l.contains(name))
            .nth(nth)
            .unwrap_or_else(|| panic!("no {name} line {nth}:\n{text}"))
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(String::from)
            .collect()
    };
    // Level 2 (the first level): lost 0 → 44; level 4: not yet delivered 0 → 44.
    let lost = |l: &str| {
        (
            num(&bj, l, &["counts", "lost"]),
            num(&cj, l, &["counts", "lost"]),
        )
    };
    let (b, c) = lost("2");
    assert_eq!(
        cells(" Lost ", 0),
        [
            "Lost",
            &format!("{b}"),
            &format!("{c}"),
            &format!("+{}", c - b),
            "n/a"
        ]
    );
    let not_yet = |l: &str| num(&cj, l, &["counts", "not_yet_delivered"]);
    assert_eq!(
        cells("Not yet delivered", 1),
        [
            "Not yet delivered",
            "0",
            &format!("{}", not_yet("4")),
            &format!("+{}", not_yet("4")),
            "n/a"
        ]
    );
    let p99 = |v: &Value| num(v, "TOTAL", &["e2e_us", "p99"]);
    let (b, c) = (p99(&bj), p99(&cj));
    assert_eq!(
        cells("E2E 99%", 2),
        [
            "E2E 99%".to_string(),
            format!("{b:.1} ms"),
            format!("{c:.1} ms"),
            format!("{:+.1} ms", c - b),
            format!("{:+.2}%", (c - b) * 100.0 / b),
        ]
    );
    // 24 rows a level (6 publish, 18 delivery), each level followed by a rule.
    let rows = lines
        .iter()
        .filter(|l| l.contains("Delivered rate"))
        .count();
    assert_eq!(rows, 3);

    let csv = String::from_utf8(render_csv(&cmp).unwrap()).unwrap();
    let mut rd = csv::Reader::from_reader(csv.as_bytes());
    let head: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(head.len(), 2 + 4 * 24);
    let at = |name: &str| head.iter().position(|h| h == name).unwrap();
    let recs: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
    let total = &recs[2];
    assert_eq!(&total[0], "TOTAL");
    let nyd = num(&cj, "TOTAL", &["counts", "not_yet_delivered"]);
    assert_eq!(&total[at("Not yet delivered candidate")], format!("{nyd}"));
    assert_eq!(&total[at("Not yet delivered delta")], format!("+{nyd}"));
    let rate = num(&cj, "TOTAL", &["delivered_per_sec"]);
    assert_eq!(
        &total[at("Delivered rate candidate (/s)")],
        format!("{rate:.1}")
    );

    let html = html_page::render_html(&cmp, &[], &[]);
    let doc = crate::report::html::tests::parse(&html);
    let ids = svg_ids(&doc);
    assert_eq!(
        ids[4..],
        [
            "chart-e2e-p99",
            "chart-e2e-median",
            "chart-delivered-rate",
            "chart-lost"
        ]
    );
    let tables = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("compare"))
        .count();
    assert_eq!(tables, 6 + 18);
    let (b, c) = lost("2");
    assert!(html.contains(&format!(
        "<tr><td>2</td><td class=\"num\">{b}</td><td class=\"num\">{c}</td>\
         <td class=\"num worse\">+{}</td><td class=\"num worse\">n/a</td></tr>",
        c - b
    )));
}
