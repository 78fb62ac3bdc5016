//! Addresses and the generator's own limits: `localhost` reaches a hub listening on
//! 127.0.0.1 only, and a process out of file descriptors counts `client_error`, never a
//! failure of the hub, with counts that still reconcile exactly with the hub's.

use std::process::Command;

use hubload_hub::FaultConfig;

use crate::util::{count, hub_with, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn localhost_reaches_a_hub_on_127_0_0_1_only() {
    let hub = hub_with(FaultConfig::default()).await;
    let port = url::Url::parse(&hub.url).unwrap().port().unwrap();
    let url = format!("http://localhost:{port}/hub");
    let out = tempfile::tempdir().unwrap();
    let o = run(&[
        "--hub-url",
        &url,
        "--tenants",
        "3",
        "--concurrency",
        "4",
        "--requests",
        "200",
        "--out",
        out.path().to_str().unwrap(),
    ])
    .await;
    let total = o.report.total.as_ref().unwrap();
    assert_eq!(count(total, "accepted"), 200);
    assert_eq!(hub.stats().await.publish.accepted, 200);
    let host = o.report.hub.as_ref().unwrap();
    let addrs: Vec<_> = host.addresses.iter().map(|a| a.address.clone()).collect();
    assert_eq!(addrs, vec![format!("127.0.0.1:{port}")]);
    assert_eq!(host.addresses[0].attempts, 200);
}

/// The binary under `ulimit -n 48` opening 200 connections: those past the limit fail with
/// EMFILE and are `client_error.too_many_open_files`; every other attempt is one the hub
/// accepted, and the row adds up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_descriptors_is_client_error_and_reconciles() {
    let hub = hub_with(FaultConfig::default()).await;
    let out = tempfile::tempdir().unwrap();
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n 48 && exec \"$0\" --quiet --hub-url {} --tenants 2 --concurrency 200 \
             --requests 2000 --timeout 10s --out {}",
            hub.url,
            out.path().display()
        ))
        .arg(env!("CARGO_BIN_EXE_hubload"))
        .env("RUST_LOG", "error")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.path().join("summary.json")).unwrap()).unwrap();
    let total = &summary["total"];
    let n = |k: &str| total["stats"]["counts"][k].as_u64().unwrap();
    let client = n("client_error");
    assert!(client > 0, "no descriptor ran out: {total}");
    assert_eq!(
        total["stats"]["reasons"]["client_error.too_many_open_files"].as_u64(),
        Some(client)
    );
    assert_eq!(n("accepted") + client, 2000, "{total}");
    assert_eq!(hub.stats().await.publish.accepted, n("accepted"));
    assert_eq!(n("other"), 0);
}

/// Run the binary under `ulimit -n LIMIT` (soft and hard); its exit status, stderr and summary.
fn under_ulimit(
    limit: u32,
    args: &str,
    out: &std::path::Path,
) -> (bool, String, serde_json::Value) {
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "ulimit -n {limit} && exec \"$0\" --quiet {args} --out {}",
            out.display()
        ))
        .arg(env!("CARGO_BIN_EXE_hubload"))
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let summary = std::fs::read(out.join("summary.json"))
        .map(|b| serde_json::from_slice(&b).unwrap())
        .unwrap_or_else(|e| panic!("no summary ({e}): {stderr}"));
    (o.status.success(), stderr, summary)
}

/// Every class column of a row, summed.
fn class_sum(row: &serde_json::Value) -> u64 {
    row["stats"]["counts"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum()
}

/// The open model under `ulimit -n 128` against a hub that takes 50 ms per publish: the
/// default in-flight bound is sized to the 64 descriptors left after the reserve, so the
/// sends beyond it are dropped and counted (said in one line), none fails in the generator,
/// and scheduled = sent + dropped exactly, with the hub's count equal to hubload's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_low_descriptor_limit_drops_sends_rather_than_failing_them() {
    let _serial = crate::util::SERIAL.lock().await;
    let hub = hub_with(FaultConfig {
        latency_ms: 50,
        ..FaultConfig::default()
    })
    .await;
    let out = tempfile::tempdir().unwrap();
    let args = format!(
        "--hub-url {} --tenants 2 --rate 2000 --duration 2s",
        hub.url
    );
    let (ok, stderr, s) = under_ulimit(128, &args, out.path());
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("at most 64 sends in flight (open-files limit 128, 1 per connection)"),
        "{stderr}"
    );
    let total = &s["total"];
    let n = |k: &str| total["stats"]["counts"][k].as_u64().unwrap();
    assert_eq!(n("client_error"), 0, "{total}");
    assert_eq!(n("other"), 0, "{total}");
    let dropped = total["stats"]["dropped"].as_u64().unwrap();
    assert!(dropped > 0, "{total}");
    let check = &s["rate_checks"][0];
    assert_eq!(
        check["scheduled"].as_u64().unwrap(),
        total["events"]["total"].as_u64().unwrap() + dropped,
        "{check} {total}"
    );
    assert_eq!(class_sum(total), total["samples"].as_u64().unwrap());
    assert_eq!(hub.stats().await.publish.accepted, n("accepted"));
    assert!(s.get("warnings").is_none(), "{s}");
}

/// `--rate 80000` against the embedded hub on this 2-core machine: the generator's limits
/// show as drops (or `client_error` with its warning), never as `other`; the row adds up and
/// stderr stays a few lines (no per-request warnings of the embedded hub).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_beyond_the_machine_is_dropped_not_blamed_on_the_hub() {
    let _serial = crate::util::SERIAL.lock().await;
    let out = tempfile::tempdir().unwrap();
    let o = crate::util::hubload_command()
        .args([
            "--quiet",
            "--tenants",
            "5",
            "--rate",
            "80000",
            "--duration",
            "4s",
            "--out",
        ])
        .arg(out.path())
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.lines().count() <= 15, "{stderr}");
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.path().join("summary.json")).unwrap()).unwrap();
    let total = &s["total"];
    let n = |k: &str| total["stats"]["counts"][k].as_u64().unwrap();
    assert_eq!(n("other"), 0, "{total}");
    assert_eq!(class_sum(total), total["samples"].as_u64().unwrap());
    let check = &s["rate_checks"][0];
    assert_eq!(check["scheduled"].as_u64().unwrap(), 320_000, "{check}");
    assert_eq!(
        total["events"]["total"].as_u64().unwrap() + total["stats"]["dropped"].as_u64().unwrap(),
        320_000,
        "{total}"
    );
    // A client_error, if any, is warned about once and kept in the summary.
    let warned = s["warnings"].as_array().map_or(0, Vec::len);
    assert_eq!(warned, usize::from(n("client_error") > 0), "{s}");
}
