//! Tests of `report.html`: it parses as XML and contains every chart and table for a known run.

use super::*;

/// The committed sample run: 5 levels, 503s and timeouts at the high levels.
pub(crate) fn sample() -> Report {
    serde_json::from_str(include_str!(
        "../../../tests/fixtures/reports/sample-summary.json"
    ))
    .expect("sample-summary.json deserializes into Report")
}

/// Parse the page as XML (our markup is well-formed by construction); panics with the error.
pub(crate) fn parse(html: &str) -> roxmltree::Document<'_> {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    roxmltree::Document::parse_with_options(html, opts).unwrap_or_else(|e| panic!("{e}"))
}

fn by_id<'a, 'i>(doc: &'a roxmltree::Document<'i>, id: &str) -> roxmltree::Node<'a, 'i> {
    doc.descendants()
        .find(|n| n.attribute("id") == Some(id))
        .unwrap_or_else(|| panic!("no element with id {id}"))
}

fn count_tag(node: roxmltree::Node<'_, '_>, tag: &str) -> usize {
    node.descendants()
        .filter(|n| n.tag_name().name() == tag)
        .count()
}

#[test]
fn sample_report_has_every_chart() {
    let report = sample();
    let html = render(&report);
    let doc = parse(&html);
    let levels = report.levels.len();
    assert_eq!(levels, 5);

    // Latency: five percentile series with a marker per level.
    let latency = by_id(&doc, "chart-latency");
    assert_eq!(count_tag(latency, "polyline"), 5);
    assert_eq!(count_tag(latency, "circle"), 5 * levels);
    // Throughput: all attempts and accepted, a marker per level.
    let throughput = by_id(&doc, "chart-throughput");
    assert_eq!(count_tag(throughput, "circle"), 2 * levels);

    // Stacked bars: one rectangle per non-zero (class group, level) pair, computed here
    // straight from the class counts of the fixture.
    fn group_of(class: &str) -> &str {
        match class {
            "timeout_connect" | "timeout_pool_wait" | "timeout_response" => "timeouts",
            "conn_refused" | "conn_reset" | "conn_closed" => "conn",
            other => other,
        }
    }
    let mut nonzero = 0;
    let mut nonzero_failures = 0;
    for l in &report.levels {
        let mut groups: Vec<&str> = Class::ALL
            .iter()
            .filter(|c| l.stats.counts.get(**c) > 0)
            .map(|c| group_of(c.name()))
            .collect();
        groups.sort_unstable();
        groups.dedup();
        nonzero += groups.len();
        nonzero_failures += groups.iter().filter(|g| **g != "accepted").count();
    }
    assert_eq!(count_tag(by_id(&doc, "chart-outcomes"), "rect"), nonzero);
    assert_eq!(
        count_tag(by_id(&doc, "chart-failures"), "rect"),
        nonzero_failures
    );
    // The fixture has 503s and timeouts at the high levels; their bars carry tooltips.
    let tips: Vec<String> = by_id(&doc, "chart-outcomes")
        .descendants()
        .filter(|n| n.tag_name().name() == "title")
        .filter_map(|n| n.text().map(str::to_string))
        .collect();
    assert!(
        tips.iter().any(|t| t.starts_with("200: 503 7410 ")),
        "{tips:?}"
    );
    assert!(
        tips.iter().any(|t| t.starts_with("200: Timeouts 1603 ")),
        "{tips:?}"
    );

    // Timeline: a separator per level, and the mean line broken at every level boundary.
    let timeline = by_id(&doc, "chart-timeline");
    let separators = timeline
        .descendants()
        .filter(|n| n.attribute("class") == Some("separator"))
        .count();
    assert_eq!(separators, levels);
    assert_eq!(count_tag(timeline, "polyline"), 2 * levels);
    assert!(html.contains(">c=200<"));
}

