//! AMQP over WebSockets (`TransportType=AmqpWebSockets`): hubload's sender and receiver
//! against the emulator's WebSocket port (TLS from a throw-away CA), reconciled with the
//! emulator's counts; and servers that misbehave at the WebSocket layer, each ending in a
//! named failure within its deadline.
//!
//! Needs `openssl` on PATH (`.ci/run` installs it).

#[path = "../../tests/support/lateness.rs"]
mod lateness;
mod tls_common;

use std::time::{Duration, Instant};

use futures_util::SinkExt;
use hubload_servicebus::{
    ConnectionString, OutgoingMessage, ReceiverConfig, SbError, SbReceiver, SbSender, SendOutcome,
    TransportType,
};
use tls_common::{emulator, make_certs, sender_config, serve_ws, Certs};
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::Message;

fn msg<'a>(body: &'a [u8], id: &'a str) -> OutgoingMessage<'a> {
    OutgoingMessage {
        body,
        message_id: id,
        content_type: "application/json",
        properties: &[("tenant", "t1")],
    }
}

/// 40 sends over two WebSocket connections, all accepted and counted by the emulator; the
/// receiver takes all 40 from a subscription over WebSockets too and completes them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sender_and_receiver_over_websockets_reconcile_with_the_emulator() {
    let certs = make_certs();
    let emu = emulator().await;
    let cs = serve_ws(&emu, &certs).await;
    // The subscription exists before the sends (made on first use, as in a run).
    let mut rx = SbReceiver::connect(ReceiverConfig::new(cs.clone(), "orders", "all"))
        .await
        .unwrap();
    let sender = SbSender::connect(sender_config(cs.clone(), Duration::from_secs(5)))
        .await
        .unwrap();
    let mut accepted = 0;
    for i in 0..40 {
        let body = format!("{{\"i\":{i}}}");
        let id = format!("ws-{i}");
        let r = sender.send("orders", msg(body.as_bytes(), &id)).await;
        assert_eq!(r.outcome, SendOutcome::Accepted, "send {i}");
        accepted += 1;
    }
    let c = emu.counts();
    assert_eq!((c.accepted, c.accepted_per_topic["orders"]), (accepted, 40));
    // The emulator counts the AMQP connections it accepted: the receiver's and the pool's two.
    assert_eq!(c.connections, 3);

    let mut ids = std::collections::BTreeSet::new();
    while ids.len() < 40 {
        let m = rx
            .receive(Duration::from_secs(5))
            .await
            .unwrap()
            .expect("a message within 5 s");
        rx.complete(&m).await.unwrap();
        ids.insert(m.message_id.clone().unwrap());
    }
    let want: std::collections::BTreeSet<String> = (0..40).map(|i| format!("ws-{i}")).collect();
    assert_eq!(ids, want);
    // Completions are settled by the emulator after the receiver's calls return: wait (5 s
    // at most) until all 40 are, then compare.
    let deadline = Instant::now() + Duration::from_secs(5);
    let s = loop {
        let s = emu.counts().entities["orders/Subscriptions/all"];
        if s.completed == 40 || Instant::now() >= deadline {
            break s;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!((s.delivered, s.completed, s.active), (40, 40, 0));
    sender.close().await;
    rx.close().await;
    emu.shutdown().await;
}

/// Without the throw-away CA the TLS step fails, named, and nothing reaches AMQP.
#[tokio::test]
async fn an_untrusted_certificate_fails_at_the_tls_step() {
    let certs = make_certs();
    let emu = emulator().await;
    let cs = serve_ws(&emu, &certs).await.with_ca_pems(Vec::new());
    let e = SbSender::connect(sender_config(cs, Duration::from_secs(5)))
        .await
        .unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, SbError::Connect { .. }), "{text}");
    assert!(
        text.contains("TLS: invalid peer certificate: UnknownIssuer"),
        "{text}"
    );
    assert_eq!(emu.counts().connections, 0);
    emu.shutdown().await;
}

/// A TLS server for the hostile tests, with the leaf of `certs`.
async fn tls_listener(certs: &Certs) -> (tokio::net::TcpListener, tokio_rustls::TlsAcceptor, u16) {
    let tls = hubload_servicebus::emulator::ws::tls_acceptor(
        &certs.path("leaf.pem"),
        &certs.path("leaf.key"),
    )
    .unwrap();
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    (l, tls, port)
}

fn ws_string(port: u16, certs: &Certs) -> ConnectionString {
    let mut cs = ConnectionString::new("localhost", Some(port), "k", "a2V5", false);
    cs.transport = TransportType::AmqpWebSockets;
    cs.with_ca_pems(vec![certs.ca_pem()])
}

/// A server that completes TLS, reads the upgrade request and never answers: the connect
/// ends at its timeout (not before, and within the margin after), as a named connect failure.
#[tokio::test]
async fn a_server_that_never_completes_the_upgrade_ends_at_the_connect_timeout() {
    let certs = make_certs();
    let (l, tls, port) = tls_listener(&certs).await;
    let server = tokio::spawn(async move {
        let mut held = Vec::new();
        loop {
            let (tcp, _) = l.accept().await.unwrap();
            if let Ok(s) = tls.accept(tcp).await {
                held.push(s); // never written to
            }
        }
    });
    let timeout = Duration::from_millis(400);
    let lateness = lateness::Lateness::watch();
    let started = Instant::now();
    let e = SbSender::connect(sender_config(ws_string(port, &certs), timeout))
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(
        took >= timeout && took <= lateness.bound(timeout),
        "ended after {took:?}, bound {:?}",
        lateness.bound(timeout)
    );
    assert_eq!(
        e.to_string(),
        format!(
            "cannot connect to Service Bus at localhost:{port}: the connection (TCP, AMQP open, \
             session and CBS link) was not open within 400ms"
        )
    );
    server.abort();
}

/// Agree to the upgrade with subprotocol AMQPWSB10, as a real server would.
#[allow(clippy::result_large_err)] // the callback type is tungstenite's
fn agree_amqpwsb10(_: &Request, mut r: Response) -> Result<Response, ErrorResponse> {
    r.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        HeaderValue::from_static("AMQPWSB10"),
    );
    Ok(r)
}

/// A server that upgrades, then sends one 2 MiB binary message (past the 1 MiB bound): the
/// open fails naming the WebSocket limit instead of buffering the message.
#[tokio::test]
async fn an_oversized_websocket_message_is_refused_with_its_reason() {
    let certs = make_certs();
    let (l, tls, port) = tls_listener(&certs).await;
    let server = tokio::spawn(async move {
        let (tcp, _) = l.accept().await.unwrap();
        let s = tls.accept(tcp).await.unwrap();
        let mut ws = tokio_tungstenite::accept_hdr_async(s, agree_amqpwsb10)
            .await
            .unwrap();
        let big = vec![b'A'; 2 * 1024 * 1024];
        let _ = ws.send(Message::Binary(big.into())).await;
        ws
    });
    let e = SbSender::connect(sender_config(
        ws_string(port, &certs),
        Duration::from_secs(5),
    ))
    .await
    .unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, SbError::Connect { .. }), "{text}");
    assert!(
        text.ends_with(
            "AMQP open failed: the broker sent a frame larger than the maximum frame size or \
             malformed (WebSocket: Message too long: 2097152 > 1048576)"
        ),
        "{text}"
    );
    server.abort();
}
