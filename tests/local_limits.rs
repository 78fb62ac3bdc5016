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
    let n = |k: &str| total["counts"][k].as_u64().unwrap();
    let client = n("client_error");
    assert!(client > 0, "no descriptor ran out: {total}");
    assert_eq!(
        total["reasons"]["client_error.too_many_open_files"].as_u64(),
        Some(client)
    );
    assert_eq!(n("accepted") + client, 2000, "{total}");
    assert_eq!(hub.stats().await.publish.accepted, n("accepted"));
    assert_eq!(n("other"), 0);
}
