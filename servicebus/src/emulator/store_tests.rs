//! Unit tests of the message store: locks, settlement, MaxDeliveryCount, TTL.

use super::*;
use fe2o3_amqp::types::messaging::{AmqpValue, Header};

fn msg(ttl_ms: Option<u32>) -> Msg {
    Arc::new(
        Message::builder()
            .header(Header {
                ttl: ttl_ms,
                ..Header::default()
            })
            .body(Body::Value(AmqpValue(Value::Null)))
            .build(),
    )
}

fn store(max_delivery: u32) -> Store {
    Store::new(
        "q".into(),
        EntityProps {
            lock_duration: Duration::from_millis(100),
            max_delivery_count: max_delivery,
            ..EntityProps::default()
        },
    )
}

fn tok(n: u8) -> LockToken {
    [n; 16]
}

#[test]
fn peek_lock_complete_leaves_nothing() {
    let s = store(10);
    for _ in 0..3 {
        s.enqueue(msg(None), 0);
    }
    let seqs: Vec<i64> = (1..=3)
        .map(|n| s.take(true, false, 1, tok(n)).unwrap().stored.seq)
        .collect();
    assert_eq!(seqs, vec![1, 2, 3]);
    assert!(
        s.take(true, false, 1, tok(9)).is_none(),
        "all three are locked"
    );
    for n in 1..=3 {
        s.settle(&tok(n), Settle::Complete, 2).unwrap();
    }
    assert_eq!(s.settle(&tok(1), Settle::Complete, 2), Err(LockError::Lost));
    let st = s.stats(3);
    assert_eq!(
        (st.enqueued, st.delivered, st.completed, st.active),
        (3, 3, 3, 0)
    );
}

#[test]
fn lock_expiry_redelivers_then_dead_letters_at_max_delivery_count() {
    let s = store(2);
    s.enqueue(msg(None), 0);
    let d = s.take(true, false, 0, tok(1)).unwrap();
    assert_eq!((d.stored.delivery_count, d.lock.unwrap().1), (1, 100));
    // The lock runs out at 100 ms: the message is available again, delivered a second time.
    assert!(s.take(true, false, 99, tok(2)).is_none());
    let d = s.take(true, false, 100, tok(2)).unwrap();
    assert_eq!(d.stored.delivery_count, 2);
    assert_eq!(
        s.settle(&tok(1), Settle::Complete, 100),
        Err(LockError::Lost)
    );
    // Abandoned at the second delivery with MaxDeliveryCount 2: dead-lettered.
    s.settle(&tok(2), Settle::Abandon, 150).unwrap();
    assert!(s.take(true, false, 151, tok(3)).is_none());
    let dl = s.take(false, true, 151, tok(4)).unwrap();
    assert_eq!(
        dl.stored.dead_letter_reason.as_deref(),
        Some("MaxDeliveryCountExceeded")
    );
    let st = s.stats(151);
    // Three deliveries; the second and the dead-letter read deliver a message seen before.
    assert_eq!(
        (
            st.delivered,
            st.redelivered,
            st.lock_expired,
            st.abandoned,
            st.dead_lettered
        ),
        (3, 2, 1, 1, 1)
    );
}

#[test]
fn renew_moves_the_lock_on() {
    let s = store(10);
    s.enqueue(msg(None), 0);
    s.take(true, false, 0, tok(1)).unwrap();
    assert_eq!(s.renew(&tok(1), 90), Ok(190));
    assert!(
        s.take(true, false, 150, tok(2)).is_none(),
        "renewed lock still held"
    );
    assert_eq!(s.renew(&tok(7), 90), Err(LockError::Lost));
    s.settle(&tok(1), Settle::Complete, 180).unwrap();
}

#[test]
fn dead_letter_defer_and_ttl() {
    let s = store(10);
    s.enqueue(msg(None), 0);
    s.enqueue(msg(None), 0);
    s.enqueue(msg(Some(50)), 0);
    s.take(true, false, 0, tok(1)).unwrap();
    s.settle(&tok(1), Settle::DeadLetter("why".into()), 1)
        .unwrap();
    s.take(true, false, 1, tok(2)).unwrap();
    s.settle(&tok(2), Settle::Defer, 2).unwrap();
    // The third expired at 50 ms: nothing left to receive; the deferred one is still active.
    assert!(s.take(true, false, 60, tok(3)).is_none());
    let st = s.stats(60);
    assert_eq!(
        (
            st.dead_lettered,
            st.deferred,
            st.expired,
            st.active,
            st.dead_letter_now
        ),
        (1, 1, 1, 1, 1)
    );
    assert_eq!(s.peek(0, 10, false, 60).len(), 1);
    let dl = s.take(false, true, 60, tok(4)).unwrap();
    assert_eq!(dl.stored.dead_letter_reason.as_deref(), Some("why"));
}

#[test]
fn receive_and_delete_removes_at_once() {
    let s = store(10);
    s.enqueue(msg(None), 0);
    let d = s.take(false, false, 0, tok(1)).unwrap();
    assert!(d.lock.is_none());
    assert!(s.take(false, false, 1000, tok(2)).is_none());
    assert_eq!(s.stats(1000).active, 0);
}

#[test]
fn deferred_is_reached_by_sequence_number_only() {
    let s = store(10);
    s.enqueue(msg(None), 0);
    s.take(true, false, 0, tok(1)).unwrap();
    s.settle(&tok(1), Settle::Defer, 1).unwrap();
    assert!(s.take(true, false, 2, tok(2)).is_none());
    assert!(
        s.take_deferred(2, tok(3), 2).is_none(),
        "no such sequence number"
    );
    let d = s.take_deferred(1, tok(3), 2).unwrap();
    assert_eq!(d.stored.delivery_count, 2);
    s.settle(&tok(3), Settle::Abandon, 3).unwrap();
    assert!(
        s.take(true, false, 4, tok(4)).is_none(),
        "abandoned, still deferred"
    );
    s.take_deferred(1, tok(5), 4).unwrap();
    s.settle(&tok(5), Settle::Complete, 5).unwrap();
    assert_eq!(s.stats(6).active, 0);
}

#[test]
fn untake_gives_back_uncounted() {
    let s = store(10);
    s.enqueue(msg(None), 0);
    s.enqueue(msg(None), 0);
    let d = s.take(true, false, 0, tok(1)).unwrap();
    s.untake(d, false);
    let d = s.take(false, false, 0, tok(2)).unwrap();
    assert_eq!(
        (d.stored.seq, d.stored.delivery_count),
        (1, 1),
        "first again, counted once"
    );
    s.untake(d, false);
    let st = s.stats(0);
    assert_eq!((st.delivered, st.redelivered, st.active), (0, 0, 2));
    assert!(
        s.settle(&tok(1), Settle::Complete, 0).is_err(),
        "the lock went with it"
    );
}
