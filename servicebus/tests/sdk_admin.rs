//! Microsoft's Python `ServiceBusAdministrationClient` (azure-servicebus, unmodified; only its
//! transport is pointed at plain HTTP, see tests/sdk/admin.py) against the emulator's
//! administration API: what the SDK creates, reads, lists and deletes is checked against the
//! emulator's own entities and counts; and a topic deleted under an attached receiver detaches
//! it with `amqp:not-found`, as Azure does.

mod sdk_common;

use std::time::Duration;

use hubload_servicebus::admin::AdminHandle;
use hubload_servicebus::emulator::tier::Tier;
use hubload_servicebus::emulator::{EmulatorHandle, DEV_KEY, DEV_KEY_NAME};
use hubload_servicebus::{ReceiveError, ReceiverConfig, SbReceiver};
use sdk_common::*;
use serde_json::json;

/// A strict emulator with no entities (so every entity seen was made through the API), its
/// administration API on 127.0.0.1:0, and a connection string naming that API.
async fn emulator_and_admin() -> (EmulatorHandle, AdminHandle, String) {
    let config = r#"{"UserConfig": {"Namespaces": [{"Name": "ns"}]}}"#;
    let emu = emulator_with(config, true, Tier::Unlimited).await;
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let a = AdminHandle::start(&emu, l).unwrap();
    let cs = format!(
        "Endpoint=sb://{};SharedAccessKeyName={DEV_KEY_NAME};SharedAccessKey={DEV_KEY};UseDevelopmentEmulator=true",
        a.addr()
    );
    (emu, a, cs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_admin_client_creates_lists_and_deletes() {
    let Some(py) = python() else { return };
    let (emu, _a, cs) = emulator_and_admin().await;
    let got = run(&py, "admin.py", &["scenario", &cs]).await;
    assert_eq!(
        got,
        json!({
            "error": null,
            "create_topic": "events",
            "create_topic_again": "ResourceExistsError",
            "create_subscription": ["audit", 5.0, 3],
            "create_queue": ["jobs", 4],
            "get_topic": "events",
            "get_subscription": ["audit", 5.0, 3],
            "topics": ["events"],
            "queues": ["jobs"],
            "subscriptions": ["audit"],
            "subscriptions_after": [],
            "get_deleted_subscription": "ResourceNotFoundError",
            "get_deleted_topic": "ResourceNotFoundError",
            "delete_deleted_topic": "ResourceNotFoundError",
            "topics_after": [],
            "queues_after": [],
            "wrong_key": "ClientAuthenticationError",
        })
    );
    let c = emu.counts();
    // Three made (topic, subscription, queue); three deleted; the second create refused.
    assert_eq!((c.entity_creates, c.entity_deletes), (3, 3));
    assert!(c.entities.is_empty(), "{:?}", c.entities);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_the_sdk_created_is_attachable_and_a_deleted_topic_detaches_its_receiver() {
    let Some(py) = python() else { return };
    let (emu, _a, cs) = emulator_and_admin().await;
    let made = run(&py, "admin.py", &["create", &cs, "news"]).await;
    assert_eq!(made, json!({"error": null, "name": "news"}));
    // Strict: a receiver on a subscription nobody created is refused.
    let mut cfg = ReceiverConfig::new(emu.connection_string_parsed(), "news", "s1");
    cfg.connect_timeout = Duration::from_secs(5);
    assert!(SbReceiver::connect(cfg.clone()).await.is_err());
    assert!(emu.counts().entities.is_empty());

    let made = run(&py, "admin.py", &["create_subscription", &cs, "news", "s1"]).await;
    assert_eq!(made, json!({"error": null, "name": "s1"}));
    let mut rx = SbReceiver::connect(cfg).await.unwrap();
    let listed = run(&py, "admin.py", &["list", &cs, "news"]).await;
    assert_eq!(
        listed,
        json!({"error": null, "topics": ["news"], "subscriptions": ["s1"], "get_topic": null})
    );

    let gone = run(&py, "admin.py", &["delete", &cs, "news"]).await;
    assert_eq!(gone, json!({"error": null}));
    // The link is detached with amqp:not-found; the re-attach is refused the same way.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let err = loop {
        match rx.receive(Duration::from_millis(500)).await {
            Err(e) => break e,
            Ok(m) => assert!(m.is_none(), "nothing was sent"),
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "receiver never failed"
        );
    };
    assert!(matches!(err, ReceiveError::NotFound(_)), "{err:?}");
    let c = emu.counts();
    assert_eq!((c.entity_creates, c.entity_deletes), (2, 1));
    assert!(c.entities.is_empty());
    let listed = run(&py, "admin.py", &["list", &cs, "news"]).await;
    assert_eq!(
        listed,
        json!({"error": null, "topics": [], "subscriptions": [], "get_topic": "ResourceNotFoundError"})
    );
    rx.close().await;
}
