//! What the engine hands out per measured attempt (`--jtl`): a plain `Copy` record into a
//! bounded queue, plus a sync marker the run sends at level ends. Rows are built by the consumer.

use tokio::sync::{mpsc, oneshot};

use super::plan::Load;
use crate::result::Outcome;

/// One measured attempt as plain data: no strings, so handing it out never allocates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AttemptRecord {
    /// When the attempt started, µs since the Unix epoch.
    pub start_unix_us: u64,
    /// Start to end, µs.
    pub elapsed_us: u64,
    /// What the attempt ended in.
    pub outcome: Outcome,
    /// The HTTP status, or 0 when no response head was read.
    pub status: u16,
    /// Bytes received: status line, headers and body.
    pub bytes_received: u64,
    /// Bytes sent: request line, headers and body.
    pub bytes_sent: u64,
    /// The event's channel (index into the workload's channels).
    pub channel: u32,
    /// The worker that sent it, from 0.
    pub worker: u32,
    /// The load of the level it belongs to.
    pub load: Load,
    /// Workers in that level.
    pub workers: u32,
}

/// An item of the hand-out queue.
#[derive(Debug)]
pub enum Handout {
    /// A measured attempt.
    Attempt(AttemptRecord),
    /// Make everything handed out so far durable, then answer (the end of a level, a stop).
    Sync(oneshot::Sender<std::io::Result<()>>),
}

/// The engine's end of the hand-out queue. Cheap to clone (one per worker).
#[derive(Debug, Clone)]
pub struct AttemptSender {
    tx: mpsc::Sender<Handout>,
}

/// The consumer's end of the hand-out queue.
pub type AttemptReceiver = mpsc::Receiver<Handout>;

/// A bounded queue of `capacity` items.
pub fn attempt_queue(capacity: usize) -> (AttemptSender, AttemptReceiver) {
    let (tx, rx) = mpsc::channel(capacity);
    (AttemptSender { tx }, rx)
}

impl AttemptSender {
    /// Queue a record. A full queue makes this wait: a slow consumer throttles the load
    /// instead of losing records. False when the consumer has stopped (the record is dropped).
    ///
    /// Queued at once when there is room; only a full queue makes the (boxed) wait: the
    /// channel's send future is 384 bytes, and inline it would be part of every worker's
    /// state, which each request touches (docs/http-client.md, "The worker's state").
    pub async fn send(&self, r: AttemptRecord) -> bool {
        match self.tx.try_send(Handout::Attempt(r)) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Closed(_)) => false,
            Err(mpsc::error::TrySendError::Full(h)) => Box::pin(self.tx.send(h)).await.is_ok(),
        }
    }

    /// [`send`](Self::send) for code outside the async runtime (never inside it: it blocks).
    pub fn blocking_send(&self, r: AttemptRecord) -> bool {
        self.tx.blocking_send(Handout::Attempt(r)).is_ok()
    }

    /// Wait until the consumer has made every record queued before this call durable.
    /// Returns the consumer's error, or an error when it has stopped.
    pub async fn sync(&self) -> std::io::Result<()> {
        let (ack, done) = oneshot::channel();
        let stopped = || std::io::Error::other("the attempt consumer has stopped");
        self.tx
            .send(Handout::Sync(ack))
            .await
            .map_err(|_| stopped())?;
        done.await.map_err(|_| stopped())?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::plan::Load;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    fn record(n: u64) -> AttemptRecord {
        AttemptRecord {
            start_unix_us: n,
            elapsed_us: 1,
            outcome: Outcome::Accepted,
            status: 200,
            bytes_received: 0,
            bytes_sent: 0,
            channel: 0,
            worker: 0,
            load: Load::Closed { concurrency: 1 },
            workers: 1,
        }
    }

    fn start_of(h: Option<Handout>) -> u64 {
        match h {
            Some(Handout::Attempt(r)) => r.start_unix_us,
            other => panic!("expected an attempt, got {other:?}"),
        }
    }

    /// Room: queued at once. Full: the send waits until the consumer takes one, and nothing
    /// is lost or reordered. Consumer gone: false.
    #[tokio::test]
    async fn a_full_queue_makes_the_send_wait_and_a_closed_one_refuses() {
        let (tx, mut rx) = attempt_queue(1);
        assert!(tx.send(record(1)).await);
        let mut second = pin!(tx.send(record(2)));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(
            second.as_mut().poll(&mut cx).is_pending(),
            "the queue is full"
        );
        assert!(second.as_mut().poll(&mut cx).is_pending(), "still full");
        assert_eq!(start_of(rx.recv().await), 1);
        assert_eq!(second.as_mut().poll(&mut cx), Poll::Ready(true));
        assert_eq!(start_of(rx.recv().await), 2);
        drop(rx);
        assert!(!tx.send(record(3)).await);
    }
}
