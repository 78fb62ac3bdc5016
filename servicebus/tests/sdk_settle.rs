//! Microsoft's SDKs (unmodified) on what the first SDK tests left out: renewing the lock of a
//! message received over the link, dead-lettering over the link, a JS sender on an undeclared
//! entity, and subscription rules from `Config.json`. Counts reconcile with the emulator's.

mod sdk_common;

use hubload_servicebus::emulator::tier::Tier;
use sdk_common::*;

/// Azure's lock token is the message's delivery tag: both SDKs read it from there to renew
/// the lock through `$management`. (With the 4-byte tags fe2o3 made, Python raised
/// `ValueError` and JS sent a token the emulator did not know.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_sdks_renew_the_lock_of_a_message_received_over_the_link() {
    let Some(py) = python() else { return };
    let emu = emulator(true, Tier::Unlimited).await;
    let cs = emu.connection_string();
    let mut renewers = vec![(py.clone(), "sb.py")];
    if let Some(node) = node() {
        renewers.push((node, "sb.js"));
    }
    for (program, script) in &renewers {
        // One message for each: none is left locked by the previous client's prefetch.
        let sent = run(&py, "sb.py", &["send", &cs, "orders", "1", "0", "0", "0"]).await;
        assert_eq!(sent["error"], serde_json::Value::Null, "{sent}");
        let r = run(program, script, &["renew", &cs, "orders", "all"]).await;
        assert_eq!(r["error"], serde_json::Value::Null, "{script}: {r}");
        let (Some(before), Some(after)) = (r["before"].as_f64(), r["after"].as_f64()) else {
            panic!("{script}: no message renewed: {r}");
        };
        // The lock runs 60 s from each renewal, made 1.1 s after the receive.
        assert!(after - before >= 1.0, "{script}: {r}");
    }
    let n = renewers.len() as u64;
    let s = stats_once(&emu, "orders/Subscriptions/all", |s| s.completed == n).await;
    assert_eq!((s.completed, s.lock_expired), (n, 0), "{s:?}");
    assert_eq!(emu.counts().lock_lost, 0);
    emu.shutdown().await;
}

/// Dead-lettering over the link (a `rejected` outcome) succeeds in both SDKs, and every
/// message they dead-lettered is in the sub-queue, with the reason they gave. (Before, the
/// settlement's echo repeated their error: Python raised `ServiceBusError` and JS waited for
/// its timeout.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_sdks_dead_letter_over_the_link() {
    let Some(py) = python() else { return };
    let emu = emulator(true, Tier::Unlimited).await;
    let cs = emu.connection_string();
    // Three messages for each SDK, sent just before it receives: none is left locked by the
    // previous client's prefetch.
    let sent = run(&py, "sb.py", &["send", &cs, "orders", "3", "0", "0", "0"]).await;
    assert_eq!(sent["sent"], 3, "{sent}");
    let py_dl = run(
        &py,
        "sb.py",
        &[
            "receive",
            &cs,
            "orders",
            "all",
            "peek_lock",
            "dead_letter",
            "3",
            "30",
        ],
    )
    .await;
    assert_eq!(py_dl["error"], serde_json::Value::Null, "{py_dl}");
    assert_eq!(py_dl["settled"], 3, "{py_dl}");
    let mut want = 3;
    if let Some(node) = node() {
        let sent = run(&py, "sb.py", &["send", &cs, "orders", "3", "0", "0", "0"]).await;
        assert_eq!(sent["sent"], 3, "{sent}");
        let js = run(
            &node,
            "sb.js",
            &[
                "receive",
                &cs,
                "orders",
                "all",
                "peekLock",
                "deadLetter",
                "3",
                "30",
            ],
        )
        .await;
        assert_eq!(js["error"], serde_json::Value::Null, "{js}");
        assert_eq!(js["settled"], 3, "{js}");
        want += 3;
    }
    let s = stats_once(&emu, "orders/Subscriptions/all", |s| {
        s.dead_lettered == want
    })
    .await;
    assert_eq!((s.dead_lettered, s.dead_letter_now), (want, want), "{s:?}");
    // Read back from the sub-queue: each one, once.
    let dlq = run(
        &py,
        "sb.py",
        &[
            "receive",
            &cs,
            "orders",
            "all/$deadletterqueue",
            "peek_lock",
            "complete",
            &want.to_string(),
            "30",
        ],
    )
    .await;
    // Each SDK dead-lettered its own three sends, s-0 to s-2: every id once per SDK.
    let mut got: Vec<&str> = dlq["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    got.sort_unstable();
    let mut expected: Vec<&str> = ["s-0", "s-1", "s-2"]
        .iter()
        .cycle()
        .take(want as usize)
        .copied()
        .collect();
    expected.sort_unstable();
    assert_eq!(got, expected, "{dlq}");
    let s = stats_once(&emu, "orders/Subscriptions/all", |s| s.dead_letter_now == 0).await;
    assert_eq!((s.dead_letter_now, s.active), (0, 0), "{s:?}");
    emu.shutdown().await;
}

