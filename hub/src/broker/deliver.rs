//! A broker subscription's delivery workers: they POST the messages its receive loop hands
//! them to the callback, several at once, and hand each message back with its outcome; the
//! loop settles it (the receiver is the loop's alone).
//!
//! Workers, connections and pipelining are the in-memory hub's (`distribute.rs`,
//! `callback_conn.rs`); an `https://` callback gets one POST per worker at a time. Messages
//! complete in any order. [`Delivery`] is what a subscription's loop and workers need.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use axum::http::{header, HeaderValue};
use hubload_servicebus::Received;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::timings::Timings;
use crate::broker_stats::BrokerCounters;
use crate::callback_conn::{Answer, Conn, Failure, Target};
use crate::delivery_settings::DeliverySettings;
use crate::server_timing::{PublishTiming, HUB_TIMING};
use crate::sign::{Signer, SIGNATURE_LEN};
use crate::stats::Counters;
use crate::topic::Topic;

/// What a receive loop needs from the hub.
#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    pub topic: Arc<Topic>,
    pub counters: Arc<Counters>,
    pub broker: Arc<BrokerCounters>,
    /// `<hub>; rel="hub", <topic>; rel="self"`, the `Link` field's value.
    pub link: HeaderValue,
    /// Deliveries of one message before it is dead-lettered (the hub's retry attempts).
    pub max_attempts: u32,
    /// The stages of the publishes this hub sent, for each delivery's `Hub-Timing`.
    pub timings: Arc<Timings>,
    pub settings: DeliverySettings,
}

/// What became of one message handed to the workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The callback answered with this status: the attempt's outcome.
    Answered(u16),
    /// No answer (the connection failed, or timed out): a failed attempt.
    Failed(Failure),
    /// Never POSTed, because the loop was ending: not an attempt.
    NotSent,
}

/// A message back from the workers, to be settled by its outcome.
#[derive(Debug)]
pub(crate) struct Done {
    pub msg: Received,
    pub outcome: Outcome,
}

/// One message a worker holds: signed once, with its publish's stages.
struct Job {
    msg: Received,
    sig: Option<[u8; SIGNATURE_LEN]>,
    timing: Option<PublishTiming>,
}

/// What a subscription's workers share.
struct Shared {
    d: Delivery,
    callback: String,
    /// The callback, when it is `http://` (each worker then owns a connection to it).
    target: Option<Target>,
    /// `Link: …\r\n`, as written on a worker's own connection.
    link_line: Vec<u8>,
    signer: Option<Signer>,
    jobs: async_channel::Receiver<Received>,
    done: mpsc::UnboundedSender<Done>,
    /// Cancelled when the loop ends: workers take nothing more.
    halt: CancellationToken,
    /// Most workers, and POSTs per write.
    concurrency: usize,
    depth: usize,
    alive: AtomicUsize,
    idle: AtomicUsize,
}

/// A subscription's delivery workers, as the receive loop sees them.
pub(crate) struct Workers {
    jobs: async_channel::Sender<Received>,
    /// The loop's own end of the queue: what no worker took when the loop ends.
    left: async_channel::Receiver<Received>,
    shared: Arc<Shared>,
}

impl Workers {
    /// The workers of `callback` (none running until the first message), and the channel
    /// their outcomes come back on.
    pub fn new(
        d: &Delivery,
        callback: &str,
        signer: Option<Signer>,
    ) -> (Workers, mpsc::UnboundedReceiver<Done>) {
        let (jobs_tx, jobs_rx) = async_channel::unbounded();
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        let target = url::Url::parse(callback).ok().and_then(|u| Target::new(&u));
        let depth = match target {
            Some(_) => d.settings.pipeline.max(1),
            None => 1,
        };
        let shared = Arc::new(Shared {
            link_line: [b"Link: ", d.link.as_bytes(), b"\r\n"].concat(),
            d: d.clone(),
            callback: callback.to_owned(),
            target,
            signer,
            jobs: jobs_rx.clone(),
            done: done_tx,
            halt: CancellationToken::new(),
            concurrency: d.settings.concurrency.max(1),
            depth,
            alive: AtomicUsize::new(1),
            idle: AtomicUsize::new(0),
        });
        tokio::spawn(shared.clone().run());
        let w = Workers {
            jobs: jobs_tx,
            left: jobs_rx,
            shared,
        };
        (w, done_rx)
    }

    /// Most messages in the workers' hands at once: concurrency × pipeline for an
    /// `http://` callback, concurrency for another.
    pub fn limit(&self) -> usize {
        self.shared.concurrency * self.shared.depth
    }

    /// Hand a message to the workers.
    pub fn push(&self, msg: Received) {
        if let Err(e) = self.jobs.try_send(msg) {
            // The queue is unbounded and open while the loop runs: this cannot happen, but
            // the message must still come back to be settled.
            let _ = self.shared.done.send(Done {
                msg: e.into_inner(),
                outcome: Outcome::NotSent,
            });
        }
    }

    /// The loop is ending: workers finish the POSTs they have begun and take nothing
    /// more; what none of them took comes back [`Outcome::NotSent`].
    pub fn halt(&self) {
        self.shared.halt.cancel();
        self.jobs.close();
        while let Ok(msg) = self.left.try_recv() {
            let _ = self.shared.done.send(Done {
                msg,
                outcome: Outcome::NotSent,
            });
        }
    }
}

