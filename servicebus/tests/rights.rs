//! The emulator's key rights (`--key-rights`): a policy without Manage gets 401 from the
//! administration API with Azure's wording, where the same token with every right reaches the
//! entity (404 for one that does not exist); links needing Send or Listen are refused at
//! attach, counted `unauthorized`.

use std::time::Duration;

use hubload_servicebus::admin::AdminHandle;
use hubload_servicebus::emulator::rights::Rights;
use hubload_servicebus::emulator::{
    Emulator, EmulatorConfig, EmulatorHandle, DEV_KEY, DEV_KEY_NAME,
};
use hubload_servicebus::sas::{expiry_after, sas_token};
use hubload_servicebus::{
    ReceiverConfig, SbError, SbReceiver, SbSender, SendOutcome, SenderConfig,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

async fn emulator(rights: &str) -> EmulatorHandle {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let cfg = EmulatorConfig {
        key_rights: Rights::parse(rights).unwrap(),
        ..EmulatorConfig::default()
    };
    Emulator::start(l, cfg).await.unwrap()
}

/// `GET /orders` on the administration API with a valid namespace token; the answer's head
/// and body as text.
async fn get_entity(emu: &EmulatorHandle) -> String {
    let admin = AdminHandle::start(emu, TcpListener::bind("127.0.0.1:0").await.unwrap()).unwrap();
    let base = format!("http://{}", admin.addr());
    let token = sas_token(
        &base,
        DEV_KEY_NAME,
        DEV_KEY,
        expiry_after(Duration::from_secs(60)),
    );
    let mut s = TcpStream::connect(admin.addr()).await.unwrap();
    let req = format!(
        "GET /orders?api-version=2021-05 HTTP/1.1\r\nHost: {}\r\nAuthorization: {token}\r\nConnection: close\r\n\r\n",
        admin.addr()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out))
        .await
        .unwrap()
        .unwrap();
    String::from_utf8_lossy(&out).to_string()
}

#[tokio::test]
async fn the_administration_api_needs_manage() {
    let emu = emulator("send,listen").await;
    let answer = get_entity(&emu).await;
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert!(
        answer.contains("'Manage' claim(s) are required"),
        "{answer}"
    );
    let emu = emulator("send,listen,manage").await;
    let answer = get_entity(&emu).await;
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
}

#[tokio::test]
async fn links_need_send_and_listen() {
    let emu = emulator("listen").await;
    let sender = SbSender::connect(SenderConfig {
        connection: emu.connection_string_parsed(),
        connections: 1,
        connect_timeout: Duration::from_secs(5),
        send_timeout: Duration::from_secs(5),
        token_ttl: Duration::from_secs(600),
    })
    .await
    .unwrap();
    assert_eq!(sender.prepare("orders").await, SendOutcome::Unauthorized);
    assert_eq!(emu.counts().unauthorized, 1);
    assert_eq!(emu.counts().cbs_denied, 0, "the token itself was fine");
    sender.close().await;
    let emu = emulator("send").await;
    let rc = ReceiverConfig::new(emu.connection_string_parsed(), "orders", "s1");
    let err = SbReceiver::connect(rc).await.unwrap_err();
    assert!(matches!(err, SbError::Unauthorized { .. }), "{err}");
    assert_eq!(emu.counts().unauthorized, 1);
}
