//! hubload's broker subscribers (`--target servicebus --subscribers N`) against the emulator:
//! N peek-lock receivers per topic on subscriptions `hubload-<i>`, every accepted send
//! delivered to each exactly once and completed, the delivery section reconciled exactly with
//! the emulator's own per-subscription counts.

use hubload_servicebus::emulator::store::EntityProps;
use hubload_servicebus::emulator::EmulatorConfig;

use crate::util::{count, line, Scenario, SMALL_RUN};

/// The small run with 2 broker subscribers per topic.
fn run_flags() -> Vec<&'static str> {
    [line(SMALL_RUN), line("--target servicebus --subscribers 2")].concat()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_accepted_send_is_received_once_by_each_subscription_and_completed() {
    let sc = Scenario::servicebus(EmulatorConfig::default()).await;
    let o = sc.run(&run_flags()).await;
    let r = &o.report;
    let topics = r.topics.len() as u64;
    let p = r.subscription.as_ref().expect("a subscription section");
    assert_eq!((p.requested, p.verified), (topics * 2, topics * 2), "{p:?}");
    let mut accepted_all = 0;
    for l in &r.levels {
        let accepted = count(l, "accepted");
        assert_eq!(accepted, 60, "level {}", l.label);
        accepted_all += accepted;
        let c = &l.delivery.as_ref().expect("a delivery section").counts;
        // Two subscriptions per topic: each accepted send is owed, and delivered, twice.
        assert_eq!(
            (c.expected, c.delivered, c.received),
            (2 * accepted, 2 * accepted, 2 * accepted),
            "level {}: {c:?}",
            l.label
        );
        assert_eq!(
            (
                c.lost,
                c.duplicates,
                c.redeliveries,
                c.unexpected,
                c.body_mismatch,
                c.late
            ),
            (0, 0, 0, 0, 0, 0),
            "level {}: {c:?}",
            l.label
        );
    }
    // The emulator's side: what hubload sent, and per subscription what it received and
    // completed, nothing left.
    let e = sc.emulator_counts();
    assert_eq!(e.accepted, accepted_all);
    let subs: Vec<_> = e
        .entities
        .iter()
        .filter(|(path, _)| path.contains("/Subscriptions/hubload-"))
        .collect();
    assert_eq!(subs.len() as u64, topics * 2, "{:?}", e.entities.keys());
    let (mut enqueued, mut completed) = (0, 0);
    for (path, s) in &subs {
        assert_eq!(
            (
                s.enqueued,
                s.delivered,
                s.completed,
                s.active,
                s.redelivered
            ),
            (s.enqueued, s.enqueued, s.enqueued, 0, 0),
            "{path}: {s:?}"
        );
        enqueued += s.enqueued;
        completed += s.completed;
    }
    assert_eq!((enqueued, completed), (2 * accepted_all, 2 * accepted_all));
}

/// The broker subscribers need one Service Bus topic per workload topic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_service_bus_topic_is_refused_with_subscribers() {
    let sc = Scenario::servicebus(EmulatorConfig::default()).await;
    let mut flags = run_flags();
    flags.extend(["--sb-topics", "single:all"]);
    let err = sc.try_run(&flags).await.unwrap_err();
    assert!(
        format!("{err:#}").contains("--sb-topics per-topic"),
        "{err:#}"
    );
}

/// A subscriber answering 500 abandons the message: the broker delivers it again and the
/// second delivery is counted a redelivery, as a hub's retry is; the emulator's abandon and
/// redelivery counts are hubload's exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_answer_abandons_and_the_broker_delivers_again() {
    let sc = Scenario::servicebus(EmulatorConfig::default()).await;
    let mut flags = run_flags();
    flags.extend(["--subscriber-fail-every", "5"]);
    let o = sc.run(&flags).await;
    let (mut errors, mut redeliveries, mut accepted_all) = (0, 0, 0);
    for l in &o.report.levels {
        let accepted = count(l, "accepted");
        accepted_all += accepted;
        let c = &l.delivery.as_ref().expect("a delivery section").counts;
        assert_eq!(
            (c.delivered, c.lost, c.duplicates),
            (2 * accepted, 0, 0),
            "level {}: {c:?}",
            l.label
        );
        assert!(c.answered_error > 0, "level {}: {c:?}", l.label);
        // Each error answer brings exactly one more delivery of that message (refused again
        // or not), and every message was acknowledged in the end.
        assert_eq!(c.redeliveries, c.answered_error, "level {}: {c:?}", l.label);
        assert_eq!(c.received, c.delivered + c.answered_error, "{c:?}");
        errors += c.answered_error;
        redeliveries += c.redeliveries;
    }
    let e = sc.emulator_counts();
    let subs = e
        .entities
        .iter()
        .filter(|(path, _)| path.contains("/Subscriptions/hubload-"));
    let (mut abandoned, mut redelivered, mut completed) = (0, 0, 0);
    for (_, s) in subs {
        abandoned += s.abandoned;
        redelivered += s.redelivered;
        completed += s.completed;
    }
    assert_eq!(
        (abandoned, redelivered, completed),
        (errors, redeliveries, 2 * accepted_all)
    );
}

