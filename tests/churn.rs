//! Subscription churn against the reference hub, in the open model: subscribers unsubscribe and
//! subscribe again while the load runs; nothing an active subscription was owed is lost or
//! duplicated, and the hub's own delivered count equals what hubload's subscribers received.

use hubload_hub::HubConfig;

use crate::delivery::sum;
use crate::util::{Scenario, SMALL_WORKLOAD};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn churning_subscribers_lose_nothing_owed_and_the_hub_agrees() {
    let sc = Scenario::start_with(HubConfig::default()).await;
    let (o, hub) = sc
        .run_settled(&format!(
            "{SMALL_WORKLOAD} --subscribers 3 --subscriber-churn 20 --rate 150,300 \
             --duration 2s --threshold time_to_first_delivery_p99<60s --threshold \
             lost=0"
        ))
        .await;
    let r = &o.report;
    assert_eq!(r.levels.len(), 2);
    let mut resubscribed = 0;
    for l in &r.levels {
        let d = l.delivery.as_ref().expect("a delivery section");
        let c = &d.counts;
        let ch = d.churn.as_ref().expect("a churn section");
        eprintln!("{}: {ch:?}\n  counts: {c:?}", l.label);
        assert!(ch.stats.resubscribed > 0, "{}: {ch:?}", l.label);
        assert_eq!(
            ch.stats.unsubscribed, ch.stats.resubscribed,
            "{}: {ch:?}",
            l.label
        );
        assert_eq!(ch.stats.failed, 0, "{}: {ch:?}", l.label);
        assert!(
            ch.derived.time_to_first_delivery_us.p99 > 0 && ch.derived.subscribe_latency_us.p99 > 0,
            "{}: {ch:?}",
            l.label
        );
        assert!(
            ch.derived.time_to_first_delivery_us.p99 <= ch.derived.time_to_first_delivery_us.max,
            "{ch:?}"
        );
        // Nothing owed to an active subscription is lost or duplicated; nothing foreign.
        assert_eq!(
            (
                c.lost,
                c.not_yet_delivered,
                c.duplicates,
                c.bad_signature,
                c.body_mismatch,
                c.unexpected
            ),
            (0, 0, 0, 0, 0, 0),
            "{}: {c:?} {ch:?}\nhub: {:?}",
            l.label,
            hub.distribution
        );
        resubscribed += ch.stats.resubscribed;
    }
    // The hub's own counts: every delivery it made (2xx) is one hubload received, and every
    // POST hubload received is one the hub counted delivered.
    let dist = &hub.distribution;
    eprintln!("hub: {dist:?}");
    assert_eq!(dist.failed, 0, "{dist:?}");
    // And it dropped nothing: what a subscription had queued when it was unsubscribed is
    // still delivered (owed: accepted before the unsubscribe request).
    assert_eq!(dist.dropped, 0, "{dist:?}");
    assert_eq!(dist.delivered, sum(r, |c| c.received), "{dist:?}");
    assert_eq!(dist.delivered, sum(r, |c| c.delivered), "{dist:?}");
    assert!(resubscribed > 0);
    // Both rules judged per level on the churn section, and met.
    assert_eq!(r.verdicts.len(), 4, "{:?}", r.verdicts);
    assert!(r.verdicts.iter().all(|v| v.passed), "{:?}", r.verdicts);
    let ttfd = &r.verdicts[0];
    let churn0 = r.levels[0]
        .delivery
        .as_ref()
        .unwrap()
        .churn
        .as_ref()
        .unwrap();
    assert_eq!(
        ttfd.actual,
        format!(
            "{:.3}ms",
            churn0.derived.time_to_first_delivery_us.p99 as f64 / 1000.0
        )
    );
    // Per second, the churn events add up to the level's counts; report.html draws them on
    // the delivery timeline.
    for l in &r.levels {
        let ch = l.delivery.as_ref().unwrap().churn.as_ref().unwrap();
        let ps = &ch.stats.per_second;
        assert!(!ps.is_empty(), "churn per second");
        let total = |v: &[u64]| v.iter().sum::<u64>();
        assert_eq!(
            (total(&ps.unsubscribed), total(&ps.resubscribed)),
            (ch.stats.unsubscribed, ch.stats.resubscribed)
        );
    }
    let html = std::fs::read_to_string(sc.dir.path().join("report.html")).unwrap();
    assert!(html.contains("re-subscribed/s (churn)"));
    // The TOTAL row carries the churn of both levels.
    let total = r.total.as_ref().unwrap().delivery.as_ref().unwrap();
    assert_eq!(
        total.churn.as_ref().unwrap().stats.resubscribed,
        resubscribed
    );
}