impl Shared {
    /// One worker: take messages until the loop halts.
    async fn run(self: Arc<Self>) {
        let mut conn = Conn::default();
        let mut batch: Vec<Job> = Vec::new();
        let mut answers = Vec::new();
        loop {
            if batch.is_empty() {
                self.idle.fetch_add(1, Relaxed);
                let msg = tokio::select! {
                    biased;
                    _ = self.halt.cancelled() => None,
                    m = self.jobs.recv() => m.ok(),
                };
                let spare = self.idle.fetch_sub(1, Relaxed) - 1;
                let Some(msg) = msg else { break };
                if spare == 0 {
                    self.grow();
                }
                batch.push(self.job(msg).await);
                if self.depth > 1 {
                    // Let the receive loop hand over what it has: it joins this write.
                    tokio::task::yield_now().await;
                }
                while batch.len() < self.depth {
                    let Ok(msg) = self.jobs.try_recv() else { break };
                    batch.push(self.job(msg).await);
                }
            } else if self.halt.is_cancelled() {
                // Written after an answer that closed the connection, and not again.
                for j in batch.drain(..) {
                    self.back(j.msg, Outcome::NotSent);
                }
                continue;
            }
            match &self.target {
                Some(t) => {
                    let room = conn.room(self.depth).min(batch.len());
                    self.write(&mut conn, t, &batch[..room], &mut answers).await;
                    self.d.counters.writes.fetch_add(1, Relaxed);
                    let mut kept = Vec::new();
                    for (j, a) in batch.drain(..room).zip(answers.iter()) {
                        match *a {
                            Answer::Status(s) => self.back(j.msg, Outcome::Answered(s)),
                            Answer::Failed(f) => self.back(j.msg, Outcome::Failed(f)),
                            // Not processed by the callback: written again, first.
                            Answer::Unsent => kept.push(j),
                        }
                    }
                    kept.append(&mut batch);
                    batch = kept;
                }
                None => {
                    self.d.counters.writes.fetch_add(1, Relaxed);
                    for j in batch.drain(..) {
                        let o = match self.post_tls(&j).await {
                            Ok(s) => Outcome::Answered(s),
                            Err(f) => Outcome::Failed(f),
                        };
                        self.back(j.msg, o);
                    }
                }
            }
        }
        self.alive.fetch_sub(1, Relaxed);
    }

    /// A taken message, signed, with its publish's stages (when this hub sent it).
    async fn job(&self, msg: Received) -> Job {
        let sig = self.signer.as_ref().map(|s| {
            let mut buf = [0; SIGNATURE_LEN];
            s.sign(&msg.body, &mut buf);
            buf
        });
        let timing = match &msg.message_id {
            Some(id) => self.d.timings.get(id).await,
            None => None,
        };
        Job { msg, sig, timing }
    }

    fn back(&self, msg: Received, outcome: Outcome) {
        // The loop keeps its end until every message it handed out has come back.
        let _ = self.done.send(Done { msg, outcome });
    }

    /// Start one more worker, unless the subscription has its most.
    fn grow(self: &Arc<Self>) {
        let more = self.alive.fetch_update(Relaxed, Relaxed, |n| {
            (n < self.concurrency).then_some(n + 1)
        });
        if more.is_ok() {
            tokio::spawn(self.clone().run());
        }
    }

    /// POST `jobs` on `conn` in one write; their answers, in order, into `answers`.
    async fn write(
        &self,
        conn: &mut Conn,
        target: &Target,
        jobs: &[Job],
        answers: &mut Vec<Answer>,
    ) {
        conn.start();
        // One clock read per write: its deliveries leave together.
        let now = std::time::Instant::now();
        for j in jobs {
            conn.push(target, |head| {
                head.extend_from_slice(&self.link_line);
                if let Some(ct) = &j.msg.content_type {
                    head.extend_from_slice(b"Content-Type: ");
                    head.extend_from_slice(ct.as_bytes());
                    head.extend_from_slice(b"\r\n");
                }
                if let Some(sig) = &j.sig {
                    head.extend_from_slice(b"X-Hub-Signature: ");
                    head.extend_from_slice(sig);
                    head.extend_from_slice(b"\r\n");
                }
                if let Some(t) = &j.timing {
                    // Writing into a Vec cannot fail.
                    let _ = write!(head, "{HUB_TIMING}: {}\r\n", t.value(now));
                }
                let _ = write!(head, "Content-Length: {}\r\n\r\n", j.msg.body.len());
            });
        }
        let bodies: Vec<&[u8]> = jobs.iter().map(|j| j.msg.body.as_slice()).collect();
        conn.send(target, &bodies, self.d.settings.timeout, answers)
            .await;
    }

    /// One POST to an `https://` (or otherwise not plain-http) callback, over the hub's
    /// pooled TLS client.
    async fn post_tls(&self, j: &Job) -> Result<u16, Failure> {
        let mut req = self
            .d
            .settings
            .client
            .post(&self.callback)
            .timeout(self.d.settings.timeout)
            .header(header::LINK, self.d.link.clone())
            .body(j.msg.body.clone());
        if let Some(ct) = &j.msg.content_type {
            req = req.header(header::CONTENT_TYPE, ct.as_str());
        }
        if let Some(sig) = j.sig.as_ref().and_then(|s| std::str::from_utf8(s).ok()) {
            req = req.header("X-Hub-Signature", sig);
        }
        if let Some(t) = &j.timing {
            req = req.header(HUB_TIMING, t.value(std::time::Instant::now()));
        }
        match req.send().await {
            Ok(r) => Ok(r.status().as_u16()),
            Err(e) => Err(Failure::of_reqwest(&e)),
        }
    }
}
