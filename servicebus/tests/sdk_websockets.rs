//! Microsoft's own Service Bus SDKs, unmodified, over AMQP over WebSockets against the emulator's
//! WebSocket port (TLS from a throw-away CA): Python with `TransportType.AmqpOverWebsocket`, JS
//! with `webSocketOptions` (the `ws` package). Each sends singles, batches and lists, receives them
//! all in peek-lock and completes them; every figure is reconciled with the emulator's own. The
//! SDKs reach only the WebSocket port: the address they are given is that port's.
//!
//! Setup as in sdk.rs (`.ci/run`: the venv with websocket-client, `npm ci` with `ws`), and
//! `openssl` on PATH.

mod sdk_common;
mod tls_common;

use hubload_servicebus::emulator::tier::Tier;
use sdk_common::*;
use serde_json::Value;
use tls_common::{make_certs, serve_ws};

/// The emulator's own key in a plain connection string to `localhost:port` (what the SDKs
/// parse; the transport is their option).
fn sdk_string(emu: &hubload_servicebus::emulator::EmulatorHandle, port: u16) -> String {
    let mut cs = emu.connection_string_parsed();
    cs.host = "localhost".into();
    cs.port = Some(port);
    cs.use_development_emulator = false;
    cs.expose()
}

/// How one SDK is driven: its interpreter and script, the scheme of the WebSocket endpoint it
/// is given, the variable that makes it trust the throw-away CA, and its name for peek-lock.
struct Sdk {
    bin: std::path::PathBuf,
    script: &'static str,
    scheme: &'static str,
    ca_var: &'static str,
    peek_lock: &'static str,
}

/// 10 singles, 2 batches and 2 lists of 5 sent through the WebSocket port, then all 30
/// received in peek-lock and completed, each figure reconciled with the emulator's own.
async fn sends_receives_and_completes(sdk: Sdk) {
    let certs = make_certs();
    let emu = emulator(true, Tier::Unlimited).await;
    let port = serve_ws(&emu, &certs).await.port.unwrap();
    let cs = sdk_string(&emu, port);
    let endpoint = format!("{}://localhost:{port}", sdk.scheme);
    let ca = certs.path("ca.pem");
    let env = [
        ("SB_WEBSOCKET_ENDPOINT", endpoint.as_str()),
        (sdk.ca_var, ca.to_str().unwrap()),
    ];
    let sent = run_env(
        &sdk.bin,
        sdk.script,
        &["send", &cs, "orders", "10", "2", "2", "5"],
        &env,
    )
    .await;
    assert_eq!(
        (sent["sent"].as_u64(), &sent["error"]),
        (Some(30), &Value::Null),
        "{sent}"
    );
    let c = emu.counts();
    assert_eq!(
        (c.accepted, c.accepted_per_topic["orders"], c.batches),
        (30, 30, 4)
    );

    let got = run_env(
        &sdk.bin,
        sdk.script,
        &[
            "receive",
            &cs,
            "orders",
            "all",
            sdk.peek_lock,
            "complete",
            "30",
            "30",
        ],
        &env,
    )
    .await;
    assert_eq!(got["error"], Value::Null, "{got}");
    assert_eq!(ids(&got), sent_ids(10, 2, 2, 5));
    let s = stats_once(&emu, "orders/Subscriptions/all", |s| s.completed == 30).await;
    assert_eq!((s.delivered, s.completed, s.active), (30, 30, 0));
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_over_websockets_sends_receives_and_completes() {
    let Some(bin) = python() else { return };
    sends_receives_and_completes(Sdk {
        bin,
        script: "sb.py",
        scheme: "sb",
        ca_var: "SB_CA_FILE",
        peek_lock: "peek_lock",
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn js_over_websockets_sends_receives_and_completes() {
    let Some(bin) = node() else { return };
    sends_receives_and_completes(Sdk {
        bin,
        script: "sb.js",
        scheme: "https",
        ca_var: "NODE_EXTRA_CA_CERTS",
        peek_lock: "peekLock",
    })
    .await;
}
