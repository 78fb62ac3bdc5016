//! The live page's stream: one `second` record a second (the difference of the engine's live
//! totals, the same counts and histograms the level's row is made of), a `level` record as each
//! level's row is written, a `control` record per change and an `end` record. Every record is
//! kept, so a page opened halfway gets the whole run first (about 300 B a second, 600 B with
//! subscribers, and up to 3 KB more a scrape round of 24 server series).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use super::delivery_feed::{self, DeliveryPrev, DeliverySlot};
use crate::engine::{Control, Live, Load, Totals};
use crate::report::model::server_now::ServerNow;
use crate::stats::{grown_since, new_histogram};

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

/// The generator's CPU as the live page shows it: the process's CPU time, the cores it may
/// use, and the share of them at or above which it is generator-bound (the run's observers
/// judge each level by the same figures).
#[derive(Debug, Clone, Copy)]
pub struct CpuGauge {
    /// CPU seconds the process has used so far.
    pub read: fn() -> Option<f64>,
    /// Cores it may use.
    pub cores: f64,
    /// Share of `cores` at or above which the generator is the bottleneck.
    pub bound: f64,
}

/// What the sampler remembers between seconds: the level it saw and its totals then.
#[derive(Debug)]
struct Prev {
    level: Option<usize>,
    counts: BTreeMap<String, u64>,
    hist: hdrhistogram::Histogram<u64>,
    corrected: hdrhistogram::Histogram<u64>,
    cpu_s: Option<f64>,
    at: Instant,
    delivery: DeliveryPrev,
}

/// What the sampler reads: the engine's live totals, the control, the generator's CPU, the
/// server's series as last scraped and the subscriber fleet's deliveries.
#[derive(Debug)]
pub struct Sources {
    /// The level's live totals.
    pub live: Arc<Live>,
    /// The level now, paused or not.
    pub control: Arc<Control>,
    /// The generator's CPU (`None`: not shown).
    pub cpu: Option<CpuGauge>,
    /// The scraper's rounds (`--server-metrics`, `--server-query`; `None`: not scraped).
    pub server: Option<watch::Receiver<ServerNow>>,
    /// The fleet's view, once there is one (`--subscribers`).
    pub delivery: DeliverySlot,
}

/// Every second from `start` until `last` is cancelled: one `second` record; then one more,
/// of the part of a second since the last one, so the seconds' deliveries add up to the run's.
pub async fn sample(feed: Arc<Feed>, mut src: Sources, start: Instant, last: CancellationToken) {
    let mut tick = tokio::time::interval_at(
        tokio::time::Instant::from_std(start) + Duration::from_secs(1),
        Duration::from_secs(1),
    );
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut prev = Prev {
        level: None,
        counts: BTreeMap::new(),
        hist: new_histogram(),
        corrected: new_histogram(),
        cpu_s: src.cpu.and_then(|c| (c.read)()),
        at: start,
        delivery: DeliveryPrev::default(),
    };
    loop {
        let ended = tokio::select! {
            _ = tick.tick() => false,
            _ = last.cancelled() => true,
        };
        feed.push("second", &second(&mut src, start, &mut prev));
        if ended {
            return;
        }
    }
}

/// Quantile `x` of `h` in ms, or null when it is empty.
fn ms(h: &hdrhistogram::Histogram<u64>, x: f64) -> Value {
    match h.len() {
        0 => Value::Null,
        _ => json!(h.value_at_quantile(x) as f64 / 1000.0),
    }
}

