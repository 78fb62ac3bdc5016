//! The live page's stream: one `second` record a second and one of each level's last part as
//! it ends (the difference of the engine's live totals, the same counts and histograms the
//! level's row is made of), a `level` record as each level's row is written, a `control`
//! record per change and an `end` record. Every record is kept, so a page opened halfway gets
//! the whole run first (about 300 B a second, 600 B with subscribers, and up to 3 KB more a
//! scrape round of 24 server series).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use super::delivery_feed::{self, DeliveryPrev, DeliverySlot};
use super::json_out::JsonObject;
use crate::engine::{Control, Live, LiveLevel, Load, SecondPart};
use crate::report::model::server_now::ServerNow;
use crate::result::Class;
use crate::stats::{Counts, Histogram};

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
    kept: Mutex<(Vec<Record>, Option<Arc<str>>)>,
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
        self.push_str(kind, data.to_string());
    }

    /// Add `data`, a JSON text, as a `kind` record and send it to every open page.
    pub fn push_str(&self, kind: &'static str, data: String) {
        let r = Record {
            kind,
            data: data.into(),
        };
        let mut g = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if g.0.len() >= KEEP {
            if let Some(i) = g.0.iter().position(|r| r.kind == "second") {
                g.0.remove(i);
            }
        }
        if kind == "second" {
            g.1 = Some(r.data.clone());
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
        let last = self
            .kept
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .1
            .clone()?;
        serde_json::from_str(&last).ok()
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
    counts: Counts,
    /// What ended in the second ([`Live::take_second`]), and its scratch.
    part: SecondPart,
    spare: SecondPart,
    cpu_s: Option<f64>,
    at: Instant,
    delivery: DeliveryPrev,
    /// The stripes of the level whose last part was taken: nothing more is read of them (the
    /// next level may be begun before its own stripes are watched).
    ended: Option<LiveLevel>,
}

impl Prev {
    fn new(cpu_s: Option<f64>, at: Instant) -> Self {
        Prev {
            level: None,
            counts: Counts::default(),
            part: SecondPart::default(),
            spare: SecondPart::default(),
            cpu_s,
            at,
            delivery: DeliveryPrev::default(),
            ended: None,
        }
    }
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

/// What the sampler reads and what it remembers, shared by its ticks and the run's level ends.
#[derive(Debug)]
pub struct Sampler {
    src: Sources,
    prev: Prev,
    start: Instant,
}

impl Sampler {
    /// A sampler of `src` for a run that started at `start`.
    pub fn new(src: Sources, start: Instant) -> Self {
        src.live.keep_seconds();
        let cpu_s = src.cpu.and_then(|c| (c.read)());
        Sampler {
            src,
            prev: Prev::new(cpu_s, start),
            start,
        }
    }

    /// The record of the time since the last one, as JSON text.
    fn second(&mut self) -> String {
        second(&mut self.src, self.start, &mut self.prev)
    }

    /// The level running has ended and its stripes are final: the record of its last part
    /// (the time since the last record), so a level's seconds add up to its row.
    pub fn level_ended(&mut self, feed: &Feed) {
        feed.push_str("second", self.second());
        self.prev.ended = self.src.live.level();
    }
}

/// Lock `s`, whatever a panicking holder left.
pub fn lock(s: &Mutex<Sampler>) -> std::sync::MutexGuard<'_, Sampler> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// Every second from the sampler's start until `last` is cancelled: one `second` record;
/// then one more, of the part of a second since the last one, so the seconds' deliveries add
/// up to the run's.
pub async fn sample(feed: Arc<Feed>, sampler: Arc<Mutex<Sampler>>, last: CancellationToken) {
    let start = lock(&sampler).start;
    let mut tick = tokio::time::interval_at(
        tokio::time::Instant::from_std(start) + Duration::from_secs(1),
        Duration::from_secs(1),
    );
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let ended = tokio::select! {
            _ = tick.tick() => false,
            _ = last.cancelled() => true,
        };
        let record = lock(&sampler).second();
        feed.push_str("second", record);
        if ended {
            return;
        }
    }
}

/// p50 and p99 of `h` in ms, or nulls when it is empty: two of hdrhistogram's scans that sum
/// eight counts at a time, cheaper than its one pass (`value_at_quantiles`) an index at a time.
fn p50_p99_ms(h: &Histogram) -> [Option<f64>; 2] {
    if h.is_empty() {
        return [None, None];
    }
    [0.5, 0.99].map(|q| Some(h.value_at_quantile(q) as f64 / 1000.0))
}

/// The record of the second that just ended, as JSON text.
fn second(src: &mut Sources, start: Instant, prev: &mut Prev) -> String {
    let (live, control) = (&src.live, &src.control);
    let now = Instant::now();
    let level = control.level();
    let index = level.as_ref().map(|(l, _)| l.index);
    if index != prev.level {
        // A new level: its live totals start again from zero.
        prev.level = index;
        prev.counts = Counts::default();
    }
    // Stripes whose last part was taken are not read again: until the new level's are
    // watched, nothing has ended in it.
    let fresh = match (live.level(), &prev.ended) {
        (Some(now), Some(ended)) => !now.is(ended),
        _ => true,
    };
    let (counts, inflight) = match index {
        Some(_) if fresh => live.take_second(&mut prev.part, &mut prev.spare),
        _ => {
            prev.part.reset();
            (prev.counts, 0)
        }
    };
    let grown = |c: Class| counts.get(c).saturating_sub(prev.counts.get(c));
    let (mut ended, mut errors) = (0, 0);
    for c in Class::ALL {
        ended += grown(c);
        errors += if c.is_error() { grown(c) } else { 0 };
    }
    let open = matches!(
        level.as_ref().map(|(l, _)| l.offered),
        Some(Load::Open { .. })
    );
    let lat = p50_p99_ms(&prev.part.latency);
    let cor = match open {
        true => p50_p99_ms(&prev.part.corrected),
        false => [None, None],
    };
    let secs = now
        .saturating_duration_since(prev.at)
        .as_secs_f64()
        .max(1e-3);
    // The generator's CPU over this second, as a share of the cores it may use.
    let cpu_s = src.cpu.and_then(|c| (c.read)());
    let cpu = match (src.cpu, cpu_s, prev.cpu_s) {
        (Some(g), Some(a), Some(b)) if g.cores > 0.0 => Some((a - b).max(0.0) / (secs * g.cores)),
        _ => None,
    };
    let pct = |r: f64| (r * 1000.0).round() / 10.0;
    let mut o = JsonObject::default();
    o.field("t", &now.saturating_duration_since(start).as_secs())
        .field("level", &index)
        .field("label", &level.as_ref().map(|(l, _)| l.label.as_str()))
        .field("level_elapsed_s", &level.as_ref().map(|(_, e)| e.as_secs()))
        .field("paused", &control.is_paused())
        .field("paused_s", &level.as_ref().map(|(l, _)| l.paused_s))
        .field("offered", &level.as_ref().map(|(l, _)| offered(l.offered)))
        .field(
            "achieved_rps",
            &((ended as f64 / secs * 10.0).round() / 10.0),
        )
        .field("ended", &ended)
        .field("errors", &errors)
        .object("by_class", |o| {
            for c in Class::ALL {
                if grown(c) > 0 {
                    o.field(c.name(), &grown(c));
                }
            }
        })
        .field("p50_ms", &lat[0])
        .field("p99_ms", &lat[1])
        .field("corrected_p50_ms", &cor[0])
        .field("corrected_p99_ms", &cor[1])
        .field("inflight", &inflight)
        .field("cpu_pct", &cpu.map(pct))
        .field("cpu_cores", &src.cpu.map(|g| g.cores))
        .field(
            "generator_bound",
            &match (src.cpu, cpu) {
                (Some(g), Some(r)) => Some(r >= g.bound),
                _ => None,
            },
        );
    // A round the page has not had yet; null when none came this second.
    match src.server.as_mut() {
        Some(rx) if rx.has_changed().unwrap_or(false) => {
            o.field("server", &*rx.borrow_and_update());
        }
        _ => {
            o.field("server", &());
        }
    }
    o.field(
        "delivery",
        &delivery_feed::second(&src.delivery, &mut prev.delivery),
    );
    prev.counts = counts;
    prev.cpu_s = cpu_s;
    prev.at = now;
    o.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        let mut prev = Prev::new(busy_cpu(), start);
        let v: Value = serde_json::from_str(&second(&mut src, start, &mut prev)).unwrap();
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