#[test]
fn tables_have_a_row_per_level_and_total() {
    let report = sample();
    let html = render(&report);
    let doc = parse(&html);
    let tables: Vec<_> = doc
        .descendants()
        .filter(|n| n.tag_name().name() == "table" && n.attribute("class").is_none())
        .collect();
    assert_eq!(tables.len(), 2, "aggregate and outcome tables");
    for t in tables {
        let first_cells: Vec<&str> = t
            .descendants()
            .filter(|n| n.tag_name().name() == "tr")
            .skip(1)
            .filter_map(|tr| tr.first_element_child().and_then(|td| td.text()))
            .collect();
        assert_eq!(first_cells, ["1", "20", "50", "100", "200", "TOTAL"]);
    }
    // The aggregate header follows JMeter's, with the level column first.
    assert!(html.contains(
        "<th>Concurrency</th><th class=\"num\"># Samples</th><th class=\"num\">Average</th>"
    ));
    // Error % the JMeter way.
    let total = report.total.as_ref().unwrap();
    assert!(html.contains(&format!(">{:.3}%<", total.derived.error_pct)));
}

#[test]
fn registration_and_config_are_rendered() {
    let report = sample();
    let html = render(&report);
    let doc = parse(&html);
    assert!(html.contains("Registration phase"));
    assert!(!html.contains("Deregistration phase"));
    let kv: Vec<(String, String)> = doc
        .descendants()
        .filter(|n| n.tag_name().name() == "tr")
        .filter(|tr| {
            tr.parent()
                .and_then(|b| b.parent())
                .and_then(|t| t.attribute("class"))
                == Some("kv")
        })
        .map(|tr| {
            let mut tds = tr.children().filter(|c| c.is_element());
            let mut text = || tds.next().and_then(|c| c.text()).unwrap_or("").to_string();
            (text(), text())
        })
        .collect();
    let get = |k: &str| kv.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
    assert_eq!(get("Topics"), Some("1000"));
    assert_eq!(get("Already registered (409)"), Some("4"));
    assert_eq!(get("client.pool_timeout"), Some("300ms"));
    assert_eq!(
        get("channels"),
        Some("login, registration, credential, session")
    );
    assert_eq!(get("levels.concurrency"), Some("1, 20, 50, 100, 200"));
    assert_eq!(get("levels.ramp_up"), Some("—"));
    assert_eq!(get("auth.bearer_token"), Some("[redacted]"));
}

#[test]
fn partial_banner_only_when_partial() {
    let mut report = sample();
    assert!(!render(&report).contains("id=\"partial\""));
    report.partial = true;
    let html = render(&report);
    let doc = parse(&html);
    assert!(by_id(&doc, "partial")
        .text()
        .unwrap()
        .starts_with("Partial run"));
}

#[test]
fn hostile_text_is_escaped_and_nothing_is_loaded() {
    let mut report = sample();
    report.config["note"] = serde_json::json!("</style><script>alert('x')</script> & more");
    report.target_url = "http://h/\"><img src=x>".into();
    report.levels[0].label = "<b>1</b>".into();
    let html = render(&report);
    let doc = parse(&html);
    for bad in ["script", "img", "b", "link", "iframe"] {
        assert_eq!(count_tag(doc.root(), bad), 0, "<{bad}> leaked");
    }
    // Self-contained: no attribute refers to anything outside the page.
    for n in doc.descendants() {
        for a in n.attributes() {
            assert!(
                !["src", "href"].contains(&a.name()),
                "{}={} on <{}>",
                a.name(),
                a.value(),
                n.tag_name().name()
            );
        }
    }
    assert!(html.contains("&lt;/style&gt;&lt;script&gt;alert(&#39;x&#39;)"));
}

#[test]
fn service_bus_classes_appear_when_counted() {
    let mut report = sample();
    assert!(!render(&report).contains(">Throttled<"));
    report.levels[4].stats.counts.add(Class::Throttled, 12);
    let html = render(&report);
    let doc = parse(&html);
    let legend: Vec<&str> = by_id(&doc, "chart-outcomes")
        .descendants()
        .filter(|n| n.attribute("class") == Some("legend"))
        .filter_map(|n| n.text())
        .collect();
    assert!(legend.contains(&"Throttled"), "{legend:?}");
    assert!(html.contains("<th class=\"num\">Throttled</th>"));
}

