//! Fairness through a proxy we did not write: nginx in front of the reference hub with
//! `limit_req` keyed on the tenant part of each publish's `hub.topic`. Per tenant, the 503s
//! hubload counts equal the 503s nginx logged, and its good attempts the 200s nginx logged
//! and the hub's accepted publishes.
//!
//! Needs `nginx` on PATH (`.ci/run` installs it); without it the test fails when `CI` is set,
//! and otherwise skips loudly.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use hubload_hub::FaultConfig;

use crate::https::Nginx;
use crate::util::{free_port, hub_with, run, tool};

/// Start a one-worker nginx in `dir` proxying to `upstream`, limiting publishes per tenant to
/// 20 a second with a burst of 5 (the rest answered 503 at once), and logging each request
/// as `PUBLISH TENANT STATUS` (`PUBLISH` 1 for a publish, else 0).
fn start(nginx: &Path, dir: &Path, upstream: &str) -> Nginx {
    let d = dir.display();
    let port = free_port();
    let conf = format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 1024; }}\n\
         http {{\n\
           map $args $publish {{ \"~(^|&)hub\\.mode=publish(&|$)\" 1; default 0; }}\n\
           map $args $tenant {{ \"~(^|&)hub\\.topic=(?<t>[^.&]+)\" $t; default -; }}\n\
           map \"$publish:$tenant\" $limit_key {{ \"~^1:(?<k>.+)$\" $k; default \"\"; }}\n\
           limit_req_zone $limit_key zone=tenants:1m rate=20r/s;\n\
           log_format tenant '$publish $tenant $status';\n  access_log {d}/access.log tenant;\n\
           client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n\
           uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
           upstream hub {{ server {upstream}; keepalive 16; }}\n\
           server {{\n    listen 127.0.0.1:{port};\n    location / {{ limit_req zone=tenants burst=5 nodelay; \
             proxy_pass http://hub; proxy_http_version 1.1; proxy_set_header Connection \"\"; }}\n  }}\n}}\n"
    );
    Nginx::spawn(nginx, dir, &conf, &[port])
}

/// nginx's publishes per (tenant, status), once it has logged `want` of them (polled for at
/// most 10 s: a line is written after its answer was sent).
fn logged_publishes(dir: &Path, want: u64) -> BTreeMap<(String, u16), u64> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(dir.join("access.log")).unwrap_or_default();
        let mut by = BTreeMap::new();
        for line in text.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            if f[0] == "1" {
                *by.entry((f[1].to_string(), f[2].parse().unwrap()))
                    .or_default() += 1;
            }
        }
        if by.values().sum::<u64>() >= want || Instant::now() > deadline {
            return by;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_tenant_503s_equal_nginx_limit_req_log_per_tenant() {
    let Some(nginx) = tool("nginx", "the per-tenant limit_req test") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let hub = hub_with(FaultConfig::default()).await;
    let upstream = hub
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/hub")
        .to_string();
    let n = start(&nginx, dir.path(), &upstream);
    let url = format!("http://127.0.0.1:{}/hub", n.port);
    let out = tempfile::tempdir().unwrap();
    let r = run(&[
        "--hub-url",
        &url,
        "--out",
        out.path().to_str().unwrap(),
        "--tenants",
        "4",
        "--concurrency",
        "8",
        "--requests",
        "600",
        "--retries",
        "0",
    ])
    .await
    .report;
    let l = &r.levels[0];
    let f = l.fairness.as_ref().expect("4 tenants: figures");
    assert_eq!(f.tenants, 4);
    let log = logged_publishes(dir.path(), l.derived.samples);
    let got = |t: &str, status: u16| log.get(&(t.to_string(), status)).copied().unwrap_or(0);
    assert_eq!(log.values().sum::<u64>(), 600, "{log:?}");
    // Only 200s and nginx's own 503s: every attempt is one or the other.
    assert!(log.keys().all(|(_, s)| *s == 200 || *s == 503), "{log:?}");
    let s = hub.stats().await;
    let mut hub_accepted: BTreeMap<String, u64> = BTreeMap::new();
    for (name, t) in &s.topics {
        *hub_accepted
            .entry(name.split('.').next().unwrap().to_string())
            .or_default() += t.published;
    }
    // tenants.csv has every class per tenant: its http_503 column is nginx's 503s.
    let mut csv = csv::Reader::from_path(out.path().join("tenants.csv")).unwrap();
    let head: Vec<String> = csv.headers().unwrap().iter().map(String::from).collect();
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let mut csv_503: BTreeMap<String, u64> = BTreeMap::new();
    for rec in csv.records() {
        let rec = rec.unwrap();
        csv_503.insert(
            rec[col("Tenant")].to_string(),
            rec[col("http_503")].parse().unwrap(),
        );
    }
    for t in &f.by_tenant {
        let name = t.tenant.as_str();
        assert_eq!(t.attempts - t.good, got(name, 503), "{name}: 503s");
        assert_eq!(csv_503[name], got(name, 503), "{name}: tenants.csv");
        assert_eq!(t.good, got(name, 200), "{name}: 200s");
        assert_eq!(t.good, hub_accepted[name], "{name}: the hub's accepted");
    }
    let limited: u64 = f.by_tenant.iter().map(|t| got(&t.tenant, 503)).sum();
    assert!(limited > 0, "the limit bit: {log:?}");
}
