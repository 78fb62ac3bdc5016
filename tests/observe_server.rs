//! `--server-metrics`: the reference hub's own counters, scraped at each level's edges, move
//! per level by exactly what hubload counted (accepted, and 502 with injected faults); an
//! unreachable source is a warning and the run completes.

use hubload_hub::FaultConfig;

use crate::util::{count, refusing_port, Scenario};

/// server.csv's rows as (level, series, labels) → (kind, delta).
fn server_rows(dir: &std::path::Path) -> Vec<csv::StringRecord> {
    let mut r = csv::Reader::from_path(dir.join("server.csv")).expect("server.csv");
    assert_eq!(
        r.headers().unwrap().iter().collect::<Vec<_>>(),
        [
            "Level", "Source", "Series", "Labels", "Kind", "Delta", "Rate", "Min", "Mean", "Max",
            "Last"
        ]
    );
    r.records().map(Result::unwrap).collect()
}

fn delta(rows: &[csv::StringRecord], level: &str, series: &str, labels: &str) -> u64 {
    let row = rows
        .iter()
        .find(|r| &r[0] == level && &r[2] == series && &r[3] == labels)
        .unwrap_or_else(|| panic!("no server.csv row for {level} {series}{labels}"));
    assert_eq!(&row[4], "counter");
    row[5]
        .parse()
        .unwrap_or_else(|_| panic!("delta `{}`", &row[5]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hub_counter_deltas_equal_hubloads_classes_per_level() {
    let sc = Scenario::start(FaultConfig {
        fail_502_every: Some(7),
        ..FaultConfig::default()
    })
    .await;
    let metrics = format!("http://{}/metrics", sc.hub.addr);
    // Nothing listens here: a warning, failures counted, and the run goes on.
    let (_held, nowhere_port) = refusing_port();
    let nowhere = format!("http://user:hunter2@127.0.0.1:{nowhere_port}/metrics");
    let o = sc
        .run(&[
            "--tenants",
            "4",
            "--concurrency",
            "1,6",
            "--requests",
            "400",
            "--server-metrics",
            &metrics,
            "--server-metrics",
            &nowhere,
            "--server-metrics-interval",
            "50ms",
            "--server-metrics-match",
            "^hub_(answers|inflight)",
        ])
        .await;
    let rows = server_rows(sc.dir.path());
    let publish = |outcome: &str| format!("{{mode=\"publish\",outcome=\"{outcome}\"}}");
    let mut seen_502 = 0;
    for l in &o.report.levels {
        let accepted = delta(&rows, &l.label, "hub_answers_total", &publish("accepted"));
        let failed = delta(&rows, &l.label, "hub_answers_total", &publish("fault_502"));
        assert_eq!(accepted, count(l, "accepted"), "level {}", l.label);
        assert_eq!(failed, count(l, "http_502"), "level {}", l.label);
        // Every publish the hub answered in the level, whatever the outcome, is one of
        // hubload's attempts (registrations that met a 502 leave topics the hub refuses).
        let answered: u64 = rows
            .iter()
            .filter(|r| &r[0] == l.label.as_str() && &r[2] == "hub_answers_total")
            .filter(|r| r[3].starts_with("{mode=\"publish\","))
            .map(|r| r[5].parse::<u64>().unwrap())
            .sum();
        assert_eq!(
            (answered, l.derived.samples),
            (400, 400),
            "level {}",
            l.label
        );
        seen_502 += failed;
        // The match kept only the hub's answers and in-flight gauge.
        let names: std::collections::BTreeSet<_> = rows
            .iter()
            .filter(|r| &r[0] == l.label.as_str())
            .map(|r| r[2].to_string())
            .collect();
        assert_eq!(
            names.into_iter().collect::<Vec<_>>(),
            ["hub_answers_total", "hub_inflight"]
        );
        let server = l.server.as_ref().unwrap();
        let dead = server
            .sources
            .iter()
            .find(|s| s.source.contains(&nowhere[nowhere.rfind(':').unwrap()..]))
            .unwrap();
        assert_eq!(dead.scrapes, 0);
        let live = server
            .sources
            .iter()
            .find(|s| s.source == format!("{}/metrics", sc.hub.addr))
            .unwrap();
        assert_eq!((live.failures, live.malformed_lines), (0, 0));
        assert_eq!(live.scrapes, server.series[0].samples);
        // Every round asks every source: the dead one failed as often as the live one answered
        // (at least the level's start and end).
        assert_eq!(dead.failures, live.scrapes);
        assert!(live.scrapes >= 2);
    }
    // 800 publishes, every 7th hub request answered 502 (registrations count too).
    assert!(seen_502 > 0);
    assert!(o
        .report
        .warnings
        .iter()
        .any(|w| w.contains("server metrics 127.0.0.1:")));
    let all = std::fs::read_dir(sc.dir.path())
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap_or_default())
        .collect::<String>();
    assert!(!all.contains("hunter2"), "a password in the reports");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_broken_level_names_the_server_series_that_moved_most() {
    // Beyond 2 requests in flight (each held 5 ms) the hub answers 503: concurrency 1
    // passes, 8 breaks. Topics are registered one at a time.
    let sc = Scenario::start(FaultConfig {
        max_inflight: Some(2),
        latency_ms: 5,
        ..FaultConfig::default()
    })
    .await;
    let metrics = format!("http://{}/metrics", sc.hub.addr);
    let o = sc
        .run(&[
            "--tenants",
            "4",
            "--concurrency",
            "1,8",
            "--requests",
            "200",
            "--register-concurrency",
            "1",
            "--threshold",
            "errors<1%",
            "--server-metrics",
            &metrics,
            "--server-metrics-match",
            "^hub_answers_total$",
        ])
        .await;
    assert_eq!(count(&o.report.levels[0], "http_503"), 0);
    assert!(count(&o.report.levels[1], "http_503") > 0);
    assert!(o.thresholds_failed);
    let k = o.report.knee.as_ref().expect("a knee");
    assert_eq!((k.level.as_str(), k.previous.as_str()), ("8", "1"));
    assert_eq!(k.broke_because, "first failing threshold errors<1%");
    let top = &k.series[0];
    assert_eq!(
        (
            top.series.as_str(),
            top.labels.as_str(),
            top.figure.as_str(),
            top.before
        ),
        (
            "hub_answers_total",
            "{mode=\"publish\",outcome=\"fault_503\"}",
            "rate",
            0.0
        )
    );
    assert!(top.after > 0.0 && top.relative_change.is_infinite());
    let table = std::fs::read_to_string(sc.dir.path().join("table.txt")).unwrap();
    assert!(
        table.contains("knee: at 8 (first failing threshold errors<1%), the server series that changed most against 1 (a correlation, not a proven cause): hub_answers_total{mode=\"publish\",outcome=\"fault_503\"} rate 0 → "),
        "{table}"
    );
    let html = std::fs::read_to_string(sc.dir.path().join("report.html")).unwrap();
    assert!(html.contains("The knee (correlation)"));
}
