//! Faults in the broker topology, each under a hubload run with its own subscribers against
//! the reference hub in broker mode on the emulator: what hubload's fleet reports, exactly,
//! with the hub's and the broker's counts in between (docs/hub-servicebus.md, "Faults").

use std::time::{Duration, Instant};

use hubload_hub::{Broker, BrokerStats, HubConfig};
use hubload_servicebus::admin::AdminHandle;
use hubload_servicebus::emulator::store::StoreStats;
use hubload_servicebus::emulator::{
    config_file, Emulator, EmulatorConfig, EmulatorCounts, EmulatorHandle,
};

use crate::util::{count, Scenario};

/// A steady, slow run: one level, 8 publishes a second for 6 s, one subscriber per topic.
/// One topic, so its subscriber's deliveries come every 125 ms unless something stops them.
const RUN: [&str; 16] = [
    "--topics",
    "1",
    "--tenants",
    "1",
    "--sps",
    "1",
    "--users",
    "1",
    "--rate",
    "8",
    "--duration",
    "6s",
    "--subscribers",
    "1",
    "--delivery-grace",
    "5s",
];

/// The entities of `c` as a `Config.json`: a restarted broker keeps its entities (Azure's
/// are durable); this emulator keeps them only when declared again.
fn same_entities(c: &EmulatorCounts) -> EmulatorConfig {
    let mut topics: std::collections::BTreeMap<&str, Vec<serde_json::Value>> = Default::default();
    for path in c.entities.keys() {
        let (t, sub) = path.split_once("/Subscriptions/").expect("a subscription");
        topics
            .entry(t)
            .or_default()
            .push(serde_json::json!({"Name": sub}));
    }
    let topics: Vec<_> = topics
        .into_iter()
        .map(|(t, subs)| serde_json::json!({"Name": t, "Subscriptions": subs}))
        .collect();
    let json =
        serde_json::json!({"UserConfig": {"Namespaces": [{"Name": "ns", "Topics": topics}]}});
    EmulatorConfig {
        declared: Some(config_file::parse(&json.to_string()).unwrap()),
        ..EmulatorConfig::default()
    }
}

async fn emulator_on(addr: &str, cfg: EmulatorConfig) -> EmulatorHandle {
    let deadline = Instant::now() + Duration::from_secs(10);
    // The stopped emulator's listener closes once its accept task has ended.
    let listener = loop {
        match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => break l,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("cannot bind {addr} again: {e}"),
        }
    };
    Emulator::start(listener, cfg).await.unwrap()
}

async fn broker_hub(emu: &EmulatorHandle) -> Scenario {
    let sc = Scenario::start_with(HubConfig::default()).await;
    let broker = Broker::connect(emu.connection_string_parsed(), None)
        .await
        .unwrap();
    assert!(sc.hub.state.set_broker(broker));
    sc
}

fn broker(sc: &Scenario) -> BrokerStats {
    sc.hub.state.stats().broker.unwrap()
}

