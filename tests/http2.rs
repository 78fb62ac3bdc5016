//! HTTP/2 against a server we did not write: nginx with `http2` in front of the reference
//! hub, over h2c (prior knowledge) and over TLS from a throw-away CA (ALPN `h2`). Every request
//! nginx logs is `HTTP/2.0`, and the counts equal hubload's and the hub's exactly. nginx's
//! `http2_max_concurrent_streams` drives refused streams and its `keepalive_requests` GOAWAY;
//! neither is logged, both are retried (RFC 9113 §8.7).
//!
//! Needs `nginx` (with http_v2, as Debian's nginx-light) and `openssl` on PATH (`.ci/run`
//! installs them); without them the tests fail when `CI` is set, and otherwise skip loudly.

use std::path::Path;
use std::time::Duration;

use hubload_hub::FaultConfig;

use crate::https::{make_certs, Nginx};
use crate::util::{assert_exit, bin, count, free_port, hub_with, line, run, tool, TestHub};

/// One nginx `server` block: what follows `listen 127.0.0.1:PORT` and its other settings.
pub(crate) struct Server {
    pub listen: &'static str,
    pub settings: &'static str,
}

/// Start a one-worker nginx in `dir` with one listener per `servers` entry, each proxying to
/// `upstream` over HTTP/1.1 and logging `$server_protocol $status`; the ports in order.
fn start(nginx: &Path, dir: &Path, upstream: &str, servers: &[Server]) -> (Nginx, Vec<u16>) {
    let d = dir.display();
    let ports: Vec<u16> = servers.iter().map(|_| free_port()).collect();
    let blocks: String = servers
        .iter()
        .zip(&ports)
        .map(|(s, port)| {
            format!(
                "  server {{\n    listen 127.0.0.1:{port} {};\n    ssl_certificate {d}/leaf.pem;\n    \
                 ssl_certificate_key {d}/leaf.key;\n    {}\n    location / {{ proxy_pass http://hub; \
                 proxy_http_version 1.1; proxy_set_header Connection \"\"; }}\n  }}\n",
                s.listen, s.settings
            )
        })
        .collect();
    let conf = format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 1024; }}\n\
         http {{\n  log_format proto '$server_protocol $status';\n  access_log {d}/access.log proto;\n\
           client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n\
           uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
           upstream hub {{ server {upstream}; keepalive 64; }}\n{blocks}}}\n"
    );
    let n = Nginx::spawn(nginx, dir, &conf, &ports);
    (n, ports)
}

/// nginx's access log as `(protocol status, lines)`, sorted.
pub(crate) fn logged(dir: &Path) -> Vec<(String, usize)> {
    let text = std::fs::read_to_string(dir.join("access.log")).unwrap_or_default();
    let mut counts = std::collections::BTreeMap::new();
    for line in text.lines() {
        *counts.entry(line.to_string()).or_insert(0) += 1;
    }
    counts.into_iter().collect()
}

/// The hub and nginx with `servers` in front of it; `None` when a tool is missing.
pub(crate) async fn setup(
    servers: &[Server],
) -> Option<(TestHub, Nginx, Vec<u16>, tempfile::TempDir)> {
    let openssl = tool("openssl", "the HTTP/2 tests")?;
    let nginx = tool("nginx", "the HTTP/2 tests")?;
    let dir = tempfile::tempdir().unwrap();
    make_certs(&openssl, dir.path());
    let hub = hub_with(FaultConfig::default()).await;
    let upstream = hub
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/hub")
        .to_string();
    let (n, ports) = start(&nginx, dir.path(), &upstream, servers);
    Some((hub, n, ports, dir))
}

/// The hub behind one nginx h2c listener (prior knowledge) with `settings`, and the hub's URL
/// through it; `None` when a tool is missing.
async fn h2c(settings: &'static str) -> Option<(TestHub, Nginx, tempfile::TempDir, String)> {
    let servers = [Server {
        listen: "http2",
        settings,
    }];
    let (hub, nginx, _, dir) = setup(&servers).await?;
    let url = format!("http://127.0.0.1:{}/hub", nginx.port);
    Some((hub, nginx, dir, url))
}

/// hubload over HTTP/2 at `url`, reports in `out`, 20 topics (5 tenants × 4 channels), and
/// `flags`.
async fn run_h2(url: &str, out: &Path, flags: &[&str]) -> hubload::RunOutcome {
    let mut args = vec!["--hub-url", url, "--out", out.to_str().unwrap()];
    args.extend_from_slice(&["--tenants", "5", "--sps", "2", "--users", "3"]);
    args.extend_from_slice(&["--http-version", "2"]);
    args.extend_from_slice(flags);
    run(&args).await
}

/// 5 tenants × 4 channels = 20 topics; two levels of 300 publishes.
const LOAD: &str = "--tenants 5 --sps 2 --users 3 --concurrency 4,16 --requests 300 \
                    --http-version 2 --pool-per-host 2 --h2-streams 8 --deregister";

