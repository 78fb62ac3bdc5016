//! `hubload check`: each check's failure named on its own line, with exit 5, against the
//! emulator (a wrong key, a topic missing in strict mode, a closed port, an untrusted CA on
//! its WebSocket port) and the reference hub; and every line `ok` with exit 0 when all is well.
//! The key never appears in the output.

use std::path::Path;
use std::process::Output;

use hubload_servicebus::emulator::{config_file, EmulatorConfig, DEV_KEY};

use crate::util::{bin_env, Scenario};

const SMALL: &[&str] = &["--tenants", "2", "--sps", "1", "--users", "1"];

/// Run `hubload check` with `args` (off the runtime: the emulator serves meanwhile); its lines.
async fn check(args: Vec<String>, cwd: &Path) -> (Output, Vec<String>) {
    check_env(args, cwd, &[]).await
}

/// [`check`] with these environment variables set.
pub(crate) async fn check_env(
    args: Vec<String>,
    cwd: &Path,
    env: &[(&'static str, String)],
) -> (Output, Vec<String>) {
    let cwd = cwd.to_path_buf();
    let env = env.to_vec();
    let out = tokio::task::spawn_blocking(move || {
        let mut all = vec!["check"];
        all.extend(args.iter().map(String::as_str));
        all.extend(SMALL);
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        bin_env(&all, &cwd, &env)
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stdout.contains(DEV_KEY) && !stderr.contains(DEV_KEY),
        "the key was shown"
    );
    let lines = stdout.lines().map(str::to_string).collect();
    (out, lines)
}

/// The steps a check is expected to show, written `"ok dns, ok tcp"`, as [`heads`] reads them.
pub(crate) fn steps(list: &str) -> Vec<String> {
    list.split(", ").map(String::from).collect()
}

/// The first word of each line and the check's name: `["ok dns", "FAIL tcp", …]`.
pub(crate) fn heads(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
        .collect()
}

pub(crate) fn sb(cs: &str) -> Vec<String> {
    ["--target", "servicebus", "--sb-connection-string", cs]
        .map(String::from)
        .to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_check_passes_against_the_emulator_with_exit_0() {
    let sc = Scenario::servicebus(EmulatorConfig::default()).await;
    let (out, lines) = check(sb(&sc.connection_string()), sc.dir.path()).await;
    assert_eq!(
        heads(&lines),
        steps("ok dns, ok tcp, ok cbs, ok topics, ok size"),
        "{lines:?}"
    );
    assert_eq!(out.status.code(), Some(0));
    // 2 tenants × 4 channels: each attached for sending, as the run would.
    assert!(lines[3].ends_with("all 8 topics exist and the policy can send to them"));
    assert!(
        lines[4].ends_with("bodies (under 1 KiB) fit the 262144 bytes the broker takes per message (Basic or Standard: 256 KB)"),
        "{}",
        lines[4]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_key_fails_at_cbs_naming_the_key_name() {
    let sc = Scenario::servicebus(EmulatorConfig::default()).await;
    let cs = sc.connection_string().replace(DEV_KEY, "d3Jvbmcta2V5");
    let (out, lines) = check(sb(&cs), sc.dir.path()).await;
    assert_eq!(
        heads(&lines),
        steps("ok dns, ok tcp, FAIL cbs, skip topics"),
        "{lines:?}"
    );
    assert!(
        lines[2].contains("the SAS token of key name RootManageSharedAccessKey was refused")
            && lines[2].contains("(status 401)"),
        "{}",
        lines[2]
    );
    assert_eq!(out.status.code(), Some(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_missing_in_strict_mode_is_named() {
    let declared = config_file::parse(
        r#"{"UserConfig": {"Namespaces": [{"Name": "ns", "Topics": [{"Name": "events", "Properties": {}, "Subscriptions": []}]}]}}"#,
    )
    .unwrap();
    let sc = Scenario::servicebus(EmulatorConfig {
        declared: Some(declared),
        strict: true,
        ..EmulatorConfig::default()
    })
    .await;
    let mut args = sb(&sc.connection_string());
    args.extend(["--sb-topics".into(), "single:orders".into()]);
    let (out, lines) = check(args, sc.dir.path()).await;
    assert_eq!(
        heads(&lines),
        steps("ok dns, ok tcp, ok cbs, FAIL topic"),
        "{lines:?}"
    );
    assert!(lines[3].contains("orders does not exist"), "{}", lines[3]);
    assert_eq!(out.status.code(), Some(5));
    // The declared one passes.
    let mut args = sb(&sc.connection_string());
    args.extend(["--sb-topics".into(), "single:events".into()]);
    let (out, lines) = check(args, sc.dir.path()).await;
    assert_eq!(out.status.code(), Some(0), "{lines:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_port_fails_at_tcp() {
    let sc = Scenario::servicebus(EmulatorConfig::default()).await;
    // A port that was just free: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cs = sc
        .connection_string()
        .replace(&sc.emulator().addr().port().to_string(), &port.to_string());
    let (out, lines) = check(sb(&cs), sc.dir.path()).await;
    assert_eq!(
        heads(&lines),
        steps("ok dns, FAIL tcp, skip cbs, skip topics"),
        "{lines:?}"
    );
    assert!(lines[1].contains("Connection refused"), "{}", lines[1]);
    assert_eq!(out.status.code(), Some(5));
}

/// The emulator's WebSocket port with a throw-away CA: without `--ca-cert` the TLS check fails
/// naming the unknown issuer and the flag; with it every check passes, the upgrade included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_ca_fails_at_tls_with_the_ca_cert_hint() {
    let sc = Scenario::servicebus(EmulatorConfig::default()).await;
    let Some(cs) = crate::servicebus_ws::serve_ws(&sc).await else {
        return;
    };
    let d = sc.dir.path();
    let (out, lines) = check(sb(&cs), d).await;
    assert_eq!(
        heads(&lines),
        steps("ok dns, ok tcp, FAIL tls, skip cbs, skip topics"),
        "{lines:?}"
    );
    assert!(
        lines[2].contains("UnknownIssuer") && lines[2].contains("--ca-cert FILE"),
        "{}",
        lines[2]
    );
    assert_eq!(out.status.code(), Some(5));
    let mut args = sb(&cs);
    args.extend(["--ca-cert".into(), d.join("ca.pem").display().to_string()]);
    let (out, lines) = check(args, d).await;
    assert_eq!(
        heads(&lines),
        steps("ok dns, ok tcp, ok tls, ok websocket, ok cbs, ok topics, ok size"),
        "{lines:?}"
    );
    assert_eq!(out.status.code(), Some(0));
}

/// The reference hub answers a GET of its URL (by its address, or by a name `--resolve`
/// pins); a port where nothing speaks HTTP does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hub_answering_and_a_non_http_port() {
    let sc = Scenario::servicebus(EmulatorConfig::default()).await;
    let args = vec!["--hub-url".to_string(), sc.hub.url.clone()];
    let (out, lines) = check(args, sc.dir.path()).await;
    assert_eq!(heads(&lines), ["ok dns", "ok tcp", "ok hub"], "{lines:?}");
    assert!(
        lines[2].contains("answers GET /hub: HTTP/1.1 "),
        "{}",
        lines[2]
    );
    assert_eq!(out.status.code(), Some(0));
    // A name no DNS knows, pinned by `--resolve` as the run would pin it.
    let port = url::Url::parse(&sc.hub.url).unwrap().port().unwrap();
    let pinned = sc.hub.url.replace("127.0.0.1", "hub.invalid");
    let args = vec![
        "--hub-url".into(),
        pinned,
        "--resolve".into(),
        format!("hub.invalid:{port}:127.0.0.1"),
    ];
    let (out, lines) = check(args, sc.dir.path()).await;
    assert_eq!(heads(&lines), ["ok dns", "ok tcp", "ok hub"], "{lines:?}");
    assert!(
        lines[0].ends_with(&format!(
            "hub.invalid:{port} is pinned to 127.0.0.1 by --resolve"
        )),
        "{}",
        lines[0]
    );
    assert_eq!(out.status.code(), Some(0));
    // The emulator's AMQP port answers an HTTP request with AMQP's header, not HTTP.
    let amqp = format!("http://{}/hub", sc.emulator().addr());
    let (out, lines) = check(vec!["--hub-url".into(), amqp], sc.dir.path()).await;
    assert_eq!(heads(&lines), ["ok dns", "ok tcp", "FAIL hub"], "{lines:?}");
    assert!(
        lines[2].contains("the answer is not HTTP/1.x"),
        "{}",
        lines[2]
    );
    assert_eq!(out.status.code(), Some(5));
}

/// A profile given after `check` is read as a run reads it, and a flag on the command line
/// wins over it: both aim at closed ports, the flag's is the one tried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profile_after_check_is_read_and_flags_win() {
    let sc = Scenario::start(Default::default()).await;
    let closed = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    };
    let (a, b) = (closed(), closed());
    let profile = sc.dir.path().join("p.toml");
    std::fs::write(
        &profile,
        format!("hub_url = \"http://127.0.0.1:{a}/hub\"\n"),
    )
    .unwrap();
    let p = profile.display().to_string();
    let (out, lines) = check(vec!["--profile".into(), p.clone()], sc.dir.path()).await;
    assert_eq!(
        heads(&lines),
        steps("ok dns, FAIL tcp, skip hub"),
        "{lines:?}"
    );
    assert!(
        lines[1].contains(&format!("127.0.0.1:{a}:")),
        "{}",
        lines[1]
    );
    assert_eq!(out.status.code(), Some(5));
    let flag = format!("http://127.0.0.1:{b}/hub");
    let (_, lines) = check(
        vec!["--profile".into(), p, "--hub-url".into(), flag],
        sc.dir.path(),
    )
    .await;
    assert!(
        lines[1].contains(&format!("127.0.0.1:{b}:")),
        "{}",
        lines[1]
    );
}
