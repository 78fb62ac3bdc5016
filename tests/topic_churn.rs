//! Topic churn against the reference hub (`--topic-churn`): topics are deregistered and
//! registered again while the load runs; the hub's own counts of registrations,
//! deregistrations and refused publishes equal hubload's exactly, refusals inside a window are
//! `expected_refusal` (no error), and with subscribers delivery still reconciles.

use hubload_hub::HubConfig;

use crate::delivery::sum;
use crate::util::{count, Scenario, SMALL_WORKLOAD};

/// Sum of a per-level topic churn counter.
fn churn_sum(
    r: &hubload::report::document::Report,
    f: impl Fn(&hubload::stats::TopicChurnStats) -> u64,
) -> u64 {
    r.levels
        .iter()
        .map(|l| f(l.topic_churn.as_ref().expect("a topic_churn section")))
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_in_a_window_are_expected_and_the_hub_counts_the_same() {
    let sc = Scenario::start_with(HubConfig::default()).await;
    let (o, hub) = sc
        .run_settled(&format!(
            "{SMALL_WORKLOAD} --topic-churn 10 --rate 200,400 --duration 2s --threshold errors=0"
        ))
        .await;
    let r = &o.report;
    assert_eq!(r.levels.len(), 2);
    for l in &r.levels {
        let tc = l.topic_churn.as_ref().expect("a topic_churn section");
        eprintln!("{}: {tc:?} counts {:?}", l.label, l.stats.counts);
        assert!(tc.cycles > 0 && tc.failed == 0, "{}: {tc:?}", l.label);
        assert_eq!(tc.cycles, tc.deregistered, "{tc:?}");
        assert_eq!(tc.cycles, tc.reregistered, "{tc:?}");
        assert_eq!(tc.expected_refusals, count(l, "expected_refusal"));
        // Every refusal fell in a window: none is left as the hub's error.
        assert_eq!(
            count(l, "denied") + count(l, "http_4xx"),
            0,
            "{:?}",
            l.stats.counts
        );
        assert_eq!(l.derived.error_pct, 0.0, "{}", l.label);
        assert_eq!(
            l.derived.samples,
            count(l, "accepted") + tc.expected_refusals
        );
        // No first failure of a class the level did not count.
        assert!(l.first_failures.is_empty(), "{:?}", l.first_failures);
    }
    let refused = churn_sum(r, |t| t.expected_refusals);
    assert!(refused > 0, "no publish met a deregistered topic");
    // The hub's own counts, exactly.
    let initial = r.registration.as_ref().expect("registration").accepted;
    assert_eq!(
        hub.register.accepted,
        initial + churn_sum(r, |t| t.reregistered)
    );
    assert_eq!(hub.deregister.accepted, churn_sum(r, |t| t.deregistered));
    assert_eq!(hub.publish.denied, refused, "{:?}", hub.publish);
    let accepted: u64 = r.levels.iter().map(|l| count(l, "accepted")).sum();
    assert_eq!(hub.publish.accepted, accepted, "{:?}", hub.publish);
    // errors=0 judged per level (expected refusals are no error) and TOTAL's error % is 0.
    assert!(r.verdicts.iter().all(|v| v.passed), "{:?}", r.verdicts);
    let total = r.total.as_ref().unwrap();
    assert_eq!(count(total, "expected_refusal"), refused);
    assert_eq!(total.derived.error_pct, 0.0);
    // The class is a column of aggregate.csv.
    let csv = std::fs::read_to_string(sc.dir.path().join("aggregate.csv")).unwrap();
    assert!(
        csv.lines().next().unwrap().contains("Expected refusals"),
        "{csv}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribers_of_churned_topics_come_back_and_delivery_reconciles() {
    let sc = Scenario::start_with(HubConfig::default()).await;
    let (o, hub) = sc
        .run_settled(&format!(
            "{SMALL_WORKLOAD} --subscribers 2 --topic-churn 10 --rate 200 --duration 2s"
        ))
        .await;
    let r = &o.report;
    let l = &r.levels[0];
    let tc = l.topic_churn.as_ref().expect("a topic_churn section");
    let d = l.delivery.as_ref().expect("a delivery section");
    let c = &d.counts;
    eprintln!("{tc:?}\n{c:?}\n{:?}\nhub: {:?}", d.churn, hub.distribution);
    assert!(tc.cycles > 0 && tc.failed == 0, "{tc:?}");
    // The reference hub ends a deregistered topic's subscriptions: each of its two
    // subscribers subscribed again after every re-registration, verified.
    assert_eq!(tc.resubscribed, 2 * tc.reregistered, "{tc:?}");
    assert_eq!(tc.resubscribe_failed, 0, "{tc:?}");
    assert_eq!(hub.publish.denied, tc.expected_refusals);
    let dist = &hub.distribution;
    // Nothing owed is lost, nothing foreign, nothing twice: the hub still delivers what a
    // deregistered topic's subscriptions had queued, and drops nothing.
    assert_eq!(
        (
            c.lost,
            c.duplicates,
            c.bad_signature,
            c.body_mismatch,
            c.unexpected,
            c.not_yet_delivered
        ),
        (0, 0, 0, 0, 0, 0),
        "{c:?}"
    );
    assert_eq!(dist.dropped, 0, "{dist:?}");
    // Delivery reconciles with the hub's own delivered count.
    assert_eq!(dist.failed, 0, "{dist:?}");
    assert_eq!(dist.delivered, sum(r, |c| c.received), "{dist:?}");
    assert_eq!(dist.delivered, sum(r, |c| c.delivered), "{dist:?}");
}
