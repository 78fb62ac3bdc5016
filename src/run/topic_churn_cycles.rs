//! Topic churn in a run (`--topic-churn RATE`): while a level runs, RATE of this process's topics a second are deregistered and registered again, and a refusal inside a topic's window counts `expected_refusal`.
//!
//! A topic's *window* opens just before its deregister request is sent and closes when the
//! answer to its re-registration is read. A publish refused (404 or denied) whose request
//! overlapped a window of its topic was refused because of the churn: the worker counts it
//! `expected_refusal`, not an error. The rule and the counts are docs/topic-churn.md.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::engine::PublishObserver;
use crate::result::Outcome;
use crate::stats::TopicChurnStats;
use crate::subscriber::TopicSubscribers;
use crate::targets::TopicRegistry;
use crate::workload::Topic;

/// How long a churned topic stays deregistered before its re-registration is sent, so that
/// publishes meet it deregistered (the hub answers both requests at once).
const DWELL: Duration = Duration::from_millis(50);

/// One window: when it opened, and when it closed (`None` while still open).
type Window = (Instant, Option<Instant>);

/// Each topic's windows in the open level.
#[derive(Debug)]
struct Windows {
    per_topic: Vec<Mutex<Vec<Window>>>,
}

impl Windows {
    fn topic(&self, t: usize) -> std::sync::MutexGuard<'_, Vec<Window>> {
        self.per_topic[t].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Open a window of topic `t` now; its index, for [`Windows::close`].
    fn open(&self, t: usize) -> usize {
        let mut w = self.topic(t);
        w.push((Instant::now(), None));
        w.len() - 1
    }

    fn close(&self, t: usize, i: usize, at: Instant) {
        if let Some(w) = self.topic(t).get_mut(i) {
            w.1 = Some(at);
        }
    }

    /// Whether a request of topic `t` from `start` to `end` overlapped one of its windows.
    fn overlaps(&self, t: usize, start: Instant, end: Instant) -> bool {
        t < self.per_topic.len()
            && self
                .topic(t)
                .iter()
                .any(|&(open, close)| open <= end && close.is_none_or(|c| c >= start))
    }

    fn clear(&self) {
        for t in 0..self.per_topic.len() {
            self.topic(t).clear();
        }
    }
}

/// The publish observer of a run with topic churn: what the workers tell the fleet still
/// reaches it (`inner`), and refusals are judged against the windows.
struct ChurnObserver {
    inner: Option<Arc<dyn PublishObserver>>,
    windows: Arc<Windows>,
}

impl PublishObserver for ChurnObserver {
    fn published(&self, seq: u64, topic: usize, sent: Instant) {
        if let Some(o) = &self.inner {
            o.published(seq, topic, sent);
        }
    }
    fn accepted(&self, seq: u64, at: Instant) {
        if let Some(o) = &self.inner {
            o.accepted(seq, at);
        }
    }
    fn refusal_expected(&self, topic: usize, start: Instant, end: Instant) -> bool {
        self.windows.overlaps(topic, start, end)
    }
}

/// What every cycle of the run shares.
struct Ctx {
    registry: Arc<dyn TopicRegistry>,
    topics: Vec<Topic>,
    windows: Arc<Windows>,
    subscribers: Option<TopicSubscribers>,
    stats: Mutex<TopicChurnStats>,
}

impl Ctx {
    fn stats(&self) -> std::sync::MutexGuard<'_, TopicChurnStats> {
        self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Topic churn over a run's levels: started with each level, stopped after its last publish.
pub(crate) struct TopicChurnRun {
    ctx: Arc<Ctx>,
    rate: f64,
    running: Mutex<Option<(CancellationToken, JoinHandle<()>)>>,
}

impl TopicChurnRun {
    /// Churn `rate` of `mine` (this process's registered topics) a second through `registry`
    /// (the registration phase's client); `all_topics` is the workload's topic count. With a
    /// fleet, the churned topics' subscribers subscribe again after each re-registration.
    pub(crate) fn new(
        registry: Arc<dyn TopicRegistry>,
        rate: f64,
        mine: &[Topic],
        all_topics: usize,
        subscribers: Option<TopicSubscribers>,
    ) -> Self {
        let windows = Windows {
            per_topic: (0..all_topics).map(|_| Mutex::new(Vec::new())).collect(),
        };
        TopicChurnRun {
            ctx: Arc::new(Ctx {
                registry,
                topics: mine.to_vec(),
                windows: Arc::new(windows),
                subscribers,
                stats: Mutex::new(TopicChurnStats::default()),
            }),
            rate,
            running: Mutex::new(None),
        }
    }

