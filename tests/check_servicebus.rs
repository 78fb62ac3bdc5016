//! `hubload check` for Service Bus, the rest of the pre-flight: a policy without Listen (with
//! subscribers) or without Send, the connection string's own token expired or expiring before
//! the run's planned end, a missing topic or subscription, and messages over the broker's
//! message size (the body with its properties and encoding).
//! Each is a line of `check` (exit 5) and the one-line error of a run (exit 2, nothing sent:
//! the emulator's own counts say so). No key, signature or connection string is ever shown.

use std::process::Output;

use hubload_servicebus::emulator::rights::Rights;
use hubload_servicebus::emulator::tier::Tier;
use hubload_servicebus::emulator::{config_file, EmulatorConfig, DEV_KEY, DEV_KEY_NAME};
use hubload_servicebus::sas::sas_token;

use crate::check::{check_env, heads, sb, steps};
use crate::util::{bin, Scenario};

/// `hubload check` with `cs` and `flags`; its lines, with nothing secret in its output.
async fn check(sc: &Scenario, cs: &str, flags: &[&str]) -> (Output, Vec<String>) {
    let mut args = sb(cs);
    args.extend(flags.iter().map(|s| s.to_string()));
    let (out, lines) = check_env(args, sc.dir.path(), &[]).await;
    no_secret(&out, cs);
    (out, lines)
}

/// A run of the real binary with `cs` and `flags`, off the runtime (the emulator serves
/// meanwhile); its output, with nothing secret in it.
async fn run(sc: &Scenario, cs: &str, flags: &[&str]) -> Output {
    let mut args: Vec<String> = [
        "--target",
        "servicebus",
        "--sb-connection-string",
        cs,
        "--tenants",
        "2",
        "--sps",
        "1",
        "--users",
        "1",
        "--requests",
        "20",
        "--out",
    ]
    .map(String::from)
    .to_vec();
    args.push(sc.dir.path().display().to_string());
    args.extend(flags.iter().map(|s| s.to_string()));
    let dir = sc.dir.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        bin(&a, &dir)
    })
    .await
    .unwrap();
    no_secret(&out, cs);
    out
}

/// Neither the key, nor a signature, nor the connection string appears in `out`.
fn no_secret(out: &Output, cs: &str) {
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!all.contains(DEV_KEY), "the key was shown: {all}");
    assert!(!all.contains(cs), "the connection string was shown: {all}");
    if let Some(sig) = cs.split("sig=").nth(1) {
        let sig = sig.split('&').next().unwrap();
        assert!(!all.contains(sig), "the signature was shown: {all}");
    }
}

/// The run's one error line (stderr), after checking it is the only line and exit 2.
fn one_error_line(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("hubload: error:"))
        .collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    errors[0].to_string()
}

/// `check` with `flags` fails at line `at` (`FAIL {head}`) naming `text`, exit 5; a run with
/// the same flags refuses with one line naming it, exit 2, and the emulator takes no message.
async fn refused_alike(sc: &Scenario, cs: &str, flags: &[&str], at: usize, head: &str, text: &str) {
    let (out, lines) = check(sc, cs, flags).await;
    assert_eq!(heads(&lines)[at], format!("FAIL {head}"), "{lines:?}");
    assert!(lines[at].contains(text), "{}", lines[at]);
    assert_eq!(out.status.code(), Some(5));
    let out = run(sc, cs, flags).await;
    let line = one_error_line(&out);
    assert!(line.contains(text), "{line}");
    assert_eq!(sc.emulator_counts().accepted, 0);
}

/// A strict emulator (entities are not made on first use) declaring `topics`, a JSON list.
async fn strict(topics: &str) -> Scenario {
    let declared = config_file::parse(&format!(
        r#"{{"UserConfig": {{"Namespaces": [{{"Name": "ns", "Topics": {topics}}}]}}}}"#
    ))
    .unwrap();
    Scenario::servicebus(EmulatorConfig {
        declared: Some(declared),
        strict: true,
        ..EmulatorConfig::default()
    })
    .await
}

/// The emulator's connection string with its key replaced by a token made now that expires
/// `se_from_now` seconds from now (negative: already expired).
fn with_token(sc: &Scenario, se_from_now: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let addr = sc.emulator().addr();
    let token = sas_token(
        &format!("sb://{addr}/"),
        DEV_KEY_NAME,
        DEV_KEY,
        (now + se_from_now) as u64,
    );
    format!("Endpoint=sb://{addr}/;SharedAccessSignature={token};UseDevelopmentEmulator=true")
}

