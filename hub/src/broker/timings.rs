//! Broker mode's memory of each accepted publish's stages, by message id, so its deliveries
//! (from the receive loops of this hub process) carry `Hub-Timing`.
//!
//! The stages are only known once the send has settled, after the message is at the broker,
//! so they cannot travel in the message. A delivery whose message is still being sent waits
//! for the settlement (the broker already has it: microseconds); one this hub did not send,
//! or sent more than [`KEEP`] ago, carries no header.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::server_timing::PublishTiming;

/// How long a publish's stages are kept for its deliveries.
pub(crate) const KEEP: Duration = Duration::from_secs(30);
/// The longest a delivery waits for its send's settlement.
const WAIT: Duration = Duration::from_secs(2);

#[derive(Debug, Default)]
struct Book {
    /// `None` while the send is in flight.
    by_id: HashMap<String, Option<PublishTiming>>,
    /// Ids in the order their sends began, for expiry.
    order: VecDeque<(Instant, String)>,
}

/// The stages of the publishes this hub sent, by message id.
#[derive(Debug, Default)]
pub(crate) struct Timings {
    book: Mutex<Book>,
    settled: Notify,
}

impl Timings {
    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A send of message `id` begins (and what is older than [`KEEP`] is forgotten).
    pub fn sending(&self, id: &str) {
        let now = Instant::now();
        let mut b = self.book();
        while b
            .order
            .front()
            .is_some_and(|(t, _)| now.duration_since(*t) > KEEP)
        {
            if let Some((_, old)) = b.order.pop_front() {
                b.by_id.remove(&old);
            }
        }
        b.by_id.insert(id.to_owned(), None);
        b.order.push_back((now, id.to_owned()));
    }

    /// The send of `id` settled: accepted with `timing`, or (`None`) failed.
    pub fn settled(&self, id: &str, timing: Option<PublishTiming>) {
        {
            let mut b = self.book();
            match timing {
                Some(t) => {
                    if let Some(slot) = b.by_id.get_mut(id) {
                        *slot = Some(t);
                    }
                }
                None => {
                    b.by_id.remove(id);
                }
            }
        }
        self.settled.notify_waiters();
    }

    /// The stages of message `id`, waiting up to [`WAIT`] for a send still in flight.
    pub async fn get(&self, id: &str) -> Option<PublishTiming> {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let notified = self.settled.notified();
            match self.book().by_id.get(id) {
                None => return None,
                Some(Some(t)) => return Some(*t),
                Some(None) => {}
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_delivery_waits_for_its_send_to_settle() {
        let t = std::sync::Arc::new(Timings::default());
        assert!(t.get("unknown").await.is_none());
        t.sending("m1");
        let waiter = tokio::spawn({
            let t = t.clone();
            async move { t.get("m1").await }
        });
        tokio::task::yield_now().await;
        let timing = PublishTiming::accepted_now(Instant::now(), Duration::from_millis(2));
        t.settled("m1", Some(timing));
        let got = waiter.await.unwrap().expect("settled");
        assert_eq!(got.broker, Duration::from_millis(2));
        // A failed send is forgotten.
        t.sending("m2");
        t.settled("m2", None);
        assert!(t.get("m2").await.is_none());
    }
}
