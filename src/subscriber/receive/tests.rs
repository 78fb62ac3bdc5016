//! Matching deliveries to events: signatures, identities, bodies, and the bitmaps' verdicts.

use super::*;
use crate::workload::{Distribution, TopicLayout, WorkloadConfig};

fn workload() -> Workload {
    Workload::new(WorkloadConfig {
        tenants: 3,
        sps: 2,
        users: 2,
        channels: vec!["login".into(), "registration".into()],
        layout: TopicLayout::PerTenantChannel,
        payload_bytes: None,
        seed: 7,
        distribution: Distribution::Uniform,
    })
}

#[test]
fn signatures_are_checked() {
    // RFC 4231 test case 2.
    let good = "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
    let body = b"what do ya want for nothing?";
    assert!(signature_ok(b"Jefe", Some(good.as_bytes()), body));
    assert!(!signature_ok(b"Jeff", Some(good.as_bytes()), body));
    assert!(!signature_ok(b"Jefe", Some(&good.as_bytes()[1..]), body));
    assert!(!signature_ok(b"Jefe", Some(b"sha256=zz"), body));
    assert!(!signature_ok(b"Jefe", None, body));
    // Too short or too long by one hex digit pair.
    assert!(!signature_ok(
        b"Jefe",
        Some(&good.as_bytes()[..good.len() - 2]),
        body
    ));
    assert!(!signature_ok(
        b"Jefe",
        Some(format!("{good}00").as_bytes()),
        body
    ));
    // One key, used again, gives the same answers.
    let key = SignatureKey::new(b"Jefe");
    assert!(key.verify(Some(good.as_bytes()), body));
    assert!(key.verify(Some(good.as_bytes()), body));
    assert!(!key.verify(Some(good.as_bytes()), b"what do ya want for nothing!"));
    assert_eq!(format!("{key:?}"), "SignatureKey(..)");
}

#[test]
fn check_classifies_content() {
    let w = workload();
    let t = DeliveryTracker::new(64);
    t.open_level(10);
    let e = w.event_at(12, 1_000_000_000);
    t.note_published(12, e.topic, Instant::now());
    let sig = test_signature(b"k", &e.body);
    let key = SignatureKey::new(b"k");
    let ck = |topic, body: &[u8], sig: &str| {
        check(&w, &t, topic, 10, Some(&key), Some(sig.as_bytes()), body)
    };
    assert_eq!(
        ck(e.topic, &e.body, &sig),
        Check::Event {
            seq: 12,
            sent_us: 1_000_000_000
        }
    );
    assert_eq!(ck(e.topic, &e.body, "sha256=00"), Check::BadSignature);
    assert_eq!(ck(e.topic + 1, &e.body, &sig), Check::Unexpected);
    let mut bent = e.body.to_vec();
    let n = bent.len() - 3;
    bent[n] ^= 1;
    assert_eq!(
        ck(e.topic, &bent, &test_signature(b"k", &bent)),
        Check::BodyMismatch
    );
    let never = w.event_at(13, 1);
    assert_eq!(
        ck(never.topic, &never.body, &test_signature(b"k", &never.body)),
        Check::Unexpected
    );
    let old = w.event_at(3, 1);
    assert_eq!(
        ck(old.topic, &old.body, &test_signature(b"k", &old.body)),
        Check::Late
    );
    assert_eq!(
        ck(e.topic, b"{}", &test_signature(b"k", b"{}")),
        Check::Unexpected
    );
    // The per-thread expected-body buffer carries nothing over from the checks before.
    assert!(matches!(
        ck(e.topic, &e.body, &sig),
        Check::Event { seq: 12, .. }
    ));
    // Without a secret the signature is not looked at.
    assert!(matches!(
        check(&w, &t, e.topic, 10, None, None, &e.body),
        Check::Event { .. }
    ));
}

fn sent(sent_ns: u64, accepted_ns: Option<u64>) -> Option<SentEvent> {
    Some(SentEvent {
        topic: 0,
        sent_ns,
        accepted_ns,
    })
}

