//! `Server-Timing`: the reference hub declares where a publish's time went, and hubload reports
//! it per level and metric name, exactly one per answered publish; malformed metrics from a
//! server we did not write into hubload are counted and skipped.

use std::time::Duration;

use hubload_hub::FaultConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::util::{count, line, run, Scenario};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hub_and_broker_counts_equal_accepted_per_level() {
    // The in-memory hub reports its injected broker latency as `broker` (docs/server-timing.md).
    let sc = Scenario::start(FaultConfig {
        broker_latency_ms: 2,
        fail_503_every: Some(7),
        ..FaultConfig::default()
    })
    .await;
    let o = sc
        .run(&line("--tenants 4 --concurrency 2,6 --requests 120"))
        .await;
    let s = sc.hub_stats().await;
    let mut answered = 0;
    for l in &o.report.levels {
        // Every publish the hub answered itself carries the header: accepted, and denied (a
        // topic whose registration met an injected 503). The injected 503s answer before the
        // hub's publish handler, as a proxy in front of it would: no header on them.
        let ok = count(l, "accepted") + count(l, "denied");
        answered += ok;
        assert!(count(l, "http_503") > 0, "level {}", l.label);
        assert_eq!(
            l.derived.server_timing["hub"].count, ok,
            "level {}",
            l.label
        );
        assert_eq!(
            l.derived.server_timing["broker"].count, ok,
            "level {}",
            l.label
        );
        assert_eq!(l.derived.server_timing.len(), 2, "level {}", l.label);
        assert_eq!(l.stats.server_timing.malformed, 0);
        let broker = &l.derived.server_timing["broker"];
        assert!(broker.p50_us >= 2_000, "{broker:?}");
        // The declared stages fit inside what the client measured.
        assert!(
            broker.p50_us + l.derived.server_timing["hub"].p50_us
                <= l.derived.accepted_latency_us.p50 + 50
        );
    }
    assert_eq!(answered, s.publish.accepted + s.publish.denied);
    let total = o.report.total.as_ref().unwrap();
    assert_eq!(total.derived.server_timing["hub"].count, answered);
    // summary.json carries it as written.
    let on_disk = sc.summary("");
    assert_eq!(
        on_disk.levels[0].derived.server_timing,
        o.report.levels[0].derived.server_timing
    );
}

