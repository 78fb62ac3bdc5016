//! Distribution: 410 removal, retries, queue overflow, lease expiry, and a publish path that never waits.

use std::time::{Duration, Instant};

use hubload_hub::{HubConfig, RetryPolicy};

use crate::util::{eventually, hub_with_subscriber, subscribe, subscribers, Subscriber};

const JSON: &str = "application/json";

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
    assert_eq!(hub.publish("t", JSON, b"{}").await.0, 200);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(sub.arrived(), 1);
    let s = hub.stats().await;
    let t = s.topics["t"];
    assert_eq!(
        (t.published, t.delivered, t.failed, t.retried),
        (2, 0, 1, 0)
    );
    assert_eq!(s.distribution.pending, 0);
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
    assert_eq!(s.distribution.pending, 3);
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
    assert_eq!(s.topics["t"].dropped, 7);
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
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(subscribers(&hub, "t"), 0);
    assert_eq!(hub.publish("t", JSON, b"{}").await.0, 200);
    tokio::time::sleep(Duration::from_millis(100)).await;
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
    assert_eq!(hub.publish("t", JSON, b"{}").await.0, 200);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(sub.arrived(), 0);
    hub.stop().await;
}