#[test]
fn duplicates_redeliveries_and_latency() {
    let every2 = Behaviour {
        fail_every: 2,
        ..Behaviour::default()
    };
    let mut s = SubState::new(0);
    let series = SecondSeries::default();
    let mut hists = DeliveryHists::default();
    let ev = |seq| Check::Event { seq, sent_us: 0 };
    // receipt 1 ok, 2 fails, 3 (redelivery of 2) ok, 4 (duplicate of 1) fails, 5 ok.
    assert_eq!(
        s.receive(
            0,
            &every2,
            ev(1),
            sent(1_000, Some(3_000)),
            10_000,
            &series,
            &mut hists
        ),
        Answer::Ok
    );
    assert_eq!(
        s.receive(
            0,
            &every2,
            ev(2),
            sent(2_000, None),
            11_000,
            &series,
            &mut hists
        ),
        Answer::Error
    );
    assert_eq!(
        s.receive(
            0,
            &every2,
            ev(2),
            sent(2_000, None),
            12_000,
            &series,
            &mut hists
        ),
        Answer::Ok
    );
    assert_eq!(
        s.receive(
            0,
            &every2,
            ev(1),
            sent(1_000, None),
            13_000,
            &series,
            &mut hists
        ),
        Answer::Error
    );
    assert_eq!(
        s.receive(
            0,
            &every2,
            Check::Unexpected,
            None,
            14_000,
            &series,
            &mut hists
        ),
        Answer::Ok
    );
    let c = s.counts;
    assert_eq!(
        (
            c.received,
            c.delivered,
            c.redeliveries,
            c.duplicates,
            c.unexpected,
            c.answered_error
        ),
        (5, 2, 1, 1, 1, 2)
    );
    assert_eq!(c.before_accepted, 1, "seq 2 was never accepted");
    assert_eq!(hists.e2e_from_start.len(), 2);
    assert_eq!(
        (hists.e2e_from_start.min(), hists.e2e_from_start.max()),
        (9, 10)
    );
    assert_eq!(hists.e2e_from_accepted.len(), 1);
    assert_eq!(hists.e2e_from_accepted.max(), 7);
    assert_eq!(series.to_vec(), [2], "both in second 0");
}

#[test]
fn deliveries_count_in_the_second_they_arrive() {
    let b = Behaviour::default();
    let mut s = SubState::new(0);
    let series = SecondSeries::default();
    let mut hists = DeliveryHists::default();
    s.origin_ns = 5_000_000_000;
    let ev = |seq| Check::Event { seq, sent_us: 0 };
    // Before the origin (second 0), at 0.999 s, at 2 s; a duplicate is not counted.
    for (seq, at) in [
        (1, 4_000_000_000),
        (2, 5_999_999_999),
        (3, 7_000_000_000),
        (3, 7_100_000_000),
    ] {
        s.receive(0, &b, ev(seq), sent(1, None), at, &series, &mut hists);
    }
    assert_eq!(series.to_vec(), [2, 0, 1]);
    assert_eq!(s.counts.duplicates, 1);
}

