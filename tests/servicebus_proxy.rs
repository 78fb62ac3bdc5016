//! The Service Bus path through an HTTP proxy (a real tinyproxy): a whole run with `--proxy`
//! (credentials in the URL) and `--sb-transport websockets` reconciles with the emulator and
//! with the CONNECTs in tinyproxy's log, and no file, log line or output of the run holds the
//! password (nor its Basic form); `hubload check` shows the proxy, the tunnel and
//! `NO_PROXY`'s bypass as their own lines, read from `HTTPS_PROXY` and `NO_PROXY`, and names a
//! 407.
//!
//! Needs `openssl` and `tinyproxy` on PATH (`.ci/run` installs them).

use hubload_servicebus::emulator::{EmulatorConfig, DEV_KEY};

use crate::check::{check_env, heads, sb, steps};
use crate::creds::{assert_nowhere, full_run};
use crate::proxy_common::Tinyproxy;
use crate::util::Scenario;

/// The proxy password of these tests: it must appear nowhere hubload writes.
const PASSWORD: &str = "pr0xy-s3cret";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_through_tinyproxy_reconciles_with_the_emulator_and_the_proxy_log() {
    let sc = Scenario::servicebus(EmulatorConfig::default()).await;
    let Some(ws) = crate::servicebus_ws::serve_ws(&sc).await else {
        return;
    };
    let Some(tp) = Tinyproxy::start(Some(("hubload", PASSWORD))) else {
        return;
    };
    // The string without its TransportType: `--sb-transport websockets` chooses it.
    let cs = ws.replace(";TransportType=AmqpWebSockets", "");
    let port = cs
        .parse::<hubload_servicebus::ConnectionString>()
        .unwrap()
        .port
        .unwrap();
    let proxy = format!("http://hubload:{PASSWORD}@127.0.0.1:{}", tp.port);
    let d = sc.dir.path().to_path_buf();
    let ca = d.join("ca.pem").display().to_string();
    let args: Vec<String> = [
        "--tenants",
        "5",
        "--sps",
        "2",
        "--users",
        "3",
        "--target",
        "servicebus",
        "--sb-connection-string",
        &cs,
        "--sb-transport",
        "websockets",
        "--proxy",
        &proxy,
        "--ca-cert",
        &ca,
        "--sb-connections",
        "2",
        "--requests",
        "200",
        "--concurrency",
        "8",
    ]
    .map(String::from)
    .to_vec();
    // The built binary with debug logging and a JTL, off the runtime: the emulator serves.
    let out = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        full_run(&d, &args)
    })
    .await
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c = sc.emulator_counts();
    assert_eq!((c.accepted, c.connections), (200, 2));
    let authority = format!("localhost:{port}");
    assert_eq!(tp.wait_for(2, |t| t.connects(&authority)), 2);
    assert_eq!(tp.wait_for(2, |t| t.established("localhost")), 2);
    assert_eq!(tp.all_connects(), 2);
    // Nor the Basic form: base64 of "hubload:pr0xy-s3cret".
    assert_nowhere(
        sc.dir.path(),
        &out,
        &[PASSWORD, "aHVibG9hZDpwcjB4eS1zM2NyZXQ=", DEV_KEY],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_shows_the_proxy_the_tunnel_and_the_bypass() {
    let sc = Scenario::servicebus(EmulatorConfig::default()).await;
    let Some(cs) = crate::servicebus_ws::serve_ws(&sc).await else {
        return;
    };
    let Some(tp) = Tinyproxy::start(None) else {
        return;
    };
    let port = cs
        .parse::<hubload_servicebus::ConnectionString>()
        .unwrap()
        .port
        .unwrap();
    let d = sc.dir.path();
    let mut args = sb(&cs);
    args.extend(["--ca-cert".into(), d.join("ca.pem").display().to_string()]);
    let (out, lines) = check_env(args.clone(), d, &[("HTTPS_PROXY", tp.url())]).await;
    assert_eq!(
        heads(&lines),
        steps("ok proxy, ok dns, ok tcp, ok connect, ok tls, ok websocket, ok cbs, ok topics, ok size"),
        "{lines:?}"
    );
    assert!(
        lines[0].ends_with(&format!(
            "localhost:{port} goes through {} (from HTTPS_PROXY)",
            tp.url()
        )),
        "{}",
        lines[0]
    );
    assert!(
        lines[3].ends_with(&format!("{} opened a tunnel to localhost:{port}", tp.url())),
        "{}",
        lines[3]
    );
    assert_eq!(out.status.code(), Some(0));
    // The tunnel of the connect step, the upgrade's, and the sender's for CBS and topics.
    let authority = format!("localhost:{port}");
    assert_eq!(tp.wait_for(3, |t| t.connects(&authority)), 3);

    let env = [("HTTPS_PROXY", tp.url()), ("NO_PROXY", "localhost".into())];
    let (out, lines) = check_env(args, d, &env).await;
    assert_eq!(
        heads(&lines),
        steps("ok proxy, ok dns, ok tcp, ok tls, ok websocket, ok cbs, ok topics, ok size"),
        "{lines:?}"
    );
    assert!(
        lines[0].ends_with(&format!(
            "localhost:{port} bypasses {} (NO_PROXY names it)",
            tp.url()
        )),
        "{}",
        lines[0]
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(tp.all_connects(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_names_a_407_and_never_shows_the_password() {
    let sc = Scenario::servicebus(EmulatorConfig::default()).await;
    let Some(cs) = crate::servicebus_ws::serve_ws(&sc).await else {
        return;
    };
    let Some(tp) = Tinyproxy::start(Some(("hubload", PASSWORD))) else {
        return;
    };
    let d = sc.dir.path();
    let mut args = sb(&cs);
    args.extend(["--ca-cert".into(), d.join("ca.pem").display().to_string()]);
    let (out, lines) = check_env(args.clone(), d, &[("https_proxy", tp.url())]).await;
    assert_eq!(
        heads(&lines),
        steps("ok proxy, ok dns, ok tcp, FAIL connect, skip cbs, skip topics"),
        "{lines:?}"
    );
    assert!(
        lines[3].contains("answered 407 Proxy Authentication Required")
            && lines[3].contains("(proxy_407)")
            && lines[3].contains("(fix: give the proxy's credentials in its URL"),
        "{}",
        lines[3]
    );
    assert_eq!(out.status.code(), Some(5));
    // Wrong credentials by the flag, which overrides the variable: refused, nothing shown.
    args.extend([
        "--proxy".into(),
        format!("http://hubload:not-{PASSWORD}@127.0.0.1:{}", tp.port),
    ]);
    let (out, lines) = check_env(args, d, &[("https_proxy", "http://127.0.0.1:9".into())]).await;
    assert!(
        lines[0].ends_with("(from --proxy, with credentials)"),
        "{}",
        lines[0]
    );
    assert!(lines[3].contains("(proxy_401)"), "{}", lines[3]);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!all.contains(PASSWORD) && !all.contains(DEV_KEY), "{all}");
    assert_eq!(out.status.code(), Some(5));
}