/// An emulator whose key's policy has only these rights.
async fn with_rights(rights: &str) -> Scenario {
    Scenario::servicebus(EmulatorConfig {
        key_rights: Rights::parse(rights).unwrap(),
        ..EmulatorConfig::default()
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_without_listen_is_named_when_subscribers_need_it() {
    let sc = with_rights("send").await;
    let cs = sc.connection_string();
    // Without subscribers, Send is all the run needs: every check passes.
    let (out, lines) = check(&sc, &cs, &[]).await;
    assert_eq!(
        heads(&lines),
        steps("ok dns, ok tcp, ok cbs, ok topics, ok size"),
        "{lines:?}"
    );
    assert_eq!(out.status.code(), Some(0));
    // One subscriber on each of the first 2 topics: both subscriptions refuse a receiver.
    let subs = ["--subscribers", "1", "--subscribe-topics", "2"];
    let (out, lines) = check(&sc, &cs, &subs).await;
    assert_eq!(
        heads(&lines),
        steps("ok dns, ok tcp, ok cbs, ok topics, ok size, FAIL listen, FAIL listen"),
        "{lines:?}"
    );
    assert!(
        lines[5].contains(
            "the policy of key name RootManageSharedAccessKey lacks the Listen right on "
        ) && lines[5].contains("/Subscriptions/hubload-0 (fix: --subscribers needs Listen"),
        "{}",
        lines[5]
    );
    assert_eq!(out.status.code(), Some(5));
    let before = sc.emulator_counts();
    // The run refuses to start, naming the same, and sends nothing.
    let out = run(&sc, &cs, &subs).await;
    let line = one_error_line(&out);
    assert!(line.contains("lacks the Listen right on "), "{line}");
    let after = sc.emulator_counts();
    assert_eq!(after.accepted, 0);
    // Each refused receiver is one refused attach: 2 from check, 1 from the run's probe.
    assert_eq!(before.unauthorized, 2);
    assert_eq!(after.unauthorized, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_without_send_is_named_per_topic() {
    let sc = with_rights("listen").await;
    let cs = sc.connection_string();
    let (out, lines) = check(&sc, &cs, &["--sb-topics", "single:orders"]).await;
    assert_eq!(
        heads(&lines),
        steps("ok dns, ok tcp, ok cbs, FAIL topic"),
        "{lines:?}"
    );
    assert!(
        lines[3].contains(
            "the policy of key name RootManageSharedAccessKey lacks the Send right on orders"
        ),
        "{}",
        lines[3]
    );
    assert_eq!(out.status.code(), Some(5));
    assert_eq!(sc.emulator_counts().accepted, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_connection_strings_own_token_is_named_with_its_expiry() {
    let sc = Scenario::servicebus(EmulatorConfig::default()).await;
    // Valid for 3 hours: every check passes with it, CBS included.
    let cs = with_token(&sc, 3 * 3600);
    let (out, lines) = check(&sc, &cs, &[]).await;
    assert_eq!(
        heads(&lines),
        steps("ok token, ok dns, ok tcp, ok cbs, ok topics, ok size"),
        "{lines:?}"
    );
    assert!(
        lines[0].contains(
            "the SharedAccessSignature of key name RootManageSharedAccessKey expires at "
        ),
        "{}",
        lines[0]
    );
    assert_eq!(out.status.code(), Some(0));
    let valid = sc.emulator_counts();
    assert!(valid.cbs_ok > 0 && valid.cbs_denied == 0, "{valid:?}");
    // Expired 10 minutes ago.
    let cs = with_token(&sc, -600);
    let (out, lines) = check(&sc, &cs, &[]).await;
    assert_eq!(
        heads(&lines),
        steps("FAIL token, skip cbs, skip topics"),
        "{lines:?}"
    );
    assert!(
        lines[0].contains(" expired at ") && lines[0].contains("Z (10 min"),
        "{}",
        lines[0]
    );
    assert_eq!(out.status.code(), Some(5));
    let out = run(&sc, &cs, &[]).await;
    let line = one_error_line(&out);
    assert!(
        line.contains("SharedAccessSignature of key name RootManageSharedAccessKey expired at "),
        "{line}"
    );
    // Valid for 2 minutes, but the run is planned for 5 minutes.
    let cs = with_token(&sc, 120);
    let (out, lines) = check(&sc, &cs, &["--duration", "5m"]).await;
    assert_eq!(heads(&lines)[0], "FAIL token", "{lines:?}");
    assert!(
        lines[0].contains(": before the run's planned end ("),
        "{}",
        lines[0]
    );
    assert_eq!(out.status.code(), Some(5));
    let out = run(&sc, &cs, &["--duration", "5m"]).await;
    assert!(one_error_line(&out).contains("before the run's planned end"));
    // Nothing more reached the emulator: no connection, no put-token, no message.
    assert_eq!(sc.emulator_counts(), valid);
    assert_eq!(valid.accepted, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_subscription_in_strict_mode_is_named() {
    let topic = "hubload.topic00000.schema.WSO2.v1.event";
    let sc = strict(&format!(
        r#"[{{"Name": "{topic}", "Subscriptions": [{{"Name": "hubload-0"}}]}}]"#
    ))
    .await;
    let cs = sc.connection_string();
    let (out, lines) = check(&sc, &cs, &["--topics", "1", "--subscribers", "2"]).await;
    assert_eq!(
        heads(&lines),
        steps("ok dns, ok tcp, ok cbs, ok topics, ok size, FAIL listen"),
        "{lines:?}"
    );
    assert!(
        lines[5].contains(&format!(
            "subscription {topic}/Subscriptions/hubload-1 does not exist"
        )),
        "{}",
        lines[5]
    );
    assert_eq!(out.status.code(), Some(5));
    // The declared one alone passes.
    let (out, lines) = check(&sc, &cs, &["--topics", "1", "--subscribers", "1"]).await;
    assert_eq!(heads(&lines)[5], "ok listen", "{lines:?}");
    assert_eq!(out.status.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_over_the_tiers_message_size_are_named() {
    let sc = Scenario::servicebus(EmulatorConfig::default()).await;
    let cs = sc.connection_string();
    let (out, lines) = check(&sc, &cs, &["--payload-bytes", "300000"]).await;
    assert_eq!(
        heads(&lines),
        steps("ok dns, ok tcp, ok cbs, ok topics, FAIL size"),
        "{lines:?}"
    );
    assert!(
        lines[4].contains("(--payload-bytes 300000 with the properties and AMQP encoding around it) are over the 262144 bytes the broker takes per message (Basic or Standard: 256 KB)"),
        "{}",
        lines[4]
    );
    assert_eq!(out.status.code(), Some(5));
    let out = run(&sc, &cs, &["--payload-bytes", "300000"]).await;
    assert!(one_error_line(&out).contains("are over the 262144 bytes"));
    assert_eq!(sc.emulator_counts().accepted, 0);
    // A body under the limit whose message, with its properties and encoding, is over it:
    // the broker measures the message.
    let over = "(--payload-bytes 262100 with the properties and AMQP encoding around it) are over the 262144 bytes";
    refused_alike(&sc, &cs, &["--payload-bytes", "262100"], 4, "size", over).await;
    // A Premium namespace takes them.
    let premium = Scenario::servicebus(EmulatorConfig {
        tier: Tier::Premium {
            units: 1,
            bytes_per_unit: 4 << 20,
        },
        ..EmulatorConfig::default()
    })
    .await;
    let cs = premium.connection_string();
    let (out, lines) = check(&premium, &cs, &["--payload-bytes", "300000"]).await;
    assert_eq!(heads(&lines)[4], "ok size", "{lines:?}");
    assert!(
        lines[4].contains("(bodies of 300000) fit the 104857600 bytes"),
        "{}",
        lines[4]
    );
    assert_eq!(out.status.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_topic_stops_the_run_before_any_load() {
    let topic = |i: u32| format!("hubload.topic{i:05}.schema.WSO2.v1.event");
    let sc = strict(&format!(r#"[{{"Name": "{}"}}]"#, topic(0))).await;
    let cs = sc.connection_string();
    // The run stops after attaching its topics, before any load: one line naming the topic
    // and the fix (never the key), exit 2, and the emulator took no message.
    let named = format!("Service Bus topic {} does not exist", topic(1));
    refused_alike(&sc, &cs, &["--topics", "2"], 3, "topic", &named).await;
    let out = run(&sc, &cs, &["--topics", "2"]).await;
    assert!(one_error_line(&out).contains("--sb-topics single:NAME"));
    // With the declared topic alone the run goes ahead, and sends its 20.
    let out = run(&sc, &cs, &["--topics", "1"]).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(sc.emulator_counts().accepted, 20);
}
