//! Broker mode with the administration API (the emulator's `--admin-listen`): register and
//! subscribe create the topic and subscription, unsubscribe and deregister delete them, a
//! lease that runs out ends the loop and deletes its subscription, and a topic deleted under
//! the hub ends its loops. What the hub did is read back through Microsoft's Python
//! `ServiceBusAdministrationClient` (servicebus/tests/sdk/admin.py) and the emulator's counts.

use std::path::PathBuf;
use std::time::Duration;

use hubload_hub::testing::TestHub;
use hubload_hub::{Broker, BrokerStats, HubConfig};
use hubload_servicebus::admin::AdminHandle;
use hubload_servicebus::emulator::{config_file, Emulator, EmulatorConfig, EmulatorHandle};
use hubload_servicebus::emulator::{DEV_KEY, DEV_KEY_NAME};
use serde_json::{json, Value};

use crate::util::{eventually_async, Subscriber};

/// A strict emulator (nothing exists unless made through the API), its administration API,
/// and a hub in broker mode managing entities through it.
struct Setup {
    emu: EmulatorHandle,
    admin: AdminHandle,
    hub: TestHub,
}

impl Setup {
    async fn start() -> Setup {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let emu = Emulator::start(
            listener,
            EmulatorConfig {
                declared: Some(
                    config_file::parse(r#"{"UserConfig": {"Namespaces": [{"Name": "ns"}]}}"#)
                        .unwrap(),
                ),
                strict: true,
                ..EmulatorConfig::default()
            },
        )
        .await
        .unwrap();
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let admin = AdminHandle::start(&emu, l).unwrap();
        let hub = TestHub::start(HubConfig::default()).await;
        let endpoint = format!("http://{}", admin.addr());
        let broker = Broker::connect(emu.connection_string_parsed(), Some(&endpoint))
            .await
            .unwrap();
        assert!(hub.state.set_broker(broker));
        Setup { emu, admin, hub }
    }

    /// A connection string naming the administration port, for the Python SDK.
    fn admin_cs(&self) -> String {
        format!(
            "Endpoint=sb://{};SharedAccessKeyName={DEV_KEY_NAME};SharedAccessKey={DEV_KEY};UseDevelopmentEmulator=true",
            self.admin.addr()
        )
    }

    fn broker(&self) -> BrokerStats {
        self.hub.state.stats().broker.unwrap()
    }

    async fn form(&self, mode: &str, topic: &str, callback: &str, lease: &str) -> u16 {
        let mut pairs = vec![
            ("hub.mode", mode),
            ("hub.topic", topic),
            ("hub.callback", callback),
        ];
        if !lease.is_empty() {
            pairs.push(("hub.lease_seconds", lease));
        }
        self.hub.form(&pairs).await.0
    }

    async fn subscribe(&self, topic: &str, callback: &str, lease: &str) {
        assert_eq!(self.form("subscribe", topic, callback, lease).await, 202);
        eventually_async("the receive loop", || async {
            self.broker().subscriptions == 1
        })
        .await;
    }

    async fn deregister(&self, topic: &str) {
        let q = format!("hub.mode=deregister&hub.topic={topic}");
        assert_eq!(self.hub.post(&q, "application/json", b"").await.0, 200);
    }
}

/// The venv's python (servicebus/tests/sdk/.venv, made by .ci/run); `None` (skip) outside CI.
fn python() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../servicebus/tests/sdk");
    let p = dir.join(".venv/bin/python");
    if p.exists() {
        return Some(p);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "the Python SDK venv missing under CI: .ci/run installs it"
    );
    eprintln!("skipped: the Python SDK venv missing (.ci/run installs it)");
    None
}