/// Wait (bounded) until the hub has completed `n` deliveries and nothing is in flight: every
/// accepted send received and settled. Returns when that was seen.
async fn quiet_after(sc: &Scenario, n: u64) {
    // Generous: it returns as soon as the hub is quiet, and under the whole suite's load the
    // run's subscribe phase alone has taken over 20 s (all counts still 0).
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let b = broker(sc);
        let settled = b.completes + b.settle_failures;
        if b.completes >= n && b.sends.accepted == b.receives && b.receives == settled {
            return;
        }
        assert!(Instant::now() < deadline, "the hub never went quiet: {b:?}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Every subscription store added up.
fn stores(c: &EmulatorCounts) -> StoreStats {
    let mut t = StoreStats::default();
    for s in c.entities.values() {
        t.enqueued += s.enqueued;
        t.delivered += s.delivered;
        t.completed += s.completed;
        t.active += s.active;
        t.redelivered += s.redelivered;
    }
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_broker_restarts_publishes_get_503_and_deliveries_resume() {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = probe.local_addr().unwrap().to_string();
    drop(probe);
    let old = emulator_on(&addr, EmulatorConfig::default()).await;
    let sc = broker_hub(&old).await;
    let outage = Duration::from_millis(1500);
    let (o, (new, down)) = tokio::join!(sc.run(&RUN), async {
        // At a quiet moment after 10 deliveries, so nothing is in flight when it goes.
        quiet_after(&sc, 10).await;
        let t0 = Instant::now();
        old.stop();
        let cfg = same_entities(&old.counts());
        tokio::time::sleep(outage).await;
        let new = emulator_on(&addr, cfg).await;
        (new, t0.elapsed())
    });
    let l = &o.report.levels[0];
    let accepted = count(l, "accepted");
    let refused = l.derived.status_codes.get("503").copied().unwrap_or(0);
    let d = l.delivery.as_ref().unwrap();
    let (c, was, now) = (&d.counts, old.counts(), new.counts());
    let b = settled(&sc, c.delivered).await;
    let topics = o.report.topics.len() as u64;

    // Publishes while the broker was away were answered 503, each a failed send.
    assert!(
        refused > 0,
        "no publish fell in the outage: {:?}",
        l.derived.status_codes
    );
    assert_eq!(b.sends.connection, refused, "{b:?}");
    assert_eq!(b.sends.accepted, accepted);
    assert_eq!(was.accepted + now.accepted, accepted);
    // Nothing accepted was lost: all delivered once, the old broker emptied before it went.
    assert_eq!(
        (c.delivered, c.lost, c.duplicates, c.expected),
        (accepted, 0, 0, accepted),
        "{c:?}"
    );
    let (w, n) = (stores(&was), stores(&now));
    assert_eq!(
        (w.enqueued, w.completed, w.active),
        (was.accepted, was.accepted, 0)
    );
    assert_eq!(
        (n.enqueued, n.completed, n.active),
        (now.accepted, now.accepted, 0)
    );
    assert!(n.completed > 0, "deliveries resumed on the new broker");
    // Each subscriber's loop reconnected once; its failed tries were counted meanwhile.
    assert_eq!(b.receive_restarts, topics, "{b:?}");
    assert!(b.receive_errors > 0);
    // hubload unsubscribes its fleet at the end: no loop is left.
    assert_eq!(
        (b.completes, b.settle_failures, b.subscriptions),
        (accepted, 0, 0)
    );
    // The fleet reports the time without deliveries: at least the outage, and at most the
    // outage plus the loop's reconnect pause (500 ms) and the run's spacing (125 ms), with
    // room for a loaded machine.
    let gap = Duration::from_micros(d.longest_gap_us);
    assert!(gap >= down, "gap {gap:?} < outage {down:?}");
    assert!(
        gap < down + Duration::from_secs(1),
        "gap {gap:?}, outage {down:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_receive_link_is_reattached_and_the_gap_is_reported() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let emu = Emulator::start(listener, EmulatorConfig::default())
        .await
        .unwrap();
    let sc = broker_hub(&emu).await;
    let (o, ()) = tokio::join!(sc.run(&RUN), async {
        quiet_after(&sc, 10).await;
        emu.drop_links();
    });
    let l = &o.report.levels[0];
    let accepted = count(l, "accepted");
    let d = l.delivery.as_ref().unwrap();
    let c = &d.counts;
    let b = settled(&sc, c.delivered).await;
    let topics = o.report.topics.len() as u64;
    // Every link detached once, the hub's sender link too: publishes in the moment it took to
    // re-attach were answered 503, each a failed send. Each receive loop re-attached once,
    // and nothing accepted was lost or delivered twice.
    let refused = l.derived.status_codes.get("503").copied().unwrap_or(0);
    assert_eq!(b.sends.connection, refused, "{:?}", l.derived.status_codes);
    assert_eq!(b.sends.accepted, accepted);
    assert_eq!(b.receive_restarts, topics, "{b:?}");
    assert_eq!(
        (c.delivered, c.lost, c.duplicates),
        (accepted, 0, 0),
        "{c:?}"
    );
    // Every message received was settled once: completed, or its completion was in flight
    // when the links dropped (a settle failure; on a quiet machine there is none, beside busy
    // loops one was seen now and then). Such a message either came back to the re-attached
    // link and was completed, or is still locked (its 60 s lock outlives the run). The broker
    // agrees: what it completed is what the hub completed, and the rest is locked.
    let s = stores(&emu.counts());
    assert_eq!((s.enqueued, emu.counts().accepted), (accepted, accepted));
    assert_eq!(s.completed, b.completes, "{b:?} {s:?}");
    assert_eq!(s.completed + s.active, accepted, "{b:?} {s:?}");
    assert_eq!(b.receives, b.completes + b.settle_failures, "{b:?}");
    assert!(s.active <= b.settle_failures, "{b:?} {s:?}");
    // The longest gap is reported: the run's spacing (125 ms) plus the publishes refused
    // while the sender re-attached; well under a second, where a broker restart's is above
    // its whole outage.
    assert!(
        d.longest_gap_us > 0 && d.longest_gap_us < 1_000_000,
        "{}",
        d.longest_gap_us
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttling_broker_shows_as_503s_in_the_run_and_nothing_accepted_is_lost() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let cfg = EmulatorConfig {
        throttle_every: Some(5),
        ..EmulatorConfig::default()
    };
    let emu = Emulator::start(listener, cfg).await.unwrap();
    let sc = broker_hub(&emu).await;
    let o = sc.run(&RUN).await;
    let l = &o.report.levels[0];
    let accepted = count(l, "accepted");
    let refused = l.derived.status_codes.get("503").copied().unwrap_or(0);
    let c = &l.delivery.as_ref().unwrap().counts;
    let b = settled(&sc, c.delivered).await;
    let e = emu.counts();
    // Every 5th send is refused server-busy: the hub answers it 503 and the run shows it.
    assert!(refused > 0);
    assert_eq!((e.throttled, b.sends.throttled), (refused, refused));
    assert_eq!((e.accepted, b.sends.accepted), (accepted, accepted));
    assert_eq!(
        (accepted + refused) / 5,
        refused,
        "every 5th of {}",
        accepted + refused
    );
    assert_eq!(
        (c.delivered, c.lost, c.duplicates),
        (accepted, 0, 0),
        "{c:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_deleted_under_the_run_ends_its_loop_and_later_publishes_get_502() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let cfg = EmulatorConfig {
        declared: Some(
            config_file::parse(r#"{"UserConfig": {"Namespaces": [{"Name": "ns"}]}}"#).unwrap(),
        ),
        strict: true,
        ..EmulatorConfig::default()
    };
    let emu = Emulator::start(listener, cfg).await.unwrap();
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin = AdminHandle::start(&emu, l).unwrap();
    let sc = Scenario::start_with(HubConfig::default()).await;
    let endpoint = format!("http://{}", admin.addr());
    let broker = Broker::connect(emu.connection_string_parsed(), Some(&endpoint))
        .await
        .unwrap();
    assert!(sc.hub.state.set_broker(broker));
    let (o, ()) = tokio::join!(sc.run(&RUN), async {
        quiet_after(&sc, 10).await;
        // The run's one topic, as the broker knows it.
        let path = emu.counts().entities.keys().next().unwrap().clone();
        let topic = path.split_once("/Subscriptions/").unwrap().0.to_owned();
        assert_eq!(delete(admin.addr(), &topic).await, 200);
    });
    let l = &o.report.levels[0];
    let accepted = count(l, "accepted");
    let refused = l.derived.status_codes.get("502").copied().unwrap_or(0);
    let c = &l.delivery.as_ref().unwrap().counts;
    let b = settled(&sc, c.delivered).await;
    // Everything accepted before the delete was delivered (it came at a quiet moment); every
    // publish after it was refused 502 (the topic is not found), so nothing more is owed.
    assert!(refused > 0);
    assert_eq!(b.sends.not_found, refused);
    assert_eq!((b.sends.accepted, b.completes), (accepted, accepted));
    assert_eq!(
        (c.delivered, c.lost, c.duplicates),
        (accepted, 0, 0),
        "{c:?}"
    );
    // The hub's loop ended, counted, instead of retrying a subscription that is gone.
    assert_eq!((b.subscriptions_lost, b.subscriptions), (1, 0), "{b:?}");
    // Made at register and subscribe; nothing for the hub to delete after (the loop saw the
    // subscription gone, so the fleet's closing unsubscribe deletes nothing).
    assert_eq!(
        (b.entity_creates, b.entity_deletes, b.entity_failures),
        (2, 0, 0)
    );
    let e = emu.counts();
    assert_eq!((e.accepted, e.entity_deletes), (accepted, 1));
    assert!(e.entities.is_empty());
}

/// The hub's broker counts once it has completed `delivered` (bounded wait).
async fn settled(sc: &Scenario, delivered: u64) -> BrokerStats {
    let deadline = Instant::now() + Duration::from_secs(10);
    while broker(sc).completes < delivered && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    broker(sc)
}

/// `DELETE /<topic>` on the administration API at `addr`, signed with the emulator's
/// development key; the status.
async fn delete(addr: std::net::SocketAddr, topic: &str) -> u16 {
    use hubload_servicebus::emulator::{DEV_KEY, DEV_KEY_NAME};
    use hubload_servicebus::sas::{expiry_after, sas_token};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let base = format!("http://{addr}");
    let token = sas_token(
        &base,
        DEV_KEY_NAME,
        DEV_KEY,
        expiry_after(Duration::from_secs(60)),
    );
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "DELETE /{topic}?api-version=2021-05 HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {token}\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out))
        .await
        .unwrap()
        .unwrap();
    let head = String::from_utf8_lossy(&out);
    head[9..12].parse().unwrap()
}