/// A hub of our own making here only in the sense of a fixed answer: every request gets 200
/// `hub.mode=accepted` with one good and one malformed metric, sometimes split over two
/// headers, on a keep-alive connection.
async fn odd_timing_server() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hub", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut n = 0u64;
                loop {
                    // One request: the head, then Content-Length bytes of body.
                    let head_end = loop {
                        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                        let mut chunk = [0u8; 4096];
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(k) => buf.extend_from_slice(&chunk[..k]),
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .map_or(0, |v| v.trim().parse().unwrap());
                    while buf.len() < head_end + len {
                        let mut chunk = [0u8; 4096];
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(k) => buf.extend_from_slice(&chunk[..k]),
                        }
                    }
                    buf.drain(..head_end + len);
                    n += 1;
                    let timing = if n % 2 == 0 {
                        "Server-Timing: edge;dur=0.5\r\nserver-timing: origin;dur=oops\r\n"
                    } else {
                        "Server-Timing: edge;dur=0.5, origin;desc=\"a,b\";dur=-3\r\n"
                    };
                    let body = "hub.mode=accepted";
                    let resp = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/x-www-form-urlencoded\r\n{timing}Content-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if sock.write_all(resp.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_metrics_are_counted_and_skipped() {
    let (url, server) = odd_timing_server().await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let o = tokio::time::timeout(
        Duration::from_secs(60),
        run(&[
            "--hub-url",
            &url,
            "--tenants",
            "2",
            "--concurrency",
            "1,3",
            "--requests",
            "50",
            "--out",
            &out,
        ]),
    )
    .await
    .expect("the run ends");
    server.abort();
    for l in &o.report.levels {
        assert_eq!(count(l, "accepted"), 50, "level {}", l.label);
        assert_eq!(l.derived.server_timing["edge"].count, 50);
        assert_eq!(l.derived.server_timing["edge"].p50_us, 500);
        assert!(!l.derived.server_timing.contains_key("origin"));
        assert_eq!(l.stats.server_timing.malformed, 50, "level {}", l.label);
    }
}

/// Without faults every publish is accepted, and each declares exactly one `hub`; no broker
/// latency, no `broker`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hub_count_equals_accepted_exactly() {
    let sc = Scenario::start(FaultConfig::default()).await;
    let o = sc
        .run(&line("--tenants 3 --concurrency 1,4 --requests 200"))
        .await;
    let s = sc.hub_stats().await;
    for l in &o.report.levels {
        assert_eq!(count(l, "accepted"), 200, "level {}", l.label);
        assert_eq!(
            l.derived.server_timing["hub"].count, 200,
            "level {}",
            l.label
        );
        assert!(!l.derived.server_timing.contains_key("broker"));
    }
    assert_eq!(s.publish.accepted, 400);
    // The table's block: one `hub` line per level and TOTAL, with the exact counts.
    let table = std::fs::read_to_string(sc.dir.path().join("table.txt")).unwrap();
    let hub_lines: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|c| c.get(1) == Some(&"hub"))
        .collect();
    let counts: Vec<(&str, &str)> = hub_lines.iter().map(|c| (c[0], c[2])).collect();
    assert_eq!(
        counts,
        [("1", "200"), ("4", "200"), ("TOTAL", "400")],
        "{table}"
    );
    // report.html's section, still well-formed XML.
    let html = std::fs::read_to_string(sc.dir.path().join("report.html")).unwrap();
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    roxmltree::Document::parse_with_options(&html, opts).unwrap();
    assert!(html.contains("<h2>Where the time went</h2>"));
    assert!(html.contains("hub p50 (ms)"));
    // `hubload compare` of the run with itself: one hub line per level and TOTAL, no change.
    let out = crate::util::bin(&["compare", ".", ".", "--out", "cmp"], sc.dir.path());
    crate::util::assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    let block = text
        .split("Server-Timing stages (ms)")
        .nth(1)
        .expect("the block");
    let deltas: Vec<(&str, &str)> = block
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|c| c.get(1) == Some(&"hub"))
        .map(|c| (c[0], c[4]))
        .collect();
    assert_eq!(
        deltas,
        [("1", "+0.000"), ("4", "+0.000"), ("TOTAL", "+0.000")],
        "{text}"
    );
}

/// Over HTTP/2 (h2c with prior knowledge to the reference hub): the metrics are read from the
/// response's fields as HPACK delivers them, one `hub` and one `broker` per accepted publish.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_from_h2_responses_one_per_accepted_publish() {
    let sc = Scenario::start(FaultConfig {
        broker_latency_ms: 1,
        ..FaultConfig::default()
    })
    .await;
    let o = sc
        .run(&line(
            "--tenants 3 --concurrency 1,6 --requests 150 --http-version 2 \
             --pool-per-host 2 --h2-streams 3",
        ))
        .await;
    for l in &o.report.levels {
        assert_eq!(count(l, "accepted"), 150, "level {}", l.label);
        assert_eq!(
            l.derived.server_timing["hub"].count, 150,
            "level {}",
            l.label
        );
        assert_eq!(
            l.derived.server_timing["broker"].count, 150,
            "level {}",
            l.label
        );
        assert_eq!(l.stats.server_timing.malformed, 0);
        assert!(l.derived.server_timing["broker"].p50_us >= 1_000);
    }
    assert_eq!(o.config.http.h2_streams, 3);
    assert_eq!(sc.hub_stats().await.publish.accepted, 300);
}

