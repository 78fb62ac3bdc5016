//! WebSub hubs through an HTTP proxy, a real tinyproxy: an `https://` hub reached with
//! `HTTPS_PROXY` over HTTP/1.1 and HTTP/2 reconciles with the hub's counts and with the
//! CONNECTs in tinyproxy's log; `NO_PROXY` and `http://` hubs go direct unless `--proxy`
//! names the proxy; a proxy refusing the tunnel is `conn_refused.proxy` with its status in
//! every JTL row, and stops the registration with one line; a proxy that never answers ends
//! every attempt at its connect timeout; `hubload check` shows the route and the tunnel.
//! The proxy's password appears in nothing hubload writes or prints. Needs `openssl` and
//! `tinyproxy` on PATH (`.ci/run` installs them).

use std::path::Path;
use std::process::Output;

use base64::Engine;

use crate::check::{heads, steps};
use crate::creds::{assert_nowhere, full_run_env};
use crate::proxy_common::Tinyproxy;
use crate::support::tls_hub::TlsHub;
use crate::util::{jtl_rows, read_summary, Scenario};

const USER: &str = "hubload";
const PASSWORD: &str = "w3bsub-pr0xy";
const SMALL: &[&str] = &["--tenants", "2", "--sps", "1", "--users", "2"];

/// The built binary in `dir` with `env`, a JTL (`run.jtl`) and reports in `out/`, run off the
/// runtime (the hub serves meanwhile).
async fn run_env(dir: &Path, args: &[&str], env: &[(&str, String)]) -> Output {
    let dir = dir.to_path_buf();
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    all.extend(SMALL.iter().map(|s| s.to_string()));
    all.extend(["--out", "out"].map(String::from));
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    tokio::task::spawn_blocking(move || {
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        full_run_env(&dir, &all, &env)
    })
    .await
    .unwrap()
}

/// An https reference hub, tinyproxy (with this test's credentials when `auth`) and a
/// directory for the run; `None` when openssl or tinyproxy is missing (outside CI).
async fn hub_behind_proxy(auth: bool) -> Option<(TlsHub, Tinyproxy, tempfile::TempDir)> {
    let hub = TlsHub::start().await?;
    let tp = Tinyproxy::start(auth.then_some((USER, PASSWORD)))?;
    Some((hub, tp, tempfile::tempdir().unwrap()))
}

fn proxy_url(tp: &Tinyproxy, password: &str) -> String {
    format!("http://{USER}:{password}@127.0.0.1:{}", tp.port)
}

fn ok(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Over HTTP/1.1 and HTTP/2: every publish reaches the hub through the proxy, and the proxy
/// opened exactly the tunnels hubload's connections needed: one per TLS handshake of the
/// load, one for the registration (`--register-concurrency 1`), and for HTTP/2 the ALPN
/// question asked once at start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_hub_through_tinyproxy_reconciles_with_the_hub_and_the_proxy_log() {
    for (version, extra) in [("1.1", 0), ("2", 1)] {
        let Some((hub, tp, dir)) = hub_behind_proxy(true).await else {
            return;
        };
        let url = hub.url();
        let ca = hub.ca().display().to_string();
        let mut args = vec![
            "--hub-url",
            &url,
            "--ca-cert",
            &ca,
            "--http-version",
            version,
            "--pool-per-host",
            "3",
            "--concurrency",
            "6",
            "--requests",
            "240",
            "--register-concurrency",
            "1",
        ];
        if version == "2" {
            args.extend(["--h2-streams", "4"]);
        }
        let env = [("HTTPS_PROXY", proxy_url(&tp, PASSWORD))];
        let out = run_env(dir.path(), &args, &env).await;
        ok(&out);
        let report = read_summary(&dir.path().join("out"));
        let total = report.total.as_ref().unwrap();
        assert_eq!(
            (
                total.derived.samples,
                total.stats.counts.get(hubload::result::Class::Accepted)
            ),
            (240, 240),
            "HTTP/{version}"
        );
        let s = hub.state.stats();
        assert_eq!((s.publish.accepted, s.publish.total()), (240, 240));
        let topics = report.topics.len() as u64;
        assert_eq!(s.register.accepted, topics);
        // Every attempt went to the proxy's address; each connection was one handshake.
        let h = report.hub.as_ref().unwrap();
        let proxy_addr = format!("127.0.0.1:{}", tp.port);
        let addrs: Vec<(String, u64)> = h
            .addresses
            .iter()
            .map(|a| (a.address.clone(), a.attempts))
            .collect();
        assert_eq!(addrs, [(proxy_addr, 240)], "HTTP/{version}");
        let handshakes = h.tls_handshakes.as_ref().unwrap().count as usize;
        assert!((1..=3).contains(&handshakes), "{handshakes}");
        let authority = format!("localhost:{}", hub.port);
        let want = handshakes + 1 + extra;
        let got = tp.wait_for(want, |t| t.connects(&authority));
        assert_eq!(got, want, "HTTP/{version}: tunnels in tinyproxy's log");
        assert_eq!(tp.all_connects(), want, "no tunnel elsewhere");
        let said = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains(&format!(
                "through the proxy http://127.0.0.1:{} (HTTPS_PROXY",
                tp.port
            )),
            "{said}"
        );
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
        assert_nowhere(dir.path(), &out, &[PASSWORD, &basic]);
        hub.stop().await;
    }
}

