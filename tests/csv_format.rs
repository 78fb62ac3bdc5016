//! aggregate.csv: the exact header, JMeter's number formats, and a TOTAL row that agrees with
//! the level rows (counts add up; throughput over the whole span).

use hubload_hub::FaultConfig;

use crate::util::{line, Scenario};

const HEADER: &str = "Concurrency,# Samples,Average,Median,90% Line,95% Line,99% Line,Min,Max,Error %,Throughput,Received KB/sec,Sent KB/sec,Accepted,Denied,4xx,502,503,504,Other 5xx,Timeouts,Connection errors,TLS errors,Client errors,Cancelled,Other";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_formats_and_total_row() {
    let sc = Scenario::start(FaultConfig {
        fail_503_every: Some(9),
        fail_502_every: Some(13),
        ..FaultConfig::default()
    })
    .await;
    let (hub, out) = (&sc.hub, &sc.dir);
    let o = sc
        .run(&line("--tenants 4 --concurrency 1,5,10 --requests 150"))
        .await;
    let text = std::fs::read_to_string(out.path().join("aggregate.csv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next().unwrap(), HEADER);
    let rows: Vec<Vec<String>> = lines
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    assert_eq!(
        rows.iter().map(|r| r[0].as_str()).collect::<Vec<_>>(),
        ["1", "5", "10", "TOTAL"]
    );
    let is_int = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let is_dec = |s: &str, places: usize| {
        s.split_once('.')
            .is_some_and(|(a, b)| is_int(a) && b.len() == places && is_int(b))
    };
    for r in &rows {
        assert_eq!(r.len(), 26, "{r:?}");
        // # Samples, Average … Max: integers (ms).
        assert!(r[1..9].iter().all(|c| is_int(c)), "{r:?}");
        // Error % like 0.200%.
        assert!(
            r[9].strip_suffix('%').is_some_and(|p| is_dec(p, 3)),
            "{}",
            r[9]
        );
        assert!(
            is_dec(&r[10], 5) && is_dec(&r[11], 2) && is_dec(&r[12], 2),
            "{r:?}"
        );
        assert!(r[13..].iter().all(|c| is_int(c)), "{r:?}");
        // The classes of a row add up to its samples.
        let classes: u64 = r[13..].iter().map(|c| c.parse::<u64>().unwrap()).sum();
        assert_eq!(classes, r[1].parse::<u64>().unwrap(), "{r:?}");
    }
    // TOTAL counts are the sums of the level rows, column by column.
    let (levels, total) = rows.split_at(3);
    for col in [1usize].into_iter().chain(13..26) {
        let sum: u64 = levels.iter().map(|r| r[col].parse::<u64>().unwrap()).sum();
        assert_eq!(
            total[0][col].parse::<u64>().unwrap(),
            sum,
            "column {}",
            HEADER.split(',').nth(col).unwrap()
        );
    }
    // Throughput over the whole span: first start of level 1 to the last end of level 3.
    let t = o.report.total.as_ref().unwrap();
    let want = t.derived.samples as f64 / t.derived.span_s;
    assert!((total[0][10].parse::<f64>().unwrap() - want).abs() < 0.001 * want);
    let span_sum: f64 = o.report.levels.iter().map(|l| l.derived.span_s).sum();
    assert!(
        t.derived.span_s >= span_sum,
        "TOTAL's span covers every level"
    );
    // And the 502/503 columns equal the hub's own counts.
    let s = hub.stats().await;
    assert_eq!(total[0][16].parse::<u64>().unwrap(), s.publish.fault_502);
    assert_eq!(total[0][17].parse::<u64>().unwrap(), s.publish.fault_503);
}
