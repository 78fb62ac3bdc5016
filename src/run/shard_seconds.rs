//! A shard's seconds: at each wall-clock second, what ended in the second just gone (the
//! difference of the engine's live totals, as the live page takes it), written to the shard's
//! stream for `merge --follow`'s page. A level's last part is taken as it ends and goes apart
//! in the next record, so a shard's seconds of each level add up to that level's counts.

use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::engine::{Control, Live, LiveLevel, Totals};
use crate::observe::cpu::{allowance, process_cpu_s};
use crate::observe::monitor::CPU_BOUND;
use crate::report::model::server_now::ServerNow;
use crate::result::Class;
use crate::shard::files::SecondsOut;
use crate::shard::{ShardDelivery, ShardSecond};
use crate::stats::{grown_since, new_histogram, to_base64, Counts, Histogram};
use crate::subscriber::DeliveryView;
use crate::web::{take_delivery, DeliveryPrev, DeliverySlot};

/// What a shard's seconds show beside its attempts, as a run's live page does.
#[derive(Debug, Default)]
pub(crate) struct Panels {
    /// `--web`: the shard's steering (its paused marks).
    pub control: Option<Arc<Control>>,
    /// `--subscribers`: the fleet's deliveries.
    pub delivery: Option<DeliveryView>,
    /// Shard 0 with scraping: the scrape rounds.
    pub server: Option<tokio::sync::watch::Receiver<ServerNow>>,
}

/// `h` as base64, or empty when nothing is in it.
fn b64(h: &Histogram) -> String {
    match h.is_empty() {
        true => String::new(),
        false => to_base64(h).unwrap_or_default(),
    }
}

/// What ended since the last record, and where the level's totals stood when last read.
struct State {
    live: Arc<Live>,
    /// The level whose totals `seen` is of.
    level: Option<LiveLevel>,
    seen: Totals,
    /// Ended since the last record.
    counts: Counts,
    latency: Histogram,
    corrected: Histogram,
    /// The level running: its index, label, this shard's offered load, open model or not.
    running: Option<(u32, String, f64, bool)>,
    cpu: (Option<f64>, Instant),
    cores: f64,
    last_at: u64,
    /// The last parts of the levels that ended since the last record.
    ended: Vec<ShardSecond>,
    control: Option<Arc<Control>>,
    /// The fleet's view and what was read of it.
    delivery: Option<(DeliverySlot, DeliveryPrev)>,
    server: Option<tokio::sync::watch::Receiver<ServerNow>>,
}

impl State {
    /// Add what ended since the last read; a level that was replaced gives its last part
    /// first (its stripes are final once the next level is watched).
    fn fold(&mut self) {
        let now = self.live.level();
        if let (Some(old), Some(new)) = (&self.level, &now) {
            if !old.is(new) {
                let old = old.clone();
                self.take(&old);
                self.seen = Totals::empty();
                self.level = None;
            }
        }
        if self.level.is_none() {
            self.level = now;
        }
        if let Some(l) = self.level.clone() {
            self.take(&l);
        }
    }

    fn take(&mut self, l: &LiveLevel) {
        let t = l.totals();
        for &c in Class::ALL.iter() {
            self.counts
                .add(c, t.counts.get(c).saturating_sub(self.seen.counts.get(c)));
        }
        // One layout everywhere, so adding cannot fail on bounds.
        let _ = self
            .latency
            .add(grown_since(&t.latency, &self.seen.latency));
        let _ = self
            .corrected
            .add(grown_since(&t.corrected, &self.seen.corrected));
        self.seen = t;
    }

    /// What ended since the last record (or level end), as a record of the level running
    /// (its `at`, `inflight` and CPU left for the caller).
    fn part(&mut self) -> ShardSecond {
        let (counts, latency, corrected) = (
            std::mem::take(&mut self.counts),
            std::mem::replace(&mut self.latency, new_histogram()),
            std::mem::replace(&mut self.corrected, new_histogram()),
        );
        let open = self.running.as_ref().is_some_and(|r| r.3);
        ShardSecond {
            level: self.running.as_ref().map(|r| r.0),
            label: self.running.as_ref().map(|r| r.1.clone()),
            offered: self.running.as_ref().map(|r| r.2),
            by_class: counts.nonzero_map(),
            latency: b64(&latency),
            corrected: if open { b64(&corrected) } else { String::new() },
            ..ShardSecond::default()
        }
    }

    /// The level running has ended: its last part is kept apart, for the next record.
    fn end_level(&mut self) {
        self.fold();
        let part = self.part();
        self.ended.push(part);
        self.running = None;
    }