#[test]
fn the_longest_gap_is_between_consecutive_acknowledged_deliveries() {
    let b = Behaviour {
        fail_every: 4,
        ..Behaviour::default()
    };
    let mut s = SubState::new(0);
    let series = SecondSeries::default();
    let mut hists = DeliveryHists::default();
    let ev = |seq| Check::Event { seq, sent_us: 0 };
    assert_eq!(s.longest_gap_ns, 0);
    s.receive(0, &b, ev(1), sent(1, None), 1_000, &series, &mut hists);
    assert_eq!(s.longest_gap_ns, 0, "one delivery is no interval");
    s.receive(0, &b, ev(2), sent(1, None), 3_000, &series, &mut hists);
    s.receive(0, &b, ev(3), sent(1, None), 3_500, &series, &mut hists);
    // Refused (the 4th receipt answers 500), then a duplicate: neither is a delivery.
    assert_eq!(
        s.receive(0, &b, ev(4), sent(1, None), 9_000, &series, &mut hists),
        Answer::Error
    );
    s.receive(0, &b, ev(3), sent(1, None), 9_500, &series, &mut hists);
    assert_eq!(s.longest_gap_ns, 2_000);
    s.receive(0, &b, ev(4), sent(1, None), 10_500, &series, &mut hists);
    assert_eq!((s.counts.delivered, s.longest_gap_ns), (4, 7_000));
    s.reset(0);
    assert_eq!(s.longest_gap_ns, 0);
    s.receive(0, &b, ev(1), sent(1, None), 20_000, &series, &mut hists);
    assert_eq!(
        s.longest_gap_ns, 0,
        "a new level starts without a last delivery"
    );
}

#[test]
fn order_is_judged_by_accepted_before_sent() {
    let b = Behaviour::default();
    let mut s = SubState::new(0);
    let series = SecondSeries::default();
    let mut hists = DeliveryHists::default();
    let ev = |seq| Check::Event { seq, sent_us: 0 };
    // Event 1 sent at 100, accepted at 150; event 2 sent at 200.
    s.receive(0, &b, ev(2), sent(200, Some(250)), 300, &series, &mut hists);
    s.receive(0, &b, ev(1), sent(100, Some(150)), 310, &series, &mut hists);
    // Overlapping publishes (accepted after the other was sent) are not an order error.
    s.receive(0, &b, ev(3), sent(400, Some(500)), 600, &series, &mut hists);
    s.receive(0, &b, ev(4), sent(350, Some(450)), 610, &series, &mut hists);
    assert_eq!(s.counts.out_of_order, 1);
    assert_eq!(s.counts.delivered, 4);
}

#[test]
fn gone_after_answers_410_and_marks_the_subscriber() {
    let b = Behaviour {
        gone_after: Some(1),
        ..Behaviour::default()
    };
    let mut s = SubState::new(0);
    let series = SecondSeries::default();
    let mut hists = DeliveryHists::default();
    let ev = |seq| Check::Event { seq, sent_us: 0 };
    assert_eq!(
        s.receive(0, &b, ev(1), sent(1, None), 2, &series, &mut hists),
        Answer::Ok
    );
    assert_eq!(
        s.receive(0, &b, ev(2), sent(1, None), 2, &series, &mut hists),
        Answer::Gone
    );
    assert!(s.gone);
    assert_eq!((s.counts.delivered, s.counts.answered_gone), (1, 1));
}

#[test]
fn dead_lettered_counts_each_event_once_by_reason_and_not_as_a_delivery() {
    let mut s = SubState::new(10);
    let ev = |seq| Check::Event { seq, sent_us: 0 };
    s.dead_lettered(ev(11), "MaxDeliveryCountExceeded");
    s.dead_lettered(ev(12), "TTLExpiredException");
    // Read again (its completion was lost): not counted twice.
    s.dead_lettered(ev(11), "MaxDeliveryCountExceeded");
    s.dead_lettered(Check::Late, "MaxDeliveryCountExceeded");
    s.dead_lettered(Check::Unexpected, "x");
    s.dead_lettered(Check::BodyMismatch, "x");
    let c = s.counts;
    assert_eq!(
        (
            c.dead_lettered,
            c.late,
            c.unexpected,
            c.received,
            c.delivered
        ),
        (2, 1, 2, 0, 0)
    );
    assert!(s.dead.get(11) && s.dead.get(12) && !s.acked.get(11));
    assert_eq!(
        s.dead_reasons,
        [
            ("MaxDeliveryCountExceeded".to_string(), 1),
            ("TTLExpiredException".to_string(), 1)
        ]
        .into()
    );
    // A new level forgets which events were dead-lettered.
    s.reset(20);
    assert!(!s.dead.get(11) && s.dead.ones() == 0);
}
