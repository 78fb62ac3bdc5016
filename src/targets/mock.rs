//! A mock target: a scripted outcome sequence and latency, with its own exact counts, for
//! deterministic engine tests (hyperfine's MockExecutor idea).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{PhaseResult, Target};
use crate::result::{Attempt, Class, Outcome};
use crate::stats::Counts;
use crate::workload::{Event, Topic};

/// Answers attempt n (0-based, in arrival order) with `script[n % script.len()]` after `latency`.
#[derive(Debug)]
pub struct MockTarget {
    script: Vec<Outcome>,
    latency: Duration,
    sent: AtomicU64,
    counts: Mutex<Counts>,
    per_topic: Mutex<Vec<u64>>,
    /// When set, every send waits for a permit of it before answering (tests hold attempts
    /// in flight and release them one by one).
    gate: Option<std::sync::Arc<tokio::sync::Semaphore>>,
    /// When set, attempt `n` blocks its thread for the duration (a stalled generator).
    stall: Option<(u64, Duration)>,
    /// When set, a throttled or 503 answer carries `Retry-After` of this many seconds.
    retry_after: Option<u32>,
    /// When each attempt arrived (tokio time, so paused-time tests read exact waits).
    arrivals: Mutex<Vec<tokio::time::Instant>>,
}

impl MockTarget {
    /// A mock answering by `script` (must not be empty) after `latency`.
    pub fn new(script: Vec<Outcome>, latency: Duration) -> Self {
        assert!(!script.is_empty(), "mock script must not be empty");
        MockTarget {
            script,
            latency,
            sent: AtomicU64::new(0),
            counts: Mutex::new(Counts::default()),
            per_topic: Mutex::new(Vec::new()),
            gate: None,
            stall: None,
            retry_after: None,
            arrivals: Mutex::new(Vec::new()),
        }
    }

    /// Throttled and 503 answers carry `Retry-After: secs`.
    pub fn retry_after(mut self, secs: u32) -> Self {
        self.retry_after = Some(secs);
        self
    }

    /// When each attempt arrived, in arrival order.
    pub fn arrivals(&self) -> Vec<tokio::time::Instant> {
        self.arrivals.lock().expect("mock arrivals").clone()
    }

    /// Every send waits for a permit of `gate` (taken for good) before answering.
    pub fn gated(mut self, gate: std::sync::Arc<tokio::sync::Semaphore>) -> Self {
        self.gate = Some(gate);
        self
    }

    /// Attempt `n` (0-based) blocks the thread it runs on for `d`, as a generator whose
    /// runtime is starved does.
    pub fn stalling(mut self, n: u64, d: Duration) -> Self {
        self.stall = Some((n, d));
        self
    }

    /// What the mock itself answered, per class.
    pub fn counts(&self) -> Counts {
        *self.counts.lock().expect("mock counts")
    }

    /// Attempts received per topic index.
    pub fn per_topic(&self) -> Vec<u64> {
        self.per_topic.lock().expect("mock per-topic").clone()
    }
}

impl Target for MockTarget {
    type Scratch = ();

    async fn prepare(&self, topics: &[Topic], _cancel: &CancellationToken) -> PhaseResult {
        let mut counts = Counts::default();
        topics.iter().for_each(|_| counts.bump(Class::Accepted));
        PhaseResult {
            topics: topics.len() as u64,
            counts,
            ..PhaseResult::default()
        }
    }

    async fn send(
        &self,
        topic: &Topic,
        event: &Event,
        _started: std::time::Instant,
        _scratch: &mut (),
    ) -> Attempt {
        let n = self.sent.fetch_add(1, Ordering::Relaxed);
        let outcome = self.script[(n % self.script.len() as u64) as usize];
        self.arrivals
            .lock()
            .expect("mock arrivals")
            .push(tokio::time::Instant::now());
        if let Some(g) = &self.gate {
            g.acquire()
                .await
                .expect("the gate is never closed")
                .forget();
        }
        if let Some((at, d)) = self.stall {
            if n == at {
                std::thread::sleep(d);
            }
        }
        if !self.latency.is_zero() {
            tokio::time::sleep(self.latency).await;
        }
        self.counts
            .lock()
            .expect("mock counts")
            .bump(outcome.class());
        {
            let mut pt = self.per_topic.lock().expect("mock per-topic");
            if pt.len() <= topic.index {
                pt.resize(topic.index + 1, 0);
            }
            pt[topic.index] += 1;
        }
        let mut retry_after = crate::result::RetryAfter::NONE;
        if let (Some(secs), Outcome::Throttled | Outcome::Http503) = (self.retry_after, outcome) {
            retry_after.add_header(secs.to_string().as_bytes());
        }
        Attempt {
            server_timing: crate::result::ServerTimings::NONE,
            retry_after,
            outcome,
            status: outcome.status().unwrap_or(200),
            bytes_sent: event.body.len() as u64 + 100,
            bytes_received: 40,
        }
    }

    async fn teardown(&self, topics: &[Topic], cancel: &CancellationToken) -> PhaseResult {
        self.prepare(topics, cancel).await
    }
}
