//! End-to-end delivery in real runs against the reference hub: every accepted publish reaches
//! every subscriber exactly once and the hub's `/stats` agree; a small hub queue and failing
//! subscribers make hubload's lost and redeliveries equal the hub's drops and retries, and
//! `lost=0` fails the run.

use hubload::report::document::Report;
use hubload_hub::HubConfig;

use crate::util::{assert_no_delivery_fault, count, line, settled, Scenario, SMALL_RUN};

fn flags<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = line(SMALL_RUN);
    v.extend_from_slice(extra);
    v
}

/// Sum of a per-level delivery counter.
pub(crate) fn sum(r: &Report, f: impl Fn(&hubload::subscriber::DeliveryCounts) -> u64) -> u64 {
    r.levels
        .iter()
        .map(|l| f(&l.delivery.as_ref().expect("a delivery section").counts))
        .sum()
}

async fn exactly_once(per_topic: usize) {
    // One delivery in flight per subscriber, so the order check is meaningful too.
    let sc = Scenario::start_with(HubConfig {
        delivery_concurrency: 1,
        ..HubConfig::default()
    })
    .await;
    let n = per_topic.to_string();
    let o = sc.run(&flags(&["--subscribers", &n])).await;
    let hub = settled(&sc.hub).await;
    let r = &o.report;
    let topics = r.topics.len() as u64;
    let subs = topics * per_topic as u64;
    let p = r.subscription.as_ref().expect("a subscription section");
    assert_eq!(
        (p.requested, p.accepted, p.verified, p.denied, p.unverified),
        (subs, subs, subs, 0, 0),
        "{p:?}"
    );
    assert_eq!(r.levels.len(), 2);
    for l in &r.levels {
        let d = l.delivery.as_ref().unwrap();
        let c = &d.counts;
        let accepted = count(l, "accepted");
        assert_eq!(accepted, 60, "level {}", l.label);
        assert_eq!(
            c.delivered,
            accepted * per_topic as u64,
            "level {}: {c:?}",
            l.label
        );
        assert_eq!(c.expected, c.delivered);
        assert_no_delivery_fault(c, &format!("level {}", l.label));
        assert_eq!(c.out_of_order, 0, "one delivery in flight keeps the order");
        assert_eq!(c.received, c.delivered);
        assert!(d.e2e_us.max > 0, "every delivery has an e2e sample");
        // The backlog chart's series: every delivery and every owed delivery in some second.
        let ps = d.per_second.as_ref().expect("a per-second series");
        let total = |v: &[u64]| v.iter().sum::<u64>();
        assert_eq!(
            (total(&ps.expected), total(&ps.delivered)),
            (c.expected, c.delivered)
        );
        assert_eq!(ps.backlog().last(), Some(&0), "nothing owed at the end");
    }
    assert!(r
        .total
        .as_ref()
        .unwrap()
        .delivery
        .as_ref()
        .unwrap()
        .per_second
        .is_none());
    let html = std::fs::read_to_string(sc.dir.path().join("report.html")).unwrap();
    assert!(html.contains("id=\"chart-e2e-latency\"") && html.contains("id=\"chart-backlog\""));
    // The hub's own distribution counters equal hubload's.
    let delivered = sum(r, |c| c.delivered);
    let dist = &hub.distribution;
    assert_eq!(
        (
            dist.published,
            dist.delivered,
            dist.retried,
            dist.dropped,
            dist.failed
        ),
        (120, delivered, 0, 0, 0)
    );
    let u = r.unsubscription.as_ref().expect("unsubscribed at the end");
    assert_eq!((u.requested, u.verified), (subs, subs), "{u:?}");
    // delivery.csv: a header, one row per level, then TOTAL (the levels summed; the hub's own
    // delivered count).
    let csv = std::fs::read_to_string(sc.dir.path().join("delivery.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 4, "{csv}");
    assert!(
        rows[1].starts_with(&format!("2,{},0,0,0,0,0,0,", 60 * per_topic)),
        "{csv}"
    );
    assert!(
        rows[3].starts_with(&format!(
            "TOTAL,{},0,0,0,0,0,0,",
            hub.distribution.delivered
        )),
        "{csv}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_subscriber_per_topic_receives_every_accepted_publish_once() {
    exactly_once(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_subscribers_per_topic_receive_every_accepted_publish_once() {
    exactly_once(3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_without_subscribers_has_no_delivery_section() {
    let sc = Scenario::start_with(HubConfig::default()).await;
    let o = sc.run(&line(SMALL_RUN)).await;
    assert!(o.report.subscription.is_none());
    assert!(o.report.levels.iter().all(|l| l.delivery.is_none()));
    assert!(!sc.dir.path().join("delivery.csv").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_subscribers_see_the_hubs_retries_as_redeliveries() {
    let sc = Scenario::start_with(HubConfig {
        delivery_concurrency: 1,
        ..HubConfig::default()
    })
    .await;
    let o = sc
        .run(&flags(&line("--subscribers 1 --subscriber-fail-every 3")))
        .await;
    let hub = settled(&sc.hub).await;
    let r = &o.report;
    let d = &hub.distribution;
    assert!(d.retried > 0, "every 3rd delivery failed: {d:?}");
    assert_eq!(sum(r, |c| c.redeliveries), d.retried, "{d:?}");
    assert_eq!(sum(r, |c| c.answered_error), d.retried);
    assert_eq!(sum(r, |c| c.delivered), d.delivered);
    assert_eq!((sum(r, |c| c.lost), sum(r, |c| c.duplicates)), (0, 0));
    assert_eq!((d.failed, d.dropped), (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_overflow_drops_are_lost_exactly_and_fail_lost_zero() {
    // A queue of one per subscriber and slow subscribers: the hub drops deliveries.
    let sc = Scenario::start_with(HubConfig {
        delivery_concurrency: 1,
        queue_size: 1,
        ..HubConfig::default()
    })
    .await;
    let o = sc
        .run(&flags(&line(
            "--subscribers 1 --subscriber-latency 20ms --delivery-grace 2s --threshold lost=0",
        )))
        .await;
    let hub = settled(&sc.hub).await;
    let r = &o.report;
    let d = &hub.distribution;
    assert!(d.dropped > 0, "the queue overflowed: {d:?}");
    assert_eq!(sum(r, |c| c.lost), d.dropped, "{d:?}");
    assert_eq!(sum(r, |c| c.delivered), d.delivered);
    assert_eq!(d.failed, 0);
    assert!(
        o.thresholds_failed,
        "lost=0 fails when deliveries were dropped"
    );
}