/// `hubload compare` of two real runs, the candidate's hub holding each publish 1 ms longer in
/// its (injected) broker: `compare.csv` carries each level's `broker` and `hub` p50/p99 as the
/// two summaries have them, and their deltas; `compare.html` has the table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_carries_the_stages_of_two_runs() {
    let args = ["--tenants", "2", "--concurrency", "1,3", "--requests", "60"];
    let mut runs = Vec::new();
    for broker_latency_ms in [1, 2] {
        let sc = Scenario::start(FaultConfig {
            broker_latency_ms,
            ..FaultConfig::default()
        })
        .await;
        let o = sc.run(&args).await;
        runs.push((sc, o.report));
    }
    let (base_dir, cand_dir) = (runs[0].0.dir.path(), runs[1].0.dir.path());
    let cmp_dir = tempfile::tempdir().unwrap();
    let out = crate::util::bin(
        &[
            "compare",
            &base_dir.display().to_string(),
            &cand_dir.display().to_string(),
            "--out",
            &cmp_dir.path().display().to_string(),
        ],
        base_dir,
    );
    crate::util::assert_exit(&out, 0);
    let mut csv = csv::Reader::from_path(cmp_dir.path().join("compare.csv")).unwrap();
    let header: Vec<String> = csv.headers().unwrap().iter().map(String::from).collect();
    let col = |name: &str| header.iter().position(|h| h == name).expect(name);
    let rows: Vec<csv::StringRecord> = csv.records().map(Result::unwrap).collect();
    let labels: Vec<&str> = rows.iter().map(|r| &r[0]).collect();
    assert_eq!(labels, ["1", "3", "TOTAL"]);
    let ms = |us: u64| format!("{:.3}", us as f64 / 1000.0);
    let (base, cand) = (&runs[0].1, &runs[1].1);
    for (i, label) in labels.iter().enumerate() {
        let level = |r: &hubload::report::document::Report| {
            r.levels
                .iter()
                .chain(r.total.as_ref())
                .find(|l| l.label == *label)
                .unwrap()
                .derived
                .server_timing
                .clone()
        };
        let (b, c) = (level(base), level(cand));
        assert_eq!(b["broker"].p50_us, 1_000, "level {label}");
        assert_eq!(c["broker"].p50_us, 2_000, "level {label}");
        for stage in ["broker", "hub"] {
            for (p, bv, cv) in [
                ("p50", b[stage].p50_us, c[stage].p50_us),
                ("p99", b[stage].p99_us, c[stage].p99_us),
            ] {
                let cell = |what: &str| {
                    rows[i][col(&format!("Server-Timing {stage} {p} {what} (ms)"))].to_string()
                };
                assert_eq!(cell("baseline"), ms(bv), "{label} {stage} {p}");
                assert_eq!(cell("candidate"), ms(cv), "{label} {stage} {p}");
                let delta = (cv as i64 - bv as i64) as f64 / 1000.0;
                assert_eq!(cell("delta"), format!("{delta:.3}"), "{label} {stage} {p}");
            }
        }
        let delta = &rows[i][col("Server-Timing broker p50 delta (ms)")];
        assert_eq!(delta, "1.000", "level {label}");
    }
    let html = std::fs::read_to_string(cmp_dir.path().join("compare.html")).unwrap();
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(&html, opts).unwrap();
    let table = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("server-timing-table"))
        .expect("the Server-Timing table");
    let cells: Vec<Vec<String>> = table
        .descendants()
        .filter(|n| n.has_tag_name("tr"))
        .skip(1)
        .map(|tr| {
            tr.children()
                .filter(|n| n.has_tag_name("td"))
                .map(|td| td.text().unwrap_or("").to_string())
                .collect()
        })
        .collect();
    // Two stages per level and TOTAL; the broker rows say +1.00 ms at p50.
    assert_eq!(cells.len(), 6, "{html}");
    for r in cells.iter().filter(|r| r[1] == "broker") {
        assert_eq!(r[2..5], ["1.00", "2.00", "+1.00"], "{r:?}");
    }
}