/// `NO_PROXY` naming the hub, and an `http://` hub with only the variable set, go direct:
/// no CONNECT at all. `--proxy` moves an `http://` hub too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_proxy_and_http_hubs_go_direct_unless_the_flag_names_the_proxy() {
    let Some((tls, tp, dir)) = hub_behind_proxy(false).await else {
        return;
    };
    let ca = tls.ca().display().to_string();
    let via = tp.url();
    let env = [
        ("HTTPS_PROXY", via.clone()),
        ("NO_PROXY", "example.org, localhost".to_string()),
    ];
    let url = tls.url();
    let args = ["--hub-url", &url, "--ca-cert", &ca, "--requests", "50"];
    ok(&run_env(dir.path(), &args, &env).await);
    assert_eq!(tls.state.stats().publish.accepted, 50);
    assert_eq!(tp.all_connects(), 0, "NO_PROXY names localhost");
    tls.stop().await;

    let sc = Scenario::start(Default::default()).await;
    let url = sc.hub.url.clone();
    let args = ["--hub-url", &url, "--requests", "50", "--concurrency", "1"];
    ok(&run_env(sc.dir.path(), &args, &[("HTTPS_PROXY", via.clone())]).await);
    assert_eq!(sc.hub.state.stats().publish.accepted, 50);
    assert_eq!(tp.all_connects(), 0, "HTTPS_PROXY is not for http:// hubs");

    let flagged = [
        "--hub-url",
        &url,
        "--requests",
        "50",
        "--concurrency",
        "1",
        "--register-concurrency",
        "1",
        "--proxy",
        &via,
    ];
    ok(&run_env(sc.dir.path(), &flagged, &[]).await);
    assert_eq!(sc.hub.state.stats().publish.accepted, 100);
    let authority = url.trim_start_matches("http://").trim_end_matches("/hub");
    // One tunnel for the registration, one for the load's one connection.
    assert_eq!(tp.wait_for(2, |t| t.connects(authority)), 2);
    assert_eq!(tp.all_connects(), 2);
}

/// Wrong credentials: the registration stops before any load with one line naming the
/// proxy's answer and the fix; without registration, every publish is
/// `conn_refused.proxy` with the proxy's status as its JTL response code, and none reaches
/// the hub.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_refusing_the_tunnel_is_counted_conn_refused_proxy_with_its_status() {
    let Some((hub, tp, dir)) = hub_behind_proxy(true).await else {
        return;
    };
    let url = hub.url();
    let ca = hub.ca().display().to_string();
    let wrong = "not-the-password";
    let env = [("HTTPS_PROXY", proxy_url(&tp, wrong))];
    let args = ["--hub-url", &url, "--ca-cert", &ca, "--requests", "20"];
    let out = run_env(dir.path(), &args, &env).await;
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.starts_with("hubload: error:"))
        .unwrap_or_else(|| panic!("{stderr}"));
    // tinyproxy answers wrong credentials 401 (others 407).
    assert!(
        line.contains("the HTTP proxy refused the tunnel to the hub: answered 401 (conn_refused.proxy); give the proxy's credentials in its URL"),
        "{line}"
    );
    assert!(!stderr.contains(wrong));
    assert_eq!(hub.state.stats().register.total(), 0);

    let never = [
        "--hub-url",
        &url,
        "--ca-cert",
        &ca,
        "--requests",
        "20",
        "--concurrency",
        "2",
        "--register",
        "never",
    ];
    let out = run_env(dir.path(), &never, &env).await;
    let report = read_summary(&dir.path().join("out"));
    let total = report.total.as_ref().unwrap();
    let refused = total.stats.counts.get(hubload::result::Class::ConnRefused);
    assert_eq!((total.derived.samples, refused), (20, 20), "{out:?}");
    assert_eq!(
        total
            .stats
            .reasons
            .get(hubload::result::Reason::ProxyRefused),
        20
    );
    let codes: Vec<String> = jtl_rows(&dir.path().join("run.jtl"))
        .iter()
        .map(|r| r[3].to_string())
        .collect();
    assert_eq!(codes, vec!["401".to_string(); 20]);
    assert_eq!(hub.state.stats().publish.total(), 0);
    // Every attempt asked for a tunnel of its own, a refused one being no connection to
    // reuse: each topic's registration in the first run, then the 20 publishes.
    let authority = format!("localhost:{}", hub.port);
    let want = report.topics.len() + 20;
    assert_eq!(tp.wait_for(want, |t| t.connects(&authority)), want);
    assert_nowhere(dir.path(), &out, &[wrong]);
    hub.stop().await;
}

