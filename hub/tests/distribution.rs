//! Distribution: 410 removal, retries, queue overflow in messages and bytes, concurrent
//! deliveries, lease expiry, and a publish path that never waits.

use std::time::{Duration, Instant};

use hubload_hub::{HubConfig, RetryPolicy};

use crate::util::{eventually, hub_with_subscriber, subscribe, subscribers, Subscriber, TestHub};

const JSON: &str = "application/json";

/// Publish `body` to "t" and check, from the hub's own counts at the moment it answered,
/// that the publish was accepted and offered to no subscriber (the fan-out happens before
/// the answer, so nothing can be offered later): no delivery is pending and the attempts
/// stay at `attempts`.
async fn publish_to_nobody(hub: &TestHub, attempts: u64) {
    let before = hub.state.stats().distribution;
    assert_eq!(hub.publish("t", JSON, b"{}").await.0, 200);
    let d = hub.state.stats().distribution;
    assert_eq!(d.published, before.published + 1);
    let ends = |d: &hubload_hub::DistributionStats| d.delivered + d.failed + d.dropped + d.pending;
    assert_eq!(
        ends(&d),
        ends(&before),
        "the publish was offered to someone"
    );
    assert_eq!((d.pending, d.attempts), (0, attempts));
}

fn fast_retries(max_attempts: u32) -> HubConfig {
    HubConfig {
        retry: RetryPolicy {
            max_attempts,
            initial_backoff: Duration::from_millis(20),
            max_backoff: Duration::from_millis(40),
        },
        ..HubConfig::default()
    }
}

#[tokio::test]
async fn gone_410_removes_the_subscription() {
    let (hub, sub) = hub_with_subscriber(fast_retries(5)).await;
    subscribe(&hub, "t", &sub.callback("cb"), &[]).await;
    sub.answer(&[410]);
    assert_eq!(hub.publish("t", JSON, b"{}").await.0, 200);
    eventually("removal", || subscribers(&hub, "t") == 0).await;
    publish_to_nobody(&hub, 1).await;
    assert_eq!(sub.arrived(), 1);
    let s = hub.stats().await;
    let t = s.topics["t"];
    assert_eq!(
        (t.published, t.delivered, t.failed, t.retried),
        (2, 0, 1, 0)
    );
    let d = &s.distribution;
    assert_eq!((d.pending, d.gone_removed, d.attempts), (0, 1, 1));
    assert_eq!(d.failed_attempts.get("410"), Some(&1));
    hub.stop().await;
}

#[tokio::test]
async fn failures_are_retried_then_delivered_or_given_up() {
    let (hub, sub) = hub_with_subscriber(fast_retries(3)).await;
    subscribe(&hub, "t", &sub.callback("cb"), &[]).await;
    // two failures, then success: delivered after 2 retries
    sub.answer(&[500, 503]);
    assert_eq!(hub.publish("t", JSON, b"1").await.0, 200);
    eventually("delivery", || sub.delivered() == 1).await;
    // three failures: given up after the third attempt
    sub.answer(&[500, 404, 502]);
    assert_eq!(hub.publish("t", JSON, b"2").await.0, 200);
    eventually("failure counted", || {
        hub.state.stats().distribution.failed == 1
    })
    .await;
    let s = hub.stats().await;
    let d = s.distribution;
    assert_eq!(
        (d.published, d.delivered, d.retried, d.failed, d.pending),
        (2, 1, 4, 1, 0)
    );
    assert_eq!(d.attempts, 6);
    let by_status: Vec<_> = d
        .failed_attempts
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(by_status, [("404", 1), ("500", 2), ("502", 1), ("503", 1)]);
    assert_eq!(d.gone_removed, 0);
    assert_eq!(sub.arrived(), 6);
    assert_eq!(
        subscribers(&hub, "t"),
        1,
        "a failure does not end the subscription"
    );
    hub.stop().await;
}