/// A JS sender on an undeclared entity in strict mode gets the error code it gets from Azure:
/// from the put-token's 404 (before, the emulator accepted the token and refused the attach,
/// and the sender reported `GeneralError`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn js_sender_on_an_undeclared_entity_is_not_found() {
    let Some(node) = node() else { return };
    let emu = emulator(true, Tier::Unlimited).await;
    let cs = emu.connection_string();
    let t0 = std::time::Instant::now();
    let js = run(&node, "sb.js", &["send", &cs, "nosuch", "1", "0", "0", "0"]).await;
    assert_eq!(js["code"], "MessagingEntityNotFound", "{js}");
    assert_eq!(js["sent"], 0, "{js}");
    assert!(t0.elapsed().as_secs() < 20, "took {:?}", t0.elapsed());
    let c = emu.counts();
    assert_eq!((c.not_found, c.accepted), (1, 0));
    emu.shutdown().await;
}

/// Subscription rules from `Config.json`: no rules (`$Default`, true), SQL `1=1` and `1=0`
/// (Azure's TrueFilter and FalseFilter), a correlation filter on a system property, one on
/// an application property, and two rules of which either matches.
const RULES: &str = r#"{"UserConfig": {"Namespaces": [{"Name": "ns", "Topics": [{"Name": "events",
  "Subscriptions": [
    {"Name": "default"},
    {"Name": "true", "Rules": [{"Name": "t", "Properties": {"FilterType": "Sql", "SqlFilter": {"SqlExpression": "1=1"}}}]},
    {"Name": "false", "Rules": [{"Name": "f", "Properties": {"FilterType": "Sql", "SqlFilter": {"SqlExpression": "1=0"}}}]},
    {"Name": "one", "Rules": [{"Name": "id", "Properties": {"FilterType": "Correlation", "CorrelationFilter": {"MessageId": "s-3"}}}]},
    {"Name": "batched", "Rules": [{"Name": "kind", "Properties": {"FilterType": "Correlation", "CorrelationFilter": {"Properties": {"kind": "batch"}}}}]},
    {"Name": "either", "Rules": [
      {"Name": "no", "Properties": {"FilterType": "Sql", "SqlFilter": {"SqlExpression": "1=0"}}},
      {"Name": "lists", "Properties": {"FilterType": "Correlation", "CorrelationFilter": {"Properties": {"kind": "list"}}}}]}
  ]}]}]}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscription_rules_from_config_json_route_what_python_sends() {
    let Some(py) = python() else { return };
    let emu = emulator_with(RULES, true, Tier::Unlimited).await;
    let cs = emu.connection_string();
    // 10 singles, 2 batches of 4 and 3 lists of 4: 30 messages.
    let sent = run(&py, "sb.py", &["send", &cs, "events", "10", "2", "3", "4"]).await;
    assert_eq!(sent["sent"], 10 + 8 + 12, "{sent}");
    let enqueued = |sub: &str| stats(&emu, &format!("events/Subscriptions/{sub}")).enqueued;
    let got: Vec<(&str, u64)> = ["default", "true", "false", "one", "batched", "either"]
        .into_iter()
        .map(|s| (s, enqueued(s)))
        .collect();
    assert_eq!(
        got,
        [
            ("default", 30),
            ("true", 30),
            ("false", 0),
            ("one", 1),
            ("batched", 8),
            ("either", 12)
        ]
    );
    // What a subscription took is what a receiver gets from it.
    let r = run(
        &py,
        "sb.py",
        &[
            "receive",
            &cs,
            "events",
            "batched",
            "receive_and_delete",
            "none",
            "8",
            "30",
        ],
    )
    .await;
    let want: std::collections::BTreeSet<String> = (0..2)
        .flat_map(|b| (0..4).map(move |j| format!("b-{b}-{j}")))
        .collect();
    assert_eq!(ids(&r), want, "{r}");
    assert_eq!(emu.counts().accepted, 30);
    emu.shutdown().await;
}
