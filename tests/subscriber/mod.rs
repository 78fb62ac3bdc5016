//! The subscriber fleet against the real reference hub: every accepted publish delivered once,
//! counts equal to the hub's `/stats`; a failing subscriber's redeliveries equal the hub's
//! retries; hand-made deliveries land in unexpected, bad signature and duplicates; the topic
//! server hands out each published event once.

use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{self, StreamExt};
use hubload::config::Secret;
use hubload::subscriber::{
    Behaviour, DeliveryLevelStats, DeliveryTracker, Fleet, FleetConfig, PhaseSettings,
};
use hubload::topic_server::{TopicServer, TopicServerConfig};
use hubload::workload::{Distribution, TopicLayout, Workload, WorkloadConfig};
use hubload_hub::StatsSnapshot;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

mod support;
use support::{now_us, request, sign, stand_in_hub, Hub};

use crate::util::assert_no_delivery_fault;

const SECRET: &str = "fleet-test-secret";

fn workload() -> Arc<Workload> {
    Arc::new(Workload::new(WorkloadConfig {
        tenants: 2,
        sps: 3,
        users: 5,
        channels: vec!["login".into(), "registration".into()],
        layout: TopicLayout::PerTenantChannel,
        payload_bytes: None,
        seed: 11,
        distribution: Distribution::Uniform,
    }))
}

async fn fleet(w: &Arc<Workload>, per_topic: usize, behaviour: Behaviour) -> Fleet {
    let cfg = FleetConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        callback_url: None,
        per_topic,
        topics: w
            .topics()
            .iter()
            .enumerate()
            .map(|(i, t)| (i, t.name.to_string()))
            .collect(),
        secret: Some(Secret::new(SECRET)),
        lease_seconds: 3600,
        behaviour,
        deadlines: Default::default(),
    };
    Fleet::start(cfg, w.clone(), Arc::new(DeliveryTracker::new(4096)))
        .await
        .unwrap()
}

/// Register, subscribe, publish `events` (4 at a time, through the tracker), close the level.
/// Returns the level's stats, accepted publishes per topic, and the hub's settled stats.
async fn one_level(
    hub: &Hub,
    w: &Arc<Workload>,
    fleet: &Fleet,
    per_topic: usize,
    events: u64,
) -> (DeliveryLevelStats, Vec<u64>, StatsSnapshot) {
    for t in w.topics() {
        hub.register(&t.name).await;
    }
    let settings = PhaseSettings {
        hub_url: hub.url(),
        connect_to: None,
        headers: Default::default(),
        concurrency: 4,
        timeout: Duration::from_secs(10),
        http2: false,
    };
    let phase = fleet.subscribe(&settings, &CancellationToken::new()).await;
    let n = (w.topics().len() * per_topic) as u64;
    assert_eq!(
        (
            phase.requested,
            phase.accepted,
            phase.verified,
            phase.denied,
            phase.unverified,
            phase.refused
        ),
        (n, n, n, 0, 0, 0),
        "{phase:?}"
    );
    // The hub activates a subscription once it has read our echo: wait for that.
    let names: Vec<String> = w.topics().iter().map(|t| t.name.to_string()).collect();
    let active = |s: &StatsSnapshot| {
        names.iter().all(|t| {
            s.topics
                .get(t)
                .is_some_and(|x| x.subscribers == per_topic as u64)
        })
    };
    assert!(active(&hub.stats_when(active).await));

    fleet.open_level(0);
    let tracker = fleet.tracker().clone();
    let accepted: Vec<(usize, bool)> = stream::iter(0..events)
        .map(|seq| {
            let (w, tracker) = (w.clone(), tracker.clone());
            async move {
                let e = w.event_at(seq, now_us());
                tracker.note_published(seq, e.topic, std::time::Instant::now());
                let ok = hub.publish(&w.topics()[e.topic].name, &e.body).await;
                if ok {
                    tracker.note_accepted(seq, std::time::Instant::now());
                }
                (e.topic, ok)
            }
        })
        .buffer_unordered(4)
        .collect()
        .await;
    let mut per_topic_accepted = vec![0u64; w.topics().len()];
    for (t, ok) in accepted {
        per_topic_accepted[t] += u64::from(ok);
    }
    // The hub first: once nothing is pending (queued or in flight) every answer the fleet
    // gave, 410s to deliveries that were in flight included, is in the level it closes.
    let settled = hub.stats_when(|s| s.distribution.pending == 0).await;
    let stats = fleet.close_level(Duration::from_secs(15)).await;
    (stats, per_topic_accepted, settled)
}