/// Messages the broker gives up on are read from each subscription's dead-letter sub-queue
/// and counted dead-lettered, with their reason, not lost: MaxDeliveryCount 2 and half the
/// deliveries answered 500 (abandoned), so a message refused twice goes to the sub-queue. The
/// emulator's own dead-letter, abandon and redelivery counts are hubload's exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_over_max_delivery_count_are_dead_lettered_not_lost() {
    let cfg = EmulatorConfig {
        entity_defaults: EntityProps {
            max_delivery_count: 2,
            ..EntityProps::default()
        },
        ..EmulatorConfig::default()
    };
    let sc = Scenario::servicebus(cfg).await;
    let mut flags = run_flags();
    flags.extend(["--subscriber-fail-fraction", "0.5"]);
    let o = sc.run(&flags).await;
    let (mut dead_all, mut errors, mut redeliveries, mut delivered_all) = (0, 0, 0, 0);
    let mut received = 0;
    for l in &o.report.levels {
        let accepted = count(l, "accepted");
        let d = l.delivery.as_ref().expect("a delivery section");
        let c = &d.counts;
        // Every owed delivery is delivered or dead-lettered; none is lost.
        assert_eq!(
            (c.expected, c.delivered + c.dead_lettered, c.lost, c.late),
            (2 * accepted, 2 * accepted, 0, 0),
            "level {}: {c:?}",
            l.label
        );
        // Refused once then acknowledged: one error, one redelivery. Refused twice: two
        // errors, one redelivery, dead-lettered.
        assert_eq!(
            c.redeliveries,
            c.answered_error - c.dead_lettered,
            "level {}: {c:?}",
            l.label
        );
        assert_eq!(c.received, c.delivered + c.answered_error, "{c:?}");
        let want: std::collections::BTreeMap<String, u64> = (c.dead_lettered > 0)
            .then(|| ("MaxDeliveryCountExceeded".to_string(), c.dead_lettered))
            .into_iter()
            .collect();
        assert_eq!(d.dead_letter_reasons, want, "level {}", l.label);
        dead_all += c.dead_lettered;
        delivered_all += c.delivered;
        received += c.received;
        errors += c.answered_error;
        redeliveries += c.redeliveries;
    }
    assert!(dead_all > 0, "the run dead-lettered nothing");
    let total = o.report.total.as_ref().and_then(|t| t.delivery.as_ref());
    assert_eq!(total.map(|d| d.counts.dead_lettered), Some(dead_all));
    // The emulator's side, once hubload's completions of the dead-lettered messages (the
    // last may still be in flight when the run returns) have been applied.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let subs = loop {
        let e = sc.emulator_counts();
        let subs: Vec<_> = e
            .entities
            .into_iter()
            .filter(|(path, _)| path.contains("/Subscriptions/hubload-"))
            .map(|(_, s)| s)
            .collect();
        let left: u64 = subs.iter().map(|s| s.dead_letter_now).sum();
        if left == 0 || std::time::Instant::now() >= deadline {
            break subs;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let sum = |f: fn(&hubload_servicebus::emulator::store::StoreStats) -> u64| {
        subs.iter().map(f).sum::<u64>()
    };
    // The emulator counts a read from the sub-queue as a delivery, and as a redelivery (the
    // message was delivered before, in the subscription).
    assert_eq!(
        (
            sum(|s| s.dead_lettered),
            sum(|s| s.dead_letter_now),
            sum(|s| s.abandoned),
            sum(|s| s.delivered),
            sum(|s| s.redelivered),
            sum(|s| s.active)
        ),
        (
            dead_all,
            0,
            errors,
            received + dead_all,
            redeliveries + dead_all,
            0
        )
    );
    // Completed: every delivered message, and every dead-lettered one read from the sub-queue.
    assert_eq!(sum(|s| s.completed), delivered_all + dead_all);
}