#[tokio::test]
async fn queue_overflow_is_counted_and_publish_never_waits() {
    let (hub, slow) = hub_with_subscriber(HubConfig {
        queue_size: 2,
        delivery_concurrency: 1,
        ..HubConfig::default()
    })
    .await;
    let fast = Subscriber::start().await;
    subscribe(&hub, "t", &slow.callback("slow"), &[]).await;
    subscribe(&hub, "t", &fast.callback("fast"), &[]).await;
    eventually("two subscribers", || subscribers(&hub, "t") == 2).await;
    slow.hold(true);
    assert_eq!(hub.publish("t", JSON, b"0").await.0, 200);
    eventually("the first delivery in flight", || slow.arrived() == 1).await;
    // 9 more while the slow subscriber holds: 2 fit its queue, 7 are dropped
    let t = Instant::now();
    for i in 1..10 {
        assert_eq!(
            hub.publish("t", JSON, format!("{i}").as_bytes()).await.0,
            200
        );
    }
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "publish waited on delivery"
    );
    eventually("the fast subscriber got all 10", || fast.delivered() == 10).await;
    // (the hub counts a delivery when the subscriber's answer comes back)
    eventually("10 counted delivered", || {
        hub.state.stats().distribution.delivered == 10
    })
    .await;
    let s = hub.state.stats();
    assert_eq!(s.distribution.dropped, 7);
    assert_eq!(s.distribution.dropped_queue_full, 7);
    assert_eq!(s.distribution.pending, 3);
    // the slow subscriber holds 3 one-byte bodies; the hub holds each body once
    assert_eq!(s.distribution.queued_bytes, 3);
    assert_eq!(s.distribution.memory_bytes, 3);
    slow.hold(false);
    eventually("the slow subscriber got 3", || slow.delivered() == 3).await;
    eventually("nothing pending", || {
        hub.state.stats().distribution.pending == 0
    })
    .await;
    let bodies: Vec<_> = slow.deliveries().iter().map(|d| d.body.clone()).collect();
    assert_eq!(bodies, ["0", "1", "2"]);
    let s = hub.stats().await;
    let d = s.distribution;
    // every fanned-out delivery is accounted for: 2 subscribers × 10 publishes
    assert_eq!(d.delivered + d.failed + d.dropped + d.pending, 20);
    assert_eq!((d.published, d.delivered, d.dropped), (10, 13, 7));
    assert_eq!((d.queued_bytes, d.memory_bytes), (0, 0));
    assert_eq!(s.topics["t"].dropped, 7);
    hub.stop().await;
}

#[tokio::test]
async fn several_deliveries_in_flight_then_the_byte_budget() {
    // 4 in flight per subscriber; 10-byte bodies; 45 bytes per subscriber: 4 in flight
    // and none queued fit (40), the 5th does not (50 > 45)
    let (hub, sub) = hub_with_subscriber(HubConfig {
        delivery_concurrency: 4,
        max_queue_bytes: 45,
        ..HubConfig::default()
    })
    .await;
    subscribe(&hub, "t", &sub.callback("cb"), &[]).await;
    sub.hold(true);
    for i in 0..4 {
        assert_eq!(
            hub.publish("t", JSON, format!("{i:010}").as_bytes())
                .await
                .0,
            200
        );
    }
    eventually("4 deliveries in flight at once", || sub.arrived() == 4).await;
    for i in 4..7 {
        assert_eq!(
            hub.publish("t", JSON, format!("{i:010}").as_bytes())
                .await
                .0,
            200
        );
    }
    let d = hub.state.stats().distribution;
    assert_eq!((d.pending, d.dropped, d.dropped_queue_bytes), (4, 3, 3));
    assert_eq!((d.queued_bytes, d.memory_bytes, d.attempts), (40, 40, 4));
    sub.hold(false);
    eventually("4 delivered", || {
        hub.state.stats().distribution.delivered == 4
    })
    .await;
    let mut bodies: Vec<_> = sub.deliveries().iter().map(|d| d.body.clone()).collect();
    bodies.sort();
    assert_eq!(
        bodies,
        ["0000000000", "0000000001", "0000000002", "0000000003"]
    );
    let d = hub.stats().await.distribution;
    assert_eq!((d.pending, d.queued_bytes, d.memory_bytes), (0, 0, 0));
    hub.stop().await;
}