    /// The workers' observer: `inner` (the fleet's tracker, if any) plus the windows.
    pub(crate) fn observer(
        &self,
        inner: Option<Arc<dyn PublishObserver>>,
    ) -> Arc<dyn PublishObserver> {
        Arc::new(ChurnObserver {
            inner,
            windows: self.ctx.windows.clone(),
        })
    }

    /// Start churning for a level (between levels only: the windows of the last are cleared).
    pub(crate) fn open_level(&self) {
        self.ctx.windows.clear();
        *self.ctx.stats() = TopicChurnStats::default();
        let stop = CancellationToken::new();
        let task = tokio::spawn(schedule(self.ctx.clone(), self.rate, stop.clone()));
        *self.running.lock().unwrap_or_else(|e| e.into_inner()) = Some((stop, task));
    }

    /// After the level's last publish returned: start no cycle, let those in flight finish
    /// (each request bounded by the phase client's timeout, each re-subscription by the phase
    /// timeout) so the fleet closes the level on settled subscriptions, and take the level's
    /// counts. Once `cancel` fires the cycles in flight are abandoned instead.
    pub(crate) async fn close_level(&self, cancel: &CancellationToken) -> TopicChurnStats {
        let running = self
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some((stop, mut task)) = running {
            stop.cancel();
            tokio::select! {
                _ = &mut task => {}
                _ = cancel.cancelled() => task.abort(),
            }
        }
        std::mem::take(&mut *self.ctx.stats())
    }
}

/// Ticks `rate` times a second on a fixed schedule (a slow cycle does not slow the rate); each
/// takes the next topic not already in a cycle, round robin.
async fn schedule(ctx: Arc<Ctx>, rate: f64, stop: CancellationToken) {
    crate::engine::rotate(
        ctx.topics.len(),
        rate,
        stop,
        |_| true,
        || ctx.stats().skipped += 1,
        |k| cycle(ctx.clone(), k),
    )
    .await;
}

/// One topic out and back in: deregister, a short dwell, register; then its subscribers
/// subscribe again. `k` is its place in the topic list.
async fn cycle(ctx: Arc<Ctx>, k: usize) {
    let topic = &ctx.topics[k];
    let t = topic.index;
    // Before the deregister request: from here on, refusals and newly accepted events of the
    // topic are the churn's.
    let subs = ctx
        .subscribers
        .as_ref()
        .map_or_else(Vec::new, |s| s.take_out(t));
    let w = ctx.windows.open(t);
    let out = ctx.registry.topic_request(false, &topic.name).await;
    tokio::time::sleep(DWELL).await;
    let back = ctx.registry.topic_request(true, &topic.name).await;
    // Registered again whether this request did it or the hub already had it (409).
    let registered = matches!(back, Outcome::Accepted | Outcome::Http4xx(409));
    if registered {
        ctx.windows.close(t, w, Instant::now());
    }
    {
        let mut s = ctx.stats();
        s.cycles += 1;
        s.deregistered += u64::from(out == Outcome::Accepted);
        s.reregistered += u64::from(back == Outcome::Accepted);
        s.failed += u64::from(out != Outcome::Accepted || !registered);
    }
    if subs.is_empty() {
        return;
    }
    let (ok, failed) = match (&ctx.subscribers, registered) {
        (Some(s), true) => s.bring_back(subs).await,
        // Left out: nothing accepted from the deregistration on is owed them this level.
        _ => (0, subs.len() as u64),
    };
    let mut s = ctx.stats();
    s.resubscribed += ok;
    s.resubscribe_failed += failed;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request overlapping a window (open or closed) is inside; one wholly before or after
    /// a closed window, or of another topic, is not.
    #[test]
    fn a_refusal_is_expected_only_when_its_request_overlaps_a_window() {
        let w = Windows {
            per_topic: (0..2).map(|_| Mutex::new(Vec::new())).collect(),
        };
        let before = Instant::now();
        let i = w.open(0);
        let opened = w.topic(0)[i].0;
        let ms = Duration::from_millis;
        assert!(w.overlaps(0, before, opened), "ends as it opens");
        assert!(w.overlaps(0, opened + ms(5), opened + ms(6)), "still open");
        assert!(!w.overlaps(1, opened, opened + ms(1)), "another topic");
        assert!(!w.overlaps(7, opened, opened + ms(1)), "no such topic");
        w.close(0, i, opened + ms(10));
        assert!(
            w.overlaps(0, opened + ms(10), opened + ms(20)),
            "starts as it closes"
        );
        assert!(!w.overlaps(0, opened + ms(11), opened + ms(20)), "after");
        assert!(
            !w.overlaps(0, opened - ms(2), opened - ms(1)),
            "before (the window opened later)"
        );
        w.clear();
        assert!(
            !w.overlaps(0, opened, opened + ms(10)),
            "cleared at the next level"
        );
    }
}