/// The record of the second that just ended.
fn second(src: &mut Sources, start: Instant, prev: &mut Prev) -> Value {
    let (live, control) = (&src.live, &src.control);
    let now = Instant::now();
    let level = control.level();
    let index = level.as_ref().map(|(l, _)| l.index);
    let totals = match index {
        Some(_) => live.totals(),
        None => Totals::empty(),
    };
    let counts = totals.counts.to_map();
    if index != prev.level {
        // A new level: the live totals started again from zero.
        prev.level = index;
        prev.counts.clear();
        prev.hist.reset();
        prev.corrected.reset();
    }
    let mut by_class = BTreeMap::new();
    for (k, v) in &counts {
        let d = v.saturating_sub(prev.counts.get(k).copied().unwrap_or(0));
        if d > 0 {
            by_class.insert(k.clone(), d);
        }
    }
    let lat = grown_since(&totals.latency, &prev.hist);
    let open = matches!(
        level.as_ref().map(|(l, _)| l.offered),
        Some(Load::Open { .. })
    );
    let cor = grown_since(&totals.corrected, &prev.corrected);
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
    // The generator's CPU over this second, as a share of the cores it may use.
    let cpu_s = src.cpu.and_then(|c| (c.read)());
    let cpu = match (src.cpu, cpu_s, prev.cpu_s) {
        (Some(g), Some(a), Some(b)) if g.cores > 0.0 => Some((a - b).max(0.0) / (secs * g.cores)),
        _ => None,
    };
    let pct = |r: f64| (r * 1000.0).round() / 10.0;
    // A round the page has not had yet; null when none came this second.
    let server = match src.server.as_mut() {
        Some(rx) if rx.has_changed().unwrap_or(false) => {
            serde_json::to_value(&*rx.borrow_and_update()).unwrap_or(Value::Null)
        }
        _ => Value::Null,
    };
    let delivery = delivery_feed::second(&src.delivery, &mut prev.delivery);
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
        "p50_ms": ms(&lat, 0.5),
        "p99_ms": ms(&lat, 0.99),
        "corrected_p50_ms": if open { ms(&cor, 0.5) } else { Value::Null },
        "corrected_p99_ms": if open { ms(&cor, 0.99) } else { Value::Null },
        "inflight": if index.is_some() { live.inflight() } else { 0 },
        "cpu_pct": cpu.map(pct),
        "cpu_cores": src.cpu.map(|g| g.cores),
        "generator_bound": match (src.cpu, cpu) {
            (Some(g), Some(r)) => Some(r >= g.bound),
            _ => None,
        },
        "server": server,
        "delivery": delivery,
    });
    prev.counts = counts;
    prev.hist = totals.latency;
    prev.corrected = totals.corrected;
    prev.cpu_s = cpu_s;
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

    /// A process clock that moves by 190 s of CPU per read.
    fn busy_cpu() -> Option<f64> {
        static READS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = READS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(n as f64 * 190.0)
    }

    #[test]
    fn a_second_shows_the_cpu_share_of_that_second_and_judges_it_bound() {
        let control = Arc::new(Control::new(
            tokio_util::sync::CancellationToken::new(),
            0.0,
        ));
        control.begin_level(0, "4", Load::Closed { concurrency: 4 });
        let cpu = CpuGauge {
            read: busy_cpu,
            cores: 2.0,
            bound: 0.9,
        };
        let mut src = Sources {
            live: Arc::new(Live::default()),
            control,
            cpu: Some(cpu),
            server: None,
            delivery: DeliverySlot::default(),
        };
        // A 100 s "second", so the test's own delay (under 50 ms) cannot move the share's
        // first decimal.
        let start = Instant::now() - Duration::from_secs(100);
        let mut prev = Prev {
            level: None,
            counts: BTreeMap::new(),
            hist: new_histogram(),
            corrected: new_histogram(),
            cpu_s: busy_cpu(),
            at: start,
            delivery: DeliveryPrev::default(),
        };
        let v = second(&mut src, start, &mut prev);
        // 190 s of CPU in (just over) 100 s on 2 cores: 95 %, at or above the 90 % bound.
        assert_eq!(v["cpu_pct"], json!(95.0), "{v}");
        assert_eq!(v["cpu_cores"], json!(2.0));
        assert_eq!(v["generator_bound"], json!(true));
        // The closed model has no corrected line.
        assert_eq!(v["corrected_p99_ms"], Value::Null);
        assert_eq!(
            (v["label"].as_str(), v["ended"].as_u64()),
            (Some("4"), Some(0))
        );
    }
}
