//! The live page's stream: one `second` record a second (the difference of the engine's live
//! totals, the same counts and histograms the level's row is made of), a `level` record as each
//! level's row is written, a `control` record per change and an `end` record. Every record is
//! kept, so a page opened halfway gets the whole run first (about 300 B a second).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::broadcast;

use crate::engine::{Control, Live, Load};
use crate::stats::{new_histogram, Counts};

/// Records kept at most (a day of seconds); past it the oldest seconds are dropped, never
/// the level rows.
const KEEP: usize = 86_400 + 1_000;

/// One record of the stream: its SSE event name and its JSON.
#[derive(Debug, Clone)]
pub struct Record {
    /// `second`, `level`, `control` or `end`.
    pub kind: &'static str,
    /// The record itself.
    pub data: Arc<str>,
}

/// Every record so far, and the channel new ones go out on.
#[derive(Debug)]
pub struct Feed {
    kept: Mutex<(Vec<Record>, Option<Value>)>,
    tx: broadcast::Sender<Record>,
}

impl Default for Feed {
    fn default() -> Self {
        Feed {
            kept: Mutex::new((Vec::new(), None)),
            tx: broadcast::channel(256).0,
        }
    }
}

impl Feed {
    /// Add `data` as a `kind` record and send it to every open page.
    pub fn push(&self, kind: &'static str, data: &Value) {
        let r = Record {
            kind,
            data: data.to_string().into(),
        };
        let mut g = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if g.0.len() >= KEEP {
            if let Some(i) = g.0.iter().position(|r| r.kind == "second") {
                g.0.remove(i);
            }
        }
        if kind == "second" {
            g.1 = Some(data.clone());
        }
        g.0.push(r.clone());
        // Sent under the lock, so a page that subscribes (under it too) misses nothing and
        // gets nothing twice.
        let _ = self.tx.send(r);
    }

    /// Every record so far, and a receiver for the ones after them.
    pub fn subscribe(&self) -> (Vec<Record>, broadcast::Receiver<Record>) {
        let g = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        (g.0.clone(), self.tx.subscribe())
    }

    /// The last `second` record (what the status answer shows of the current second).
    pub fn last_second(&self) -> Option<Value> {
        self.kept
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .1
            .clone()
    }
}

/// The number a load offers: its rate (events/s) or its concurrency.
pub fn offered(load: Load) -> f64 {
    match load {
        Load::Closed { concurrency } => f64::from(concurrency),
        Load::Open { rate, .. } => rate,
    }
}

/// What the sampler remembers between seconds: the level it saw and its totals then.
struct Prev {
    level: Option<usize>,
    counts: BTreeMap<String, u64>,
    hist: hdrhistogram::Histogram<u64>,
    at: Instant,
}

/// Every second from `start` (until the task is aborted): one `second` record.
pub async fn sample(feed: Arc<Feed>, live: Arc<Live>, control: Arc<Control>, start: Instant) {
    let mut tick = tokio::time::interval_at(
        tokio::time::Instant::from_std(start) + Duration::from_secs(1),
        Duration::from_secs(1),
    );
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut prev = Prev {
        level: None,
        counts: BTreeMap::new(),
        hist: new_histogram(),
        at: start,
    };
    loop {
        tick.tick().await;
        feed.push("second", &second(&live, &control, start, &mut prev));
    }
}

/// The record of the second that just ended.
fn second(live: &Live, control: &Control, start: Instant, prev: &mut Prev) -> Value {
    let now = Instant::now();
    let level = control.level();
    let index = level.as_ref().map(|(l, _)| l.index);
    let (counts, hist): (Counts, _) = match index {
        Some(_) => live.totals(),
        None => (Counts::default(), new_histogram()),
    };
    let counts = counts.to_map();
    if index != prev.level {
        // A new level: the live totals started again from zero.
        prev.level = index;
        prev.counts.clear();
        prev.hist.reset();
    }
    let mut by_class = BTreeMap::new();
    for (k, v) in &counts {
        let d = v.saturating_sub(prev.counts.get(k).copied().unwrap_or(0));
        if d > 0 {
            by_class.insert(k.clone(), d);
        }
    }
    let mut delta = hist.clone();
    if delta.subtract(&prev.hist).is_err() {
        delta = hist.clone();
    }
    let secs = now
        .saturating_duration_since(prev.at)
        .as_secs_f64()
        .max(1e-3);
    let ended: u64 = by_class.values().sum();
    let errors: u64 = by_class
        .iter()
        .filter(|(k, _)| k.as_str() != "accepted" && k.as_str() != "expected_refusal")
        .map(|(_, v)| v)
        .sum();
    let q = |x: f64| match delta.len() {
        0 => Value::Null,
        _ => json!(delta.value_at_quantile(x) as f64 / 1000.0),
    };
    let v = json!({
        "t": now.saturating_duration_since(start).as_secs(),
        "level": index,
        "label": level.as_ref().map(|(l, _)| l.label.clone()),
        "level_elapsed_s": level.as_ref().map(|(_, e)| e.as_secs()),
        "paused": control.is_paused(),
        "paused_s": level.as_ref().map(|(l, _)| l.paused_s),
        "offered": level.as_ref().map(|(l, _)| offered(l.offered)),
        "achieved_rps": (ended as f64 / secs * 10.0).round() / 10.0,
        "ended": ended,
        "errors": errors,
        "by_class": by_class,
        "p50_ms": q(0.5),
        "p99_ms": q(0.99),
        "inflight": if index.is_some() { live.inflight() } else { 0 },
    });
    prev.counts = counts;
    prev.hist = hist;
    prev.at = now;
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_late_subscriber_gets_everything_then_the_rest_once() {
        let feed = Feed::default();
        feed.push("second", &json!({"t": 1}));
        feed.push("level", &json!({"label": "10"}));
        let (kept, mut rx) = feed.subscribe();
        feed.push("second", &json!({"t": 2}));
        let kinds: Vec<_> = kept.iter().map(|r| r.kind).collect();
        assert_eq!(kinds, ["second", "level"]);
        let next = rx.recv().await.unwrap();
        assert_eq!(&*next.data, r#"{"t":2}"#);
        assert!(rx.try_recv().is_err());
        assert_eq!(feed.last_second(), Some(json!({"t": 2})));
    }
}
