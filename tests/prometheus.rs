//! hubload against the real things: a real Prometheus 2.x with its remote-write
//! receiver, a real node exporter, and the reference hub. Each test starts its own instances
//! on free ports; without the tools the tests print a skip line, or fail when `CI` is set.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hubload_hub::FaultConfig;

use crate::util::{assert_exit, bin, count, free_port, refusing_port, tool, Scenario};

/// A child process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Poll `url` until it answers 200, for up to 60 s.
async fn wait_ready(client: &reqwest::Client, url: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(r) = client.get(url).send().await {
            if r.status().is_success() {
                return;
            }
        }
        assert!(Instant::now() < deadline, "{url} never became ready");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A Prometheus with the remote-write receiver on a free port; its base URL.
async fn prometheus(client: &reqwest::Client, dir: &Path) -> Option<(Killed, String)> {
    let exe = tool("prometheus", "the Prometheus tests")?;
    let config = dir.join("prometheus.yml");
    std::fs::write(&config, "global:\n  scrape_interval: 1m\n").unwrap();
    let port = free_port();
    let child = Command::new(exe)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("tsdb").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--web.enable-remote-write-receiver")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let guard = Killed(child);
    wait_ready(client, &format!("{base}/-/ready")).await;
    Some((guard, base))
}

/// A node exporter with a few quick collectors on a free port; its /metrics URL.
async fn node_exporter(client: &reqwest::Client) -> Option<(Killed, String)> {
    let exe = tool("prometheus-node-exporter", "the Prometheus tests")?;
    let port = free_port();
    let child = Command::new(exe)
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .args([
            "--collector.disable-defaults",
            "--collector.cpu",
            "--collector.loadavg",
            "--collector.meminfo",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/metrics");
    let guard = Killed(child);
    wait_ready(client, &url).await;
    Some((guard, url))
}

/// An instant query's vector as (label `by`, value).
async fn query(client: &reqwest::Client, base: &str, promql: &str, by: &str) -> Vec<(String, f64)> {
    let text = client
        .get(format!("{base}/api/v1/query"))
        .query(&[("query", promql)])
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["status"], "success", "{v}");
    let mut out: Vec<(String, f64)> = v["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["metric"][by].as_str().unwrap_or("").to_string(),
                r["value"][1].as_str().unwrap().parse().unwrap(),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// aggregate.csv's `Accepted` per level label.
fn accepted_per_level(dir: &Path) -> Vec<(String, f64)> {
    let mut r = csv::Reader::from_path(dir.join("aggregate.csv")).unwrap();
    let col = r
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == "Accepted")
        .unwrap();
    let mut out: Vec<(String, f64)> = r
        .records()
        .map(Result::unwrap)
        .filter(|row| &row[0] != "TOTAL")
        .map(|row| (row[0].to_string(), row[col].parse().unwrap()))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_written_counts_reconcile_and_a_node_exporter_is_scraped() {
    let sc = Scenario::start(FaultConfig {
        fail_502_every: Some(9),
        ..FaultConfig::default()
    })
    .await;
    let client = sc.hub.client.clone();
    let Some((_prom, base)) = prometheus(&client, sc.dir.path()).await else {
        return;
    };
    let Some((_ne, node)) = node_exporter(&client).await else {
        return;
    };
    let hub_metrics = format!("http://{}/metrics", sc.hub.addr);
    // Refused for the whole run: a port only free a moment ago was once taken by another
    // test's server, which then answered the "dead" source's scrapes.
    let (_held, dead_port) = refusing_port();
    let dead = format!("http://127.0.0.1:{dead_port}/metrics");
    let write = format!("{base}/api/v1/write");
    let tag = format!("t{}", std::process::id());
    let label = format!("test={tag}");
    let o = sc
        .run(&[
            "--tenants",
            "4",
            "--concurrency",
            "2,5",
            "--requests",
            "300",
            "--prometheus-remote-write",
            &write,
            "--push-interval",
            "1s",
            "--push-label",
            &label,
            "--server-metrics",
            &hub_metrics,
            "--server-metrics",
            &node,
            "--server-metrics",
            &dead,
            "--server-metrics-match",
            "^(hub_answers_total|node_cpu_seconds_total|node_load1)$",
        ])
        .await;
    // Prometheus holds, per level, exactly what aggregate.csv says was accepted.
    let want = accepted_per_level(sc.dir.path());
    assert_eq!(want.len(), 2);
    let promql =
        format!("sum by (level) (hubload_attempts_total{{class=\"accepted\",test=\"{tag}\"}})");
    let got = query(&client, &base, &promql, "level").await;
    assert_eq!(got, want);
    for l in &o.report.levels {
        assert!(count(l, "http_502") > 0, "faults were injected");
    }
    let e = o.report.exporter.as_ref().unwrap();
    assert_eq!(e.push_failures, 0, "{e:?}");
    // The node exporter's CPU counters and load gauge, per level, from the node source.
    let node_shown = node.trim_start_matches("http://");
    for l in &o.report.levels {
        let s = l.server.as_ref().unwrap();
        let src = s.sources.iter().find(|x| x.source == node_shown).unwrap();
        assert_eq!((src.failures, src.malformed_lines), (0, 0), "{src:?}");
        let cpu = s
            .series
            .iter()
            .filter(|x| x.source == node_shown && x.series == "node_cpu_seconds_total")
            .collect::<Vec<_>>();
        assert!(!cpu.is_empty());
        assert!(cpu
            .iter()
            .all(|x| x.kind == "counter" && x.delta.unwrap() >= 0.0));
        let load = s.series.iter().find(|x| x.series == "node_load1").unwrap();
        assert_eq!(load.kind, "gauge");
        // The unreachable third source failed every round and the run completed anyway.
        let d = s
            .sources
            .iter()
            .find(|x| x.source == dead.trim_start_matches("http://"))
            .unwrap();
        assert_eq!((d.scrapes, d.failures), (0, src.scrapes));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_promql_is_exit_2_before_any_load() {
    let sc = Scenario::start(FaultConfig::default()).await;
    let client = sc.hub.client.clone();
    let Some((_prom, base)) = prometheus(&client, sc.dir.path()).await else {
        return;
    };
    let out = bin(
        &[
            "--hub-url",
            &sc.hub.url,
            "--concurrency",
            "2",
            "--requests",
            "50",
            "--out",
            &sc.dir.path().join("r").display().to_string(),
            "--prometheus-url",
            &base,
            "--server-query",
            "cpu=sum(rate(node_cpu_seconds_total[1m])",
        ],
        sc.dir.path(),
    );
    assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("invalid --server-query `cpu`") && err.contains("parse error"),
        "{err}"
    );
    // Nothing reached the hub: no registration, no publish.
    assert_eq!(sc.hub_stats().await.requests, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_shows_accepted_attempts_while_a_level_runs() {
    // Every publish takes the hub 100 ms, so hubload's three workers are in flight almost
    // all the time and a scrape sees them.
    let sc = Scenario::start(FaultConfig {
        latency_ms: 100,
        ..FaultConfig::default()
    })
    .await;
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let args: Vec<String> = [
        "--hub-url",
        &sc.hub.url,
        "--out",
        &sc.dir.path().display().to_string(),
        "--concurrency",
        "3",
        "--duration",
        "4s",
        "--metrics-listen",
        &listen,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let run = tokio::spawn(async move {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        crate::util::run(&a).await
    });
    let client = sc.hub.client.clone();
    let deadline = Instant::now() + Duration::from_secs(30);
    let seen = loop {
        assert!(
            Instant::now() < deadline,
            "/metrics never showed accepted attempts with three in flight"
        );
        let page = match client.get(format!("http://{listen}/metrics")).send().await {
            Ok(r) => r.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        let value = |prefix: &str| {
            page.lines().find_map(|l| {
                let rest = l.strip_prefix(prefix)?;
                rest.rsplit(' ').next()?.parse::<f64>().ok()
            })
        };
        let accepted = value("hubload_attempts_total{class=\"accepted\",level=\"3\",");
        let inflight = value("hubload_inflight{");
        if let Some(n) = inflight {
            // The live count never exceeds the level's bound, which is exported beside it.
            assert!(n <= 3.0, "{page}");
        }
        if let (Some(n), Some(3.0)) = (accepted.filter(|n| *n > 0.0), inflight) {
            // Seen while the level still runs: all three workers' attempts in flight.
            assert!(!run.is_finished());
            assert!(page.contains("hubload_level{"), "{page}");
            assert_eq!(value("hubload_inflight_limit{"), Some(3.0), "{page}");
            break n;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let o = run.await.unwrap();
    assert!(count(&o.report.levels[0], "accepted") as f64 >= seen);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_push_receiver_is_counted_and_never_blocks_the_load() {
    let sc = Scenario::start(FaultConfig::default()).await;
    let (_held, nowhere_port) = refusing_port();
    let nowhere = format!("http://127.0.0.1:{nowhere_port}/api/v1/write");
    let o = sc
        .run(&[
            "--concurrency",
            "1,2",
            "--requests",
            "100",
            "--prometheus-remote-write",
            &nowhere,
            "--push-interval",
            "200ms",
        ])
        .await;
    let e = o.report.exporter.as_ref().unwrap();
    // Every push failed; at least the two level ends and the run's end were tried.
    assert_eq!(e.push_failures, e.pushes);
    assert!(e.pushes >= 3, "{e:?}");
    assert!(
        e.first_error.as_deref().unwrap().contains("connect"),
        "{e:?}"
    );
    for l in &o.report.levels {
        assert_eq!(count(l, "accepted"), 100);
    }
}

/// Two shards of one run push to one Prometheus: per level, the pushed series of the two
/// shards add up to the merged run's accepted and to the hub's own count, and each shard's
/// series carry its own `shard` label (so neither overwrote the other's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_pushed_series_add_up_to_the_merged_run_and_the_hub() {
    let hub = crate::util::hub_with(FaultConfig {
        fail_503_every: Some(7),
        ..FaultConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let Some((_prom, base)) = prometheus(&hub.client, dir.path()).await else {
        return;
    };
    let write = format!("{base}/api/v1/write");
    let tag = format!("s{}", std::process::id());
    let label = format!("test={tag}");
    let args = [
        "--hub-url",
        &hub.url,
        "--tenants",
        "6",
        "--concurrency",
        "2,4",
        "--requests",
        "200",
        "--quiet",
        "--prometheus-remote-write",
        &write,
        "--push-interval",
        "1s",
        "--push-label",
        &label,
    ];
    let logs = crate::shards::run_shards(dir.path(), 2, "prom-shards", &args).await;
    let merged = crate::shards::merge_logs(dir.path(), &logs);
    let want = accepted_per_level(&dir.path().join("merged"));
    assert_eq!(want.len(), 2, "{want:?}");
    let got = query(
        &hub.client,
        &base,
        &format!("sum by (level) (hubload_attempts_total{{class=\"accepted\",test=\"{tag}\"}})"),
        "level",
    )
    .await;
    assert_eq!(got, want);
    // Both shards pushed, each under its own label, with its own share.
    let per_shard = query(
        &hub.client,
        &base,
        &format!("sum by (shard) (hubload_attempts_total{{test=\"{tag}\"}})"),
        "shard",
    )
    .await;
    assert_eq!(
        per_shard
            .iter()
            .map(|(s, _)| s.as_str())
            .collect::<Vec<_>>(),
        ["0", "1"]
    );
    assert!(per_shard.iter().all(|(_, n)| *n > 0.0), "{per_shard:?}");
    let all: f64 = per_shard.iter().map(|(_, n)| n).sum();
    let t = merged.total.as_ref().unwrap();
    assert_eq!(all, t.derived.samples as f64);
    let s = hub.stats().await;
    assert_eq!(s.publish.total(), t.derived.samples);
    assert_eq!(
        want.iter().map(|(_, n)| n).sum::<f64>(),
        s.publish.accepted as f64
    );
}