#[test]
fn open_model_adds_the_corrected_p99() {
    let mut report = sample();
    assert!(!render(&report).contains("p99 from intended start"));
    report.model = crate::kind::Model::Open;
    for (i, l) in report.levels.iter_mut().enumerate() {
        l.label = format!("{}/s", (i + 1) * 100);
        let mut c = l.derived.latency_us.clone();
        c.p99 *= 3;
        l.derived.corrected_latency_us = Some(c);
    }
    let html = render(&report);
    let doc = parse(&html);
    let latency = by_id(&doc, "chart-latency");
    assert_eq!(count_tag(latency, "polyline"), 6);
    assert_eq!(count_tag(latency, "circle"), 6 * report.levels.len());
    assert!(html.contains("Rate (events/s)"));
    assert!(html.contains(">rate=500/s<"));
}

#[test]
fn empty_run_renders() {
    let mut report = sample();
    report.levels.clear();
    report.total = None;
    report.registration = None;
    let html = render(&report);
    let doc = parse(&html);
    assert_eq!(count_tag(doc.root(), "svg"), 0);
    assert!(html.contains("No level has completed yet."));
}

#[test]
fn the_html_format_writes_report_html() {
    let r = HtmlFormat;
    assert_eq!(r.file_name(), "report.html");
    let bytes = r.render(&sample()).unwrap();
    assert!(bytes.starts_with(b"<!DOCTYPE html>"));
}

/// Writes the sample page for screenshots (see scripts/screenshot-report.sh):
/// `HUBLOAD_SAMPLE_HTML=/tmp/sample.html cargo test -p hubload --lib write_sample_html -- --ignored`.
#[test]
#[ignore = "writes a file for the screenshot script"]
fn write_sample_html() {
    let path = std::env::var_os("HUBLOAD_SAMPLE_HTML")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("hubload-sample-report.html"));
    std::fs::write(&path, render(&sample())).unwrap();
    println!("{}", path.display());
}

/// A histogram of `n` values 1..=n µs times `scale`.
fn histogram(n: u64, scale: u64) -> crate::stats::Histogram {
    let mut h = crate::stats::new_histogram();
    for v in 1..=n {
        crate::stats::record(&mut h, v * scale);
    }
    h
}

#[test]
fn distribution_chart_one_line_per_level_dashed_when_corrected() {
    let mut report = sample();
    // The fixture predates histograms in summary.json: no distribution chart, no error.
    assert!(!render(&report).contains("chart-distribution"));
    for (i, l) in report.levels.iter_mut().enumerate() {
        l.stats.latency = histogram(1000, i as u64 + 1);
    }
    let html = render(&report);
    let doc = parse(&html);
    let chart = by_id(&doc, "chart-distribution");
    let lines: Vec<_> = chart
        .descendants()
        .filter(|n| n.tag_name().name() == "polyline")
        .collect();
    assert_eq!(lines.len(), 5);
    assert!(lines
        .iter()
        .all(|n| n.attribute("stroke-dasharray").is_none()));
    let ticks: Vec<&str> = chart
        .descendants()
        .filter(|n| n.attribute("class") == Some("tick"))
        .filter_map(|n| n.text())
        .collect();
    for t in ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"] {
        assert!(ticks.contains(&t), "{t} in {ticks:?}");
    }
    // Open model: a dashed line per level for the latency from the intended start.
    for l in &mut report.levels {
        l.stats.corrected = histogram(1000, 7);
        l.derived.corrected_latency_us = Some(l.derived.latency_us.clone());
    }
    let html = render(&report);
    let doc = parse(&html);
    let chart = by_id(&doc, "chart-distribution");
    let dashed = chart
        .descendants()
        .filter(|n| n.tag_name().name() == "polyline")
        .filter(|n| n.attribute("stroke-dasharray").is_some())
        .count();
    assert_eq!(dashed, 5);
    assert_eq!(count_tag(chart, "polyline"), 10);
}

/// Every class is drawn: each one sits in exactly one outcome group, so a level's bars add
/// up to its samples.
#[test]
fn every_class_is_in_exactly_one_chart_group() {
    for c in Class::ALL {
        let groups: Vec<&str> = super::charts::GROUPS
            .iter()
            .filter(|g| g.classes.contains(&c))
            .map(|g| g.name)
            .collect();
        assert_eq!(groups.len(), 1, "{}: {groups:?}", c.name());
    }
}