/// Run `admin.py` with `args`; its JSON line. Bounded: a hang fails the test.
async fn admin_py(py: &PathBuf, args: &[&str]) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../servicebus/tests/sdk/admin.py");
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new(py)
            .arg(script)
            .args(args)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("admin.py did not finish in 120 s")
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap_or_else(|_| {
        panic!(
            "admin.py: no JSON\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn listing(topics: &[&str], subs: &[&str], get_topic: Option<&str>) -> Value {
    json!({"error": null, "topics": topics, "subscriptions": subs, "get_topic": get_topic})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn register_subscribe_unsubscribe_deregister_manage_the_entities() {
    let Some(py) = python() else { return };
    let s = Setup::start().await;
    let cs = s.admin_cs();
    let sub = Subscriber::start().await;
    let cb = sub.callback("cb");
    s.hub.register("t").await;
    assert_eq!(
        admin_py(&py, &["list", &cs, "t"]).await,
        listing(&["t"], &[], None)
    );

    s.subscribe("t", &cb, "").await;
    let listed = admin_py(&py, &["list", &cs, "t"]).await;
    let name = listed["subscriptions"][0].as_str().unwrap().to_owned();
    assert!(name.starts_with("hub-"), "{listed}");
    assert_eq!(listed, listing(&["t"], &[&name], None));
    assert_eq!(s.hub.publish("t", "text/plain", b"one").await.0, 200);
    eventually_async("the delivery", || async { sub.delivered() == 1 }).await;

    assert_eq!(s.form("unsubscribe", "t", &cb, "").await, 202);
    eventually_async("the subscription's delete", || async {
        s.broker().entity_deletes == 1
    })
    .await;
    assert_eq!(
        admin_py(&py, &["list", &cs, "t"]).await,
        listing(&["t"], &[], None)
    );

    s.deregister("t").await;
    eventually_async("the topic's delete", || async {
        s.broker().entity_deletes == 2
    })
    .await;
    assert_eq!(
        admin_py(&py, &["list", &cs, "t"]).await,
        listing(&[], &[], Some("ResourceNotFoundError"))
    );
    let b = s.broker();
    assert_eq!(
        (
            b.entity_creates,
            b.entity_deletes,
            b.entity_failures,
            b.subscriptions
        ),
        (2, 2, 0, 0)
    );
    let c = s.emu.counts();
    assert_eq!((c.entity_creates, c.entity_deletes), (2, 2));
    assert!(c.entities.is_empty(), "{:?}", c.entities);
    assert_eq!(sub.delivered(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_that_runs_out_ends_the_loop_and_deletes_the_subscription() {
    let s = Setup::start().await;
    let sub = Subscriber::start().await;
    s.hub.register("t").await;
    s.subscribe("t", &sub.callback("cb"), "1").await;
    assert_eq!(s.emu.counts().entities.len(), 1);
    eventually_async("the lease to run out", || async {
        let b = s.broker();
        b.leases_expired == 1 && b.subscriptions == 0 && b.entity_deletes == 1
    })
    .await;
    assert!(s.emu.counts().entities.is_empty());
    // Published after: the topic takes it and no subscription holds it.
    assert_eq!(s.hub.publish("t", "text/plain", b"late").await.0, 200);
    let c = s.emu.counts();
    assert_eq!((c.accepted_per_topic["t"], c.entities.len()), (1, 0));
    let b = s.broker();
    assert_eq!(
        (
            b.entity_creates,
            b.entity_deletes,
            b.entity_failures,
            b.receives
        ),
        (2, 1, 0, 0)
    );
    // A new subscribe after the expiry starts a new loop.
    s.subscribe("t", &sub.callback("cb"), "60").await;
    assert_eq!(s.hub.publish("t", "text/plain", b"again").await.0, 200);
    eventually_async("the delivery", || async { sub.delivered() == 1 }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_deleted_while_subscribed_ends_its_loops_and_publishes_fail() {
    let Some(py) = python() else { return };
    let s = Setup::start().await;
    let cs = s.admin_cs();
    let sub = Subscriber::start().await;
    s.hub.register("t").await;
    s.subscribe("t", &sub.callback("cb"), "").await;
    for i in 0..5 {
        let body = format!("m{i}");
        assert_eq!(
            s.hub.publish("t", "text/plain", body.as_bytes()).await.0,
            200
        );
    }
    eventually_async("5 deliveries", || async { sub.delivered() == 5 }).await;

    assert_eq!(
        admin_py(&py, &["delete", &cs, "t"]).await,
        json!({"error": null})
    );
    eventually_async("the loop to end", || async {
        let b = s.broker();
        b.subscriptions_lost == 1 && b.subscriptions == 0
    })
    .await;
    // The hub still has the topic registered; the broker does not: 502, counted not_found.
    let (status, _) = s.hub.publish("t", "text/plain", b"after").await;
    assert_eq!(status, 502);
    let b = s.broker();
    assert_eq!(
        (
            b.sends.accepted,
            b.sends.not_found,
            b.receives,
            b.completes,
            b.subscriptions_lost,
            b.entity_deletes
        ),
        (5, 1, 5, 5, 1, 0)
    );
    let c = s.emu.counts();
    assert_eq!((c.accepted, c.entity_deletes), (5, 1));
    assert!(c.entities.is_empty());
    assert_eq!(sub.delivered(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscribe_not_verified_leaves_no_subscription_at_the_broker() {
    let s = Setup::start().await;
    let sub = Subscriber::start().await;
    s.hub.register("t").await;
    sub.wrong_echo(true);
    assert_eq!(s.form("subscribe", "t", &sub.callback("cb"), "").await, 202);
    // Made before the verification (so nothing is missed after it), deleted when it failed.
    eventually_async("the subscription's delete", || async {
        s.broker().entity_deletes == 1
    })
    .await;
    let b = s.broker();
    assert_eq!(
        (
            b.entity_creates,
            b.entity_deletes,
            b.entity_failures,
            b.subscriptions
        ),
        (2, 1, 0, 0)
    );
    let c = s.emu.counts();
    assert_eq!((c.entity_creates, c.entity_deletes), (2, 1));
    assert!(c.entities.is_empty(), "{:?}", c.entities);
}

/// Bad administration flags: one line naming the flag, exit 2.
#[test]
fn bad_admin_flags_are_one_line() {
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_hubload-hub"))
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).trim_end().to_owned(),
        )
    };
    let cs = format!(
        "Endpoint=sb://127.0.0.1:9/;SharedAccessKeyName={DEV_KEY_NAME};SharedAccessKey={DEV_KEY};UseDevelopmentEmulator=true"
    );
    for bad in ["ftp://127.0.0.1:5300", "127.0.0.1:5300", "http://"] {
        let (code, err) = run(&[
            "--listen",
            "127.0.0.1:0",
            "--servicebus",
            &cs,
            "--servicebus-admin",
            bad,
        ]);
        assert_eq!(code, Some(2), "{bad}: {err}");
        assert_eq!(
            err, "hubload-hub: --servicebus-admin must be an http:// or https:// URL with a host",
            "{bad}"
        );
        assert!(!err.contains(DEV_KEY));
    }
    // The emulator's --admin-listen on a port already taken.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (code, err) = run(&[
        "servicebus-emulator",
        "--listen",
        "127.0.0.1:0",
        "--log-every",
        "0",
        "--admin-listen",
        &addr,
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let want = format!("hubload-hub: --admin-listen {addr}: cannot listen");
    assert!(err.starts_with(&want), "{err}");
}
