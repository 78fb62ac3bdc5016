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
    pub async fn send(&self, r: AttemptRecord) -> bool {
        self.tx.send(Handout::Attempt(r)).await.is_ok()
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