    /// The record of wall-clock second `at` (or later, never before the last).
    fn record(&mut self, at: u64) -> ShardSecond {
        self.fold();
        let at = at.max(self.last_at);
        self.last_at = at;
        let now = (process_cpu_s(), Instant::now());
        let share = match (now.0, self.cpu.0) {
            (Some(a), Some(b)) if self.cores > 0.0 => {
                let secs = now.1.saturating_duration_since(self.cpu.1).as_secs_f64();
                Some((a - b).max(0.0) / (secs.max(1e-3) * self.cores))
            }
            _ => None,
        };
        self.cpu = now;
        let mut ended = std::mem::take(&mut self.ended);
        for e in &mut ended {
            e.at = at;
        }
        let delivery = self.delivery.as_mut().and_then(|(slot, prev)| {
            take_delivery(slot, prev).map(|d| ShardDelivery {
                delivered: d.delivered,
                owed: d.owed,
                backlog: d.backlog,
                e2e: b64(&d.e2e_us),
            })
        });
        // A round not written yet; none when none came in the second.
        let server = match self.server.as_mut() {
            Some(rx) if rx.has_changed().unwrap_or(false) => {
                serde_json::to_value(&*rx.borrow_and_update()).ok()
            }
            _ => None,
        };
        ShardSecond {
            at,
            inflight: match (&self.level, &self.running) {
                (Some(_), Some(_)) => self.live.inflight(),
                _ => 0,
            },
            cpu_pct: share.map(|r| (r * 1000.0).round() / 10.0),
            generator_bound: share.map(|r| r >= CPU_BOUND),
            ended,
            paused: self.control.as_ref().map(|c| c.is_paused()),
            delivery,
            server,
            ..self.part()
        }
    }
}

/// The Unix second `t` is in.
fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The thread that writes a shard's seconds, and the run's hooks into it.
pub(crate) struct ShardSeconds {
    state: Arc<Mutex<State>>,
    /// `true`: write the part of a second since the last record, then stop; dropped: stop.
    stop: Option<Sender<bool>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ShardSeconds {
    /// Write a record into `out` at every wall-clock second from now on.
    pub fn start(out: SecondsOut, live: Arc<Live>) -> Self {
        let state = Arc::new(Mutex::new(State {
            live,
            level: None,
            seen: Totals::empty(),
            counts: Counts::default(),
            latency: new_histogram(),
            corrected: new_histogram(),
            running: None,
            cpu: (process_cpu_s(), Instant::now()),
            cores: allowance().0,
            last_at: 0,
            ended: Vec::new(),
            control: None,
            delivery: None,
            server: None,
        }));
        let (tx, rx) = channel();
        let st = state.clone();
        let thread = std::thread::Builder::new()
            .name("shard-seconds".into())
            .spawn(move || loop {
                let now = SystemTime::now();
                let next = unix(now) + 1;
                let wait = (UNIX_EPOCH + Duration::from_secs(next))
                    .duration_since(now)
                    .unwrap_or_default();
                let (at, last) = match rx.recv_timeout(wait) {
                    Err(RecvTimeoutError::Timeout) => (next - 1, false),
                    Ok(true) => (unix(SystemTime::now()), true),
                    Ok(false) | Err(RecvTimeoutError::Disconnected) => return,
                };
                let rec = st.lock().unwrap_or_else(|e| e.into_inner()).record(at);
                if let Err(e) = out.write(rec) {
                    tracing::warn!("cannot write the shard's seconds: {e:#}");
                }
                if last {
                    return;
                }
            })
            .ok();
        ShardSeconds {
            state,
            stop: Some(tx),
            thread,
        }
    }

    /// Show `panels` in the records from now on.
    pub fn with_panels(self, panels: Panels) -> Self {
        {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            s.control = panels.control;
            s.delivery = panels.delivery.map(|v| {
                let slot = DeliverySlot::default();
                slot.set(v);
                (slot, DeliveryPrev::default())
            });
            s.server = panels.server;
        }
        self
    }

    /// Level `index` (`label`, this shard's `offered` load) begins.
    pub fn begin_level(&self, index: usize, label: &str, offered: f64, open: bool) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.running = Some((index as u32, label.to_string(), offered, open));
    }

    /// The level that ran has ended: take its last part now (its stripes are final), to go
    /// apart in the next record, so each level's seconds add up to its counts.
    pub fn end_level(&self) {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .end_level();
    }

    /// Write the part of a second since the last record and stop.
    pub fn finish(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(true);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ShardSeconds {
    fn drop(&mut self) {
        // Stopped without its last part (an error ends the levels): nothing more is written.
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(false);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