/// A proxy that takes the connection and never answers CONNECT: every attempt ends at its
/// connect timeout, counted `timeout_connect`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_that_never_answers_ends_each_attempt_at_the_connect_timeout() {
    const CONNECT_MS: u64 = 300;
    let lateness = crate::support::lateness::Lateness::watch();
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = silent.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        let mut conns = Vec::new();
        while let Ok((s, _)) = silent.accept().await {
            conns.push(s); // read nothing, answer nothing
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let proxy = format!("http://127.0.0.1:{port}");
    let args = [
        "--hub-url",
        "https://hub.invalid/hub",
        "--proxy",
        &proxy,
        "--register",
        "never",
        "--connect-timeout",
        "300ms",
        "--timeout",
        "2s",
        "--requests",
        "6",
        "--concurrency",
        "2",
    ];
    let out = run_env(dir.path(), &args, &[]).await;
    let report = read_summary(&dir.path().join("out"));
    let total = report.total.as_ref().unwrap();
    let timed_out = total
        .stats
        .counts
        .get(hubload::result::Class::TimeoutConnect);
    assert_eq!((total.derived.samples, timed_out), (6, 6), "{out:?}");
    let bound = lateness.bound(std::time::Duration::from_millis(CONNECT_MS));
    for r in jtl_rows(&dir.path().join("run.jtl")) {
        let elapsed: u64 = r[1].parse().unwrap();
        assert!(
            (CONNECT_MS - 5..=bound.as_millis() as u64).contains(&elapsed),
            "an attempt took {elapsed} ms against a {CONNECT_MS} ms connect timeout, bound {bound:?}"
        );
    }
    held.abort();
}

/// `hubload check` through the proxy: the route, DNS and TCP of the proxy, the tunnel, then
/// TLS and the hub's answer; wrong credentials fail the tunnel's line, with exit 5.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_shows_the_route_and_the_tunnel_through_the_proxy() {
    let Some((hub, tp, dir)) = hub_behind_proxy(true).await else {
        return;
    };
    let args = vec![
        "--hub-url".to_string(),
        hub.url(),
        "--ca-cert".to_string(),
        hub.ca().display().to_string(),
    ];
    let env = [("HTTPS_PROXY", proxy_url(&tp, PASSWORD))];
    let (out, lines) = crate::check::check_env(args.clone(), dir.path(), &env).await;
    assert_eq!(
        heads(&lines),
        steps("ok proxy, ok dns, ok tcp, ok connect, ok tls, ok hub"),
        "{lines:?}"
    );
    assert_eq!(out.status.code(), Some(0));
    let route = format!(
        "localhost:{} goes through http://127.0.0.1:{} (from HTTPS_PROXY, with credentials)",
        hub.port, tp.port
    );
    assert!(lines[0].ends_with(&route), "{}", lines[0]);

    let env = [("HTTPS_PROXY", proxy_url(&tp, "wrong"))];
    let (out, lines) = crate::check::check_env(args, dir.path(), &env).await;
    assert_eq!(
        heads(&lines)[..4],
        ["ok proxy", "ok dns", "ok tcp", "FAIL connect"],
        "{lines:?}"
    );
    assert!(lines[3].contains("answered 401"), "{}", lines[3]);
    assert_eq!(out.status.code(), Some(5));
    let all =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(!all.contains(PASSWORD) && !all.contains("wrong@"), "{all}");
    hub.stop().await;
}