#[tokio::test]
async fn a_publish_over_the_memory_budget_gets_503() {
    // two subscribers share each 10-byte body: the hub holds it once (10), each subscriber
    // its full share; 25 bytes of memory fit two publishes, not a third
    let (hub, a) = hub_with_subscriber(HubConfig {
        max_memory_bytes: 25,
        ..HubConfig::default()
    })
    .await;
    let b = Subscriber::start().await;
    subscribe(&hub, "t", &a.callback("a"), &[]).await;
    subscribe(&hub, "t", &b.callback("b"), &[]).await;
    eventually("two subscribers", || subscribers(&hub, "t") == 2).await;
    a.hold(true);
    b.hold(true);
    for i in 0..2 {
        assert_eq!(
            hub.publish("t", JSON, format!("{i:010}").as_bytes())
                .await
                .0,
            200
        );
    }
    let (status, body) = hub.publish("t", JSON, b"0000000002").await;
    assert_eq!(status, 503, "{body}");
    let s = hub.state.stats();
    assert_eq!((s.publish.accepted, s.publish.over_memory), (2, 1));
    let d = &s.distribution;
    assert_eq!((d.published, d.pending, d.dropped), (2, 4, 0));
    assert_eq!(
        (d.memory_bytes, d.queued_bytes, d.memory_limit),
        (20, 40, 25)
    );
    a.hold(false);
    b.hold(false);
    eventually("4 delivered", || {
        hub.state.stats().distribution.delivered == 4
    })
    .await;
    assert_eq!(hub.state.stats().distribution.memory_bytes, 0);
    assert_eq!(hub.publish("t", JSON, b"0000000002").await.0, 200);
    hub.stop().await;
}

#[tokio::test]
async fn an_expired_lease_ends_delivery() {
    let (hub, sub) = hub_with_subscriber(HubConfig::default()).await;
    subscribe(
        &hub,
        "t",
        &sub.callback("cb"),
        &[("hub.lease_seconds", "1")],
    )
    .await;
    assert_eq!(hub.publish("t", JSON, b"{}").await.0, 200);
    eventually("first delivery", || sub.delivered() == 1).await;
    eventually("the lease to end", || subscribers(&hub, "t") == 0).await;
    publish_to_nobody(&hub, 1).await;
    assert_eq!(sub.arrived(), 1);
    hub.stop().await;
}

#[tokio::test]
async fn lease_is_capped_at_the_maximum() {
    let (hub, sub) = hub_with_subscriber(HubConfig {
        lease_max: Duration::from_secs(60),
        ..HubConfig::default()
    })
    .await;
    subscribe(
        &hub,
        "t",
        &sub.callback("cb"),
        &[("hub.lease_seconds", "99999")],
    )
    .await;
    let v = sub.verifications();
    assert!(v[0].contains(&("hub.lease_seconds".into(), "60".into())));
    hub.stop().await;
}

#[tokio::test]
async fn deregister_ends_subscriptions() {
    let (hub, sub) = hub_with_subscriber(HubConfig::default()).await;
    subscribe(&hub, "t", &sub.callback("cb"), &[]).await;
    assert_eq!(
        hub.form(&[("hub.mode", "deregister"), ("hub.topic", "t")])
            .await
            .0,
        200
    );
    assert_eq!(subscribers(&hub, "t"), 0);
    hub.register("t").await;
    publish_to_nobody(&hub, 0).await;
    assert_eq!(sub.arrived(), 0);
    hub.stop().await;
}
