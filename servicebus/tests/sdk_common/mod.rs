//! The helpers of the SDK test binaries (sdk.rs, sdk_settle.rs): find the SDKs, start an
//! emulator, run one SDK script action and read its JSON line, read the emulator's figures.
// Each test binary uses a part of these.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use hubload_servicebus::emulator::config_file;
use hubload_servicebus::emulator::store::StoreStats;
use hubload_servicebus::emulator::tier::Tier;
use hubload_servicebus::emulator::{Emulator, EmulatorConfig, EmulatorHandle};
use serde_json::Value;

pub const CONFIG: &str = r#"{"UserConfig": {"Namespaces": [{"Name": "sbemulatorns",
  "Queues": [{"Name": "jobs", "Properties": {"LockDuration": "PT5S", "MaxDeliveryCount": 2}}],
  "Topics": [{"Name": "orders", "Properties": {},
    "Subscriptions": [{"Name": "all", "Properties": {"LockDuration": "PT1M", "MaxDeliveryCount": 10}}]}]}],
  "Logging": {"Type": "File"}}}"#;

pub fn sdk_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sdk")
}

/// The venv's python, or `None` (skip) outside CI.
pub fn python() -> Option<PathBuf> {
    let p = sdk_dir().join(".venv/bin/python");
    present(p.exists(), "the Python SDK venv (tests/sdk/.venv)").then_some(p)
}

pub fn node() -> Option<PathBuf> {
    let ok = sdk_dir().join("node_modules/@azure/service-bus").exists()
        && std::process::Command::new("node")
            .arg("--version")
            .output()
            .is_ok();
    present(ok, "node and tests/sdk/node_modules").then(|| PathBuf::from("node"))
}

pub fn present(ok: bool, what: &str) -> bool {
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "{what} missing under CI: .ci/run installs it"
        );
        eprintln!("skipped: {what} missing (.ci/run installs it)");
    }
    ok
}

/// An emulator on 127.0.0.1 port 0 with the entities of [`CONFIG`].
pub async fn emulator(strict: bool, tier: Tier) -> EmulatorHandle {
    emulator_with(CONFIG, strict, tier).await
}

/// An emulator on 127.0.0.1 port 0 with the entities a `Config.json` text declares.
pub async fn emulator_with(config: &str, strict: bool, tier: Tier) -> EmulatorHandle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    Emulator::start(
        listener,
        EmulatorConfig {
            declared: Some(config_file::parse(config).unwrap()),
            strict,
            tier,
            ..EmulatorConfig::default()
        },
    )
    .await
    .unwrap()
}

/// Run one SDK script action; its one JSON line. Bounded: a hang fails the test.
pub async fn run(program: &PathBuf, script: &str, args: &[&str]) -> Value {
    run_env(program, script, args, &[]).await
}

/// [`run`] with these environment variables set for the script.
pub async fn run_env(
    program: &PathBuf,
    script: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Value {
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new(program)
            .arg(sdk_dir().join(script))
            .args(args)
            .envs(env.iter().copied())
            .current_dir(sdk_dir())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap_or_else(|_| panic!("{script} {args:?} did not finish in 120 s"))
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|_| {
        panic!(
            "{script} {:?}: no JSON result\nstdout: {stdout}\nstderr: {}",
            &args[..1],
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

pub fn stats(emu: &EmulatorHandle, path: &str) -> StoreStats {
    emu.counts().entities[path]
}

/// The entity's figures once `settled` holds, or as they are after 5 s (the caller's
/// assertion then shows them). A client's receive link may still be sent a message while it
/// closes, and the emulator releases that message when it handles the detach, which can come
/// after the client process has exited.
pub async fn stats_once(
    emu: &EmulatorHandle,
    path: &str,
    settled: impl Fn(&StoreStats) -> bool,
) -> StoreStats {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let s = stats(emu, path);
        if settled(&s) || tokio::time::Instant::now() >= deadline {
            return s;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

pub fn ids(v: &Value) -> BTreeSet<String> {
    v["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// The ids the send scripts give: s-i, b-batch-j, l-list-j.
pub fn sent_ids(singles: usize, batches: usize, lists: usize, per: usize) -> BTreeSet<String> {
    let mut want: BTreeSet<String> = (0..singles).map(|i| format!("s-{i}")).collect();
    for b in 0..batches {
        want.extend((0..per).map(|j| format!("b-{b}-{j}")));
    }
    for l in 0..lists {
        want.extend((0..per).map(|j| format!("l-{l}-{j}")));
    }
    want
}