/// Registration, 600 publishes and deregistration over HTTP/2 at `url`: hubload, the hub and
/// nginx's log agree exactly, and nginx logged every request as HTTP/2.0.
async fn reconciles(url: &str, extra: &[&str], hub: &TestHub, dir: &Path) {
    let out = dir.join("out");
    let mut args = vec!["--hub-url", url, "--out", out.to_str().unwrap()];
    args.extend(line(LOAD));
    args.extend_from_slice(extra);
    let o = run(&args).await;
    let r = &o.report;
    let total = r.total.as_ref().unwrap();
    assert_eq!(
        (total.derived.samples, count(total, "accepted")),
        (600, 600)
    );
    let reg = r.registration.as_ref().unwrap();
    assert_eq!((reg.result.topics, reg.accepted), (20, 20));
    let dereg = r.deregistration.as_ref().unwrap();
    assert_eq!((dereg.result.topics, dereg.accepted), (20, 20));
    let s = hub.stats().await;
    assert_eq!(
        (s.register.accepted, s.publish.accepted, s.publish.total()),
        (20, 600, 600)
    );
    assert_eq!(logged(dir), [("HTTP/2.0 200".to_string(), 640)]);
    assert_eq!(o.config.http.h2_streams, 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2c_with_prior_knowledge_reconciles_with_nginx_and_the_hub() {
    let Some((hub, _nginx, dir, url)) = h2c("keepalive_requests 100000;").await else {
        return;
    };
    reconciles(&url, &[], &hub, dir.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2_over_tls_by_alpn_reconciles_and_a_server_without_h2_is_one_line_exit_2() {
    let servers = [
        Server {
            listen: "ssl http2",
            settings: "keepalive_requests 100000;",
        },
        Server {
            listen: "ssl",
            settings: "keepalive_requests 100000;",
        },
    ];
    let Some((hub, _nginx, ports, dir)) = setup(&servers).await else {
        return;
    };
    let ca = dir.path().join("ca.pem");
    let url = format!("https://localhost:{}/hub", ports[0]);
    reconciles(&url, &["--ca-cert", ca.to_str().unwrap()], &hub, dir.path()).await;

    // The listener without http2 chooses http/1.1 by ALPN: `2` is refused before any load.
    let h1 = format!("https://localhost:{}/hub", ports[1]);
    let args = ["--hub-url", &h1, "--ca-cert", ca.to_str().unwrap()];
    let o = bin(
        &[&args[..], &["--http-version", "2", "--requests", "10"]].concat(),
        dir.path(),
    );
    assert_exit(&o, 2);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains("--http-version 2"))
        .unwrap_or_default();
    assert!(line.contains("did not choose h2"), "{stderr}");
    assert_eq!(logged(dir.path()), [("HTTP/2.0 200".to_string(), 640)]);
    // `auto` takes the server's choice: HTTP/1.1, every request logged so.
    let out = dir.path().join("auto");
    let auto = [
        "--http-version",
        "auto",
        "--requests",
        "30",
        "--concurrency",
        "3",
        "--out",
        out.to_str().unwrap(),
    ];
    let o = run(&[&args[..], &auto[..]].concat()).await;
    assert_eq!(count(o.report.total.as_ref().unwrap(), "accepted"), 30);
    // The 30 publishes and the registration of the default workload's 40 topics.
    assert_eq!(o.report.registration.as_ref().unwrap().accepted, 40);
    assert_eq!(
        logged(dir.path()),
        [
            ("HTTP/1.1 200".to_string(), 70),
            ("HTTP/2.0 200".to_string(), 640)
        ]
    );
}

/// A TCP relay on 127.0.0.1 to `port` that holds each connection's first bytes from the
/// server (nginx's SETTINGS) back for `late`, as a long round trip would: the client's first
/// streams then go out before it knows the server's stream limit (RFC 9113 §5.1.2 and §8.7:
/// the server refuses those over it). Everything else passes as it comes.
async fn late_settings_relay(port: u16, late: Duration) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let relay = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
                continue;
            };
            let (mut cr, mut cw) = client.into_split();
            let (mut sr, mut sw) = server.into_split();
            tokio::spawn(async move {
                let _ = tokio::io::copy(&mut cr, &mut sw).await;
                let _ = sw.shutdown().await;
            });
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let mut first = true;
                while let Ok(n @ 1..) = sr.read(&mut buf).await {
                    if std::mem::take(&mut first) {
                        tokio::time::sleep(late).await;
                    }
                    if cw.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
                let _ = cw.shutdown().await;
            });
        }
    });
    relay
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_max_concurrent_streams_refuses_streams_that_are_retried_and_never_logged() {
    let servers = [Server {
        listen: "http2",
        settings: "http2_max_concurrent_streams 2; keepalive_requests 100000;",
    }];
    let Some((hub, nginx, _, dir)) = setup(&servers).await else {
        return;
    };
    let relay = late_settings_relay(nginx.port, Duration::from_millis(300)).await;
    let url = format!("http://127.0.0.1:{relay}/hub");
    let out = dir.path().join("out");
    // 64 streams at once on one connection, before nginx's SETTINGS (2) arrive: nginx
    // refuses those past its limit. One registration at a time stays under it.
    let args = line(
        "--pool-per-host 1 --h2-streams 64 --concurrency 64 --requests 640 \
         --register-concurrency 1 --retries 3",
    );
    let o = run_h2(&url, &out, &args).await;
    let total = o.report.total.as_ref().unwrap();
    let refused = count(total, "refused_stream");
    assert!(refused > 0, "nginx refused no stream");
    assert_eq!(count(total, "accepted"), 640);
    assert_eq!(total.derived.samples, 640 + refused);
    assert_eq!(total.derived.events.total, 640);
    assert_eq!(total.derived.events.succeeded, 640);
    assert_eq!(total.derived.events.retries, refused);
    assert_eq!(hub.stats().await.publish.accepted, 640);
    // Refused streams were never processed, so never logged.
    assert_eq!(logged(dir.path()), [("HTTP/2.0 200".to_string(), 660)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_keepalive_requests_ends_connections_with_goaway_and_goaway_streams_are_retried() {
    let Some((hub, _nginx, dir, url)) = h2c("keepalive_requests 50;").await else {
        return;
    };
    let out = dir.path().join("out");
    let args =
        line("--pool-per-host 2 --h2-streams 16 --concurrency 32 --requests 1000 --retries 5");
    let o = run_h2(&url, &out, &args).await;
    let total = o.report.total.as_ref().unwrap();
    let goaway = count(total, "goaway");
    // 1,000 publishes on connections of 50 requests each: about 20 connections drained, each
    // with streams in flight past its last.
    assert!(goaway > 0, "no stream was above a GOAWAY's last id");
    assert_eq!(count(total, "accepted"), 1000);
    assert_eq!(total.derived.samples, 1000 + goaway);
    assert_eq!(total.derived.events.succeeded, 1000);
    assert_eq!(total.derived.events.retries, goaway);
    assert_eq!(hub.stats().await.publish.accepted, 1000);
    assert_eq!(logged(dir.path()), [("HTTP/2.0 200".to_string(), 1020)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_subscriber_fleet_subscribes_and_unsubscribes_over_h2c() {
    // nginx's plain `http2` listener speaks h2c with prior knowledge only: an HTTP/1.1
    // subscription request there would fail, so every subscription that succeeds went over h2.
    let Some((hub, _nginx, dir, url)) = h2c("keepalive_requests 100000;").await else {
        return;
    };
    let out = dir.path().join("out");
    let args = line("--concurrency 4 --requests 100 --subscribers 1");
    let o = run_h2(&url, &out, &args).await;
    let r = &o.report;
    let p = r.subscription.as_ref().expect("a subscription section");
    assert_eq!((p.requested, p.accepted, p.verified), (20, 20, 20), "{p:?}");
    let u = r.unsubscription.as_ref().expect("unsubscribed at the end");
    assert_eq!((u.requested, u.accepted), (20, 20), "{u:?}");
    assert_eq!(count(r.total.as_ref().unwrap(), "accepted"), 100);
    assert_eq!(hub.stats().await.publish.accepted, 100);
    // 20 registrations, 20 subscriptions, 100 publishes, 20 unsubscriptions; the hub answers
    // (un)subscribe with 202.
    assert_eq!(
        logged(dir.path()),
        [
            ("HTTP/2.0 200".to_string(), 120),
            ("HTTP/2.0 202".to_string(), 40)
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_embedded_run_speaks_h2c_to_the_reference_hub() {
    // No --hub-url: the embedded hub. Over http `2` is prior knowledge, so a hub that did not
    // serve h2c would answer no stream at all (protocol_error), never `accepted`.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = run(&[
        "--out",
        out.to_str().unwrap(),
        "--tenants",
        "2",
        "--http-version",
        "2",
        "--h2-streams",
        "4",
        "--concurrency",
        "8",
        "--requests",
        "200",
        "--deregister",
    ])
    .await;
    let r = &o.report;
    assert_eq!(count(r.total.as_ref().unwrap(), "accepted"), 200);
    let topics = r.topics.len() as u64;
    let reg = r.registration.as_ref().unwrap();
    assert_eq!((reg.result.topics, reg.accepted), (topics, topics));
    let dereg = r.deregistration.as_ref().unwrap();
    assert_eq!((dereg.result.topics, dereg.accepted), (topics, topics));
    // An HTTP/2 run's aggregate.csv has the HTTP/2 class columns.
    let csv = std::fs::read_to_string(out.join("aggregate.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(
        header.contains(
            "Connection errors,Refused streams,GOAWAY,Stream resets,Protocol errors,TLS errors"
        ),
        "{header}"
    );
}
