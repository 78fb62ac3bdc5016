//! What is wired for HTTP/2 besides the publish itself, each over h2c to the reference hub
//! (which tells HTTP/2 from HTTP/1.1 by the connection preface): the websub thin ping,
//! `--resolve` with several addresses (one hub on each, counts per address), the JTL, two
//! shards merged, and the open model; and `--insecure` over TLS to nginx (ALPN `h2`). hubload's counts equal each hub's own exactly.

use std::net::SocketAddr;

use hubload_hub::{FaultConfig, HubConfig};
use tokio::net::TcpListener;

use crate::http2::{logged, setup, Server};
use crate::shards::{merge_logs, run_shards};
use crate::util::{count, hub_with, jtl_rows, run, TestHub};

/// `--http-version 2` with 2 connections of 4 streams each.
const H2: &[&str] = &[
    "--http-version",
    "2",
    "--pool-per-host",
    "2",
    "--h2-streams",
    "4",
];

fn with<'a>(base: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(more).copied().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websub_thin_pings_over_h2_reconcile_with_the_hub() {
    let hub = hub_with(FaultConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = "http://127.0.0.1:9/topics/";
    let args = [
        "--hub-url",
        &hub.url,
        "--dialect",
        "websub",
        "--topic-url-prefix",
        prefix,
        "--register",
        "always",
        "--topics",
        "shared",
        "--concurrency",
        "6",
        "--requests",
        "90",
        "--out",
        dir.path().to_str().unwrap(),
    ];
    let o = run(&with(&args, H2)).await;
    let total = o.report.total.as_ref().unwrap();
    assert_eq!((total.derived.samples, count(total, "accepted")), (90, 90));
    let s = hub.stats().await;
    assert_eq!((s.publish.accepted, s.publish.total()), (90, 90));
    assert_eq!(s.register.accepted, 1);
    let topic = format!("{prefix}hubload.shared.schema.WSO2.v1.event");
    assert_eq!(s.topics[&topic].published, 90);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resolve_to_two_addresses_spreads_connections_and_counts_each() {
    if let Err(e) = std::net::TcpListener::bind("[::1]:0") {
        eprintln!("skipped: this machine has no ::1 ({e})");
        return;
    }
    // One hub on 127.0.0.1:P and another on [::1]:P: each counts only what reached it.
    let (v4, v6) = loop {
        let a = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = a.local_addr().unwrap().port();
        if let Ok(b) = TcpListener::bind(("::1", port)).await {
            break (a, b);
        }
    };
    let port = v4.local_addr().unwrap().port();
    let hubs = [
        TestHub::start_on(v4, HubConfig::default()),
        TestHub::start_on(v6, HubConfig::default()),
    ];
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://dual.test:{port}/hub");
    let pin = format!("dual.test:{port}:127.0.0.1,[::1]");
    let args = [
        "--hub-url",
        &url,
        "--resolve",
        &pin,
        "--topics",
        "shared",
        "--register",
        "never",
        "--concurrency",
        "8",
        "--requests",
        "400",
        "--out",
        dir.path().to_str().unwrap(),
    ];
    let o = run(&with(&args, H2)).await;
    let total = o.report.total.as_ref().unwrap();
    // Unregistered, every publish is denied: still one answered request each.
    assert_eq!((total.derived.samples, count(total, "denied")), (400, 400));
    let host = o.report.hub.as_ref().unwrap();
    let mut per_address = Vec::new();
    for hub in &hubs {
        let seen = hub.stats().await.publish.total();
        let at = SocketAddr::new(hub.addr.ip(), port).to_string();
        let counted = host
            .addresses
            .iter()
            .find(|a| a.address == at)
            .map_or(0, |a| a.attempts);
        per_address.push((at, counted, seen));
    }
    // The two connections took one address each.
    for (at, counted, seen) in &per_address {
        assert_eq!(counted, seen, "{at}: {per_address:?}");
        assert!(*seen > 0, "{per_address:?}");
    }
    assert_eq!(per_address.iter().map(|p| p.2).sum::<u64>(), 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_jtl_has_one_row_per_h2_attempt() {
    let hub = hub_with(FaultConfig {
        fail_503_every: Some(5),
        ..FaultConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let jtl = dir.path().join("run.jtl");
    let args = [
        "--hub-url",
        &hub.url,
        "--topics",
        "shared",
        "--concurrency",
        "2,5",
        "--requests",
        "60",
        "--jtl",
        jtl.to_str().unwrap(),
        "--out",
        dir.path().to_str().unwrap(),
    ];
    let o = run(&with(&args, H2)).await;
    let rows = jtl_rows(&jtl);
    let total = o.report.total.as_ref().unwrap();
    assert_eq!(rows.len() as u64, total.derived.samples);
    assert_eq!(rows.len(), 120);
    // Column 3 is the status: the rows' 503s and 200s are the hub's own counts.
    let status = |code: &str| rows.iter().filter(|r| &r[3] == code).count() as u64;
    let s = hub.stats().await;
    assert_eq!(status("503"), count(total, "http_503"));
    assert_eq!(status("200"), s.publish.accepted);
    assert_eq!(status("503") + status("200"), 120);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_h2_shards_merge_to_the_hubs_counts() {
    let hub = hub_with(FaultConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--hub-url",
        &hub.url,
        "--tenants",
        "4",
        "--seed",
        "7",
        "--concurrency",
        "3,6",
        "--requests",
        "200",
        "--quiet",
    ];
    let logs = run_shards(dir.path(), 2, "h2-shards", &with(&args, H2)).await;
    let merged = merge_logs(dir.path(), &logs);
    let t = merged.total.as_ref().unwrap();
    let s = hub.stats().await;
    // Each shard sends its share of each level's 200 publishes.
    assert_eq!((t.derived.samples, count(t, "accepted")), (400, 400));
    assert_eq!((s.publish.accepted, s.publish.total()), (400, 400));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_open_model_over_h2_counts_every_scheduled_send() {
    let hub = hub_with(FaultConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--hub-url",
        &hub.url,
        "--topics",
        "shared",
        "--rate",
        "200",
        "--duration",
        "2s",
        "--max-inflight",
        "50",
        "--out",
        dir.path().to_str().unwrap(),
    ];
    let o = run(&with(&args, H2)).await;
    let level = &o.report.levels[0];
    let check = &o.report.rate_checks[0];
    assert_eq!(check.scheduled, 400);
    assert_eq!(level.derived.events.total + level.stats.dropped, 400);
    assert_eq!(count(level, "accepted"), level.derived.samples);
    let s = hub.stats().await;
    assert_eq!(s.publish.accepted, level.derived.samples);
    assert!(level.derived.corrected_latency_us.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insecure_skips_verification_over_h2_and_nginx_logs_every_request_as_http2() {
    let servers = [Server {
        listen: "ssl http2",
        settings: "keepalive_requests 100000;",
    }];
    let Some((hub, nginx, _, dir)) = setup(&servers).await else {
        return;
    };
    // The throw-away CA is not trusted here: without `--insecure` the handshake would fail.
    let url = format!("https://localhost:{}/hub", nginx.port);
    let out = dir.path().join("out");
    let args = [
        "--hub-url",
        &url,
        "--insecure",
        "--topics",
        "shared",
        "--concurrency",
        "4",
        "--requests",
        "50",
        "--out",
        out.to_str().unwrap(),
    ];
    let o = run(&with(&args, H2)).await;
    let total = o.report.total.as_ref().unwrap();
    assert_eq!((total.derived.samples, count(total, "accepted")), (50, 50));
    assert_eq!(hub.stats().await.publish.accepted, 50);
    // 1 registration and 50 publishes, all over HTTP/2.
    assert_eq!(logged(dir.path()), [("HTTP/2.0 200".to_string(), 51)]);
}