async fn delivers_exactly_once(per_topic: usize) {
    let hub = Hub::start().await;
    let w = workload();
    let fleet = fleet(&w, per_topic, Behaviour::default()).await;
    let (stats, accepted, hub_stats) = one_level(&hub, &w, &fleet, per_topic, 60).await;
    let total: u64 = accepted.iter().sum();
    assert_eq!(total, 60, "the hub accepts every publish");
    let c = stats.counts;
    let want = total * per_topic as u64;
    assert_eq!(
        (c.expected, c.delivered, c.received),
        (want, want, want),
        "{c:?}"
    );
    assert_no_delivery_fault(&c, "the fleet");
    assert_eq!(stats.e2e_from_start.len(), want);
    assert_eq!(
        stats.e2e_from_accepted.len() + c.before_accepted,
        want,
        "every delivery has an accepted → received sample or is counted before it"
    );
    // The hub's own distribution counters equal ours, in total and per topic.
    let d = hub_stats.distribution;
    assert_eq!(
        (d.published, d.delivered, d.retried, d.failed, d.dropped),
        (total, c.delivered, 0, 0, 0)
    );
    for (i, t) in w.topics().iter().enumerate() {
        let ours: u64 = (0..per_topic)
            .map(|s| stats.per_subscriber[&format!("{i}/{s}")].delivered)
            .sum();
        assert_eq!(
            hub_stats.topics[&*t.name].delivered, ours,
            "topic {}",
            t.name
        );
        assert_eq!(ours, accepted[i] * per_topic as u64);
    }

    let settings = PhaseSettings {
        hub_url: hub.url(),
        connect_to: None,
        headers: Default::default(),
        concurrency: 4,
        timeout: Duration::from_secs(10),
        http2: false,
    };
    let n = (w.topics().len() * per_topic) as u64;
    let gone = fleet
        .unsubscribe(&settings, &CancellationToken::new())
        .await;
    assert_eq!(
        (
            gone.requested,
            gone.accepted,
            gone.verified,
            gone.unverified
        ),
        (n, n, n, 0),
        "{gone:?}"
    );
    let left = hub
        .stats_when(|s| s.topics.values().all(|t| t.subscribers == 0))
        .await;
    assert!(left.topics.values().all(|t| t.subscribers == 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_subscriber_per_topic_gets_every_event_once() {
    delivers_exactly_once(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_subscribers_per_topic_get_every_event_once() {
    delivers_exactly_once(3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_subscriber_sees_the_hubs_retries_as_redeliveries() {
    let hub = Hub::start().await;
    let w = workload();
    let every3 = Behaviour {
        fail_every: 3,
        ..Behaviour::default()
    };
    let fleet = fleet(&w, 1, every3).await;
    let (stats, accepted, hub_stats) = one_level(&hub, &w, &fleet, 1, 45).await;
    let total: u64 = accepted.iter().sum();
    let c = stats.counts;
    let d = hub_stats.distribution;
    assert!(
        d.retried > 0,
        "every 3rd delivery failed, so the hub retried"
    );
    assert_eq!(
        (c.redeliveries, c.answered_error),
        (d.retried, d.retried),
        "{c:?} {d:?}"
    );
    assert_eq!((c.delivered, c.lost, c.duplicates), (total, 0, 0), "{c:?}");
    assert_eq!(c.received, total + d.retried);
    assert_eq!((d.delivered, d.failed, d.dropped), (total, 0, 0));
}

#[tokio::test]
async fn hand_made_deliveries_are_classified() {
    let w = workload();
    let fleet = fleet(&w, 1, Behaviour::default()).await;
    let addr = fleet.local_addr().to_string();
    let hub = stand_in_hub(false).await;
    let settings = PhaseSettings {
        hub_url: format!("http://{hub}/hub").parse().unwrap(),
        connect_to: None,
        headers: Default::default(),
        concurrency: 2,
        timeout: Duration::from_secs(10),
        http2: false,
    };
    let n = w.topics().len() as u64;
    assert_eq!(
        fleet
            .subscribe(&settings, &CancellationToken::new())
            .await
            .verified,
        n
    );
    fleet.open_level(100);
    let e = w.event_at(100, now_us());
    fleet
        .tracker()
        .note_published(100, e.topic, std::time::Instant::now());
    fleet
        .tracker()
        .note_accepted(100, std::time::Instant::now());
    // Event 101 of the same topic is accepted but never delivered: lost once the grace is over.
    let e101 = (101..).find(|s| w.topic_of_seq(*s) == e.topic).unwrap();
    fleet
        .tracker()
        .note_published(e101, e.topic, std::time::Instant::now());
    fleet
        .tracker()
        .note_accepted(e101, std::time::Instant::now());
    let post = |topic: usize, body: Vec<u8>, sig: String| {
        let addr = addr.clone();
        async move {
            let head = format!("POST /cb/{topic}/0 HTTP/1.1\r\nX-Hub-Signature: {sig}");
            request(&addr, &head, &body).await.0
        }
    };
    let good = sign(&e.body, SECRET);
    assert_eq!(post(e.topic, e.body.to_vec(), good.clone()).await, 200);
    assert_eq!(
        post(e.topic, e.body.to_vec(), good.clone()).await,
        200,
        "duplicate"
    );
    assert_eq!(
        post(e.topic, e.body.to_vec(), sign(&e.body, "other")).await,
        200,
        "bad signature is acknowledged"
    );
    let stranger = br#"{"jti":"not ours"}"#.to_vec();
    assert_eq!(
        post(e.topic, stranger.clone(), sign(&stranger, SECRET)).await,
        200
    );
    let other_topic = (e.topic + 1) % w.topics().len();
    assert_eq!(
        post(other_topic, e.body.to_vec(), good).await,
        200,
        "wrong topic"
    );
    assert_eq!(
        post(99, e.body.to_vec(), String::new()).await,
        404,
        "no such subscriber"
    );
    // Challenges nobody asked for are not echoed: an unsubscribe never requested, another topic.
    for q in [
        format!("hub.mode=unsubscribe&hub.topic={}", w.topics()[0].name),
        format!("hub.mode=subscribe&hub.topic={}", w.topics()[1].name),
    ] {
        let get = format!("GET /cb/0/0?{q}&hub.challenge=abc HTTP/1.1");
        assert_eq!(request(&addr, &get, b"").await.0, 404, "{q}");
    }
    let closing = Instant::now();
    let stats = fleet.close_level(Duration::from_millis(300)).await;
    assert!(
        closing.elapsed() >= Duration::from_millis(300),
        "waited out the grace"
    );
    let c = stats.counts;
    assert_eq!(
        (
            c.received,
            c.delivered,
            c.duplicates,
            c.bad_signature,
            c.unexpected,
            c.lost
        ),
        (5, 1, 1, 1, 2, 1),
        "{c:?}"
    );
    assert_eq!(c.expected, 2);
    // After the close, an event of the closed level is late.
    let late = post(e.topic, e.body.to_vec(), sign(&e.body, SECRET)).await;
    assert_eq!(late, 200);
    fleet.open_level(1_000);
    assert_eq!(fleet.close_level(Duration::ZERO).await.counts.late, 1);
    assert_eq!(
        stats.per_subscriber[&format!("{other_topic}/0")].unexpected,
        1
    );
}

#[tokio::test]
async fn the_topic_server_hands_out_each_event_once_in_order() {
    let w = workload();
    let ts = TopicServer::start(
        TopicServerConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            hub_url: "http://hub.example/hub".into(),
            topic_url_prefix: None,
            queue_cap: 8,
            deadlines: Default::default(),
        },
        w.clone(),
    )
    .await
    .unwrap();
    let addr = ts.local_addr().to_string();
    let (a, b) = (w.event_at(1, 5_000_000), w.event_at(2, 6_000_000));
    ts.note_published(0, 1, 5_000_000);
    ts.note_published(0, 2, 6_000_000);
    let url = ts.topic_url(0).unwrap();
    let path = url::Url::parse(&url).unwrap().path().to_owned();
    let get = |p: String| {
        let addr = addr.clone();
        async move { request(&addr, &format!("GET {p} HTTP/1.1"), b"").await }
    };
    let (s1, head, body1) = get(path.clone()).await;
    assert_eq!((s1, body1.as_slice()), (200, a.body.as_slice()));
    let head = head.to_ascii_lowercase();
    assert!(head.contains("content-type: application/json"), "{head}");
    let link = format!(
        "link: <http://hub.example/hub>; rel=\"hub\", <{}>; rel=\"self\"",
        url.to_ascii_lowercase()
    );
    assert!(head.contains(&link), "{head}");
    let (_, _, body2) = get(path.clone()).await;
    assert_eq!(body2, b.body.as_slice());
    let (_, _, body3) = get(path.clone()).await;
    assert_eq!(
        body3,
        b.body.as_slice(),
        "nothing pending: the latest again"
    );
    let empty = url::Url::parse(&ts.topic_url(1).unwrap())
        .unwrap()
        .path()
        .to_owned();
    assert_eq!(get(empty).await.0, 204);
    assert_eq!(get("/nope".into()).await.0, 404);
    let st = ts.take_stats();
    assert_eq!(
        (
            st.fetches,
            st.fetched_new,
            st.fetched_again,
            st.fetched_empty,
            st.unknown,
            st.overflowed
        ),
        (4, 2, 1, 1, 1, 0)
    );
    assert_eq!(
        st.by_topic,
        [3, 1],
        "per topic: 3 of topic 0, the empty one of topic 1"
    );
    assert_eq!(ts.take_stats().fetches, 0, "taken per level");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_leaves_is_removed_by_the_hub() {
    let hub = Hub::start().await;
    let w = workload();
    let gone2 = Behaviour {
        gone_after: Some(2),
        ..Behaviour::default()
    };
    let fleet = fleet(&w, 1, gone2).await;
    let (stats, accepted, hub_stats) = one_level(&hub, &w, &fleet, 1, 40).await;
    let c = stats.counts;
    let d = hub_stats.distribution;
    let leaving = accepted.iter().filter(|a| **a > 2).count() as u64;
    assert!(leaving > 0, "{accepted:?}");
    assert_eq!(stats.gone_subscribers, leaving);
    // Every 410 is a delivery the hub counts failed (one per leaver while the hub has one
    // delivery in flight per subscriber; more may be in flight when it answers).
    assert_eq!(c.answered_gone, d.failed, "{c:?} {d:?}");
    assert!(c.answered_gone >= leaving);
    let kept: u64 = accepted.iter().map(|a| (*a).min(2)).sum();
    assert_eq!((c.delivered, d.delivered, c.lost), (kept, kept, 0), "{c:?}");
    let removed = hub_stats
        .topics
        .values()
        .filter(|t| t.subscribers == 0)
        .count() as u64;
    assert_eq!(removed, leaving);
}

#[tokio::test]
async fn a_refused_subscription_keeps_the_hubs_reason() {
    let hub = Hub::start().await;
    let w = workload();
    let fleet = fleet(&w, 1, Behaviour::default()).await;
    // Nothing registered: the reference hub refuses each subscription at once.
    let phase = fleet
        .subscribe(
            &PhaseSettings {
                hub_url: hub.url(),
                connect_to: None,
                headers: Default::default(),
                concurrency: 2,
                timeout: Duration::from_secs(5),
                http2: false,
            },
            &CancellationToken::new(),
        )
        .await;
    let n = w.topics().len() as u64;
    assert_eq!(
        (phase.requested, phase.accepted, phase.refused),
        (n, 0, n),
        "{phase:?}"
    );
    let err = phase.first_error.unwrap();
    assert!(
        err.starts_with("subscribe ") && err.contains("HTTP 404"),
        "{err}"
    );
    assert!(err.contains("is not registered with the Hub"), "{err}");
    assert!(!err.contains(SECRET), "{err}");
    assert_eq!(hub.stats().await.subscribe.denied, n);
}

#[tokio::test]
async fn a_denial_is_recorded() {
    let w = workload();
    let fleet = fleet(&w, 2, Behaviour::default()).await;
    let hub = stand_in_hub(true).await;
    let phase = fleet
        .subscribe(
            &PhaseSettings {
                hub_url: format!("http://{hub}/hub").parse().unwrap(),
                connect_to: None,
                headers: Default::default(),
                concurrency: 3,
                timeout: Duration::from_secs(10),
                http2: false,
            },
            &CancellationToken::new(),
        )
        .await;
    let n = (w.topics().len() * 2) as u64;
    assert_eq!(
        (
            phase.requested,
            phase.accepted,
            phase.denied,
            phase.verified,
            phase.unverified
        ),
        (n, n, n, 0, 0),
        "{phase:?}"
    );
    // A denied subscriber expects nothing: an accepted event is not lost for it.
    fleet.open_level(0);
    let t = fleet.tracker();
    t.note_published(0, w.topic_of_seq(0), std::time::Instant::now());
    t.note_accepted(0, std::time::Instant::now());
    let s = fleet.close_level(Duration::ZERO).await;
    assert_eq!(
        (s.unverified_subscribers, s.counts.expected, s.counts.lost),
        (n, 0, 0)
    );
}
