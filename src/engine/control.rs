//! Steering a run while it goes (`--web`): pause, resume, end the level, change its load, stop.
//!
//! The driver side reads one atomic word per ticket (closed model) or per scheduled send (open
//! model); while it is zero nothing else is looked at. A run without `--web` has no `Control`
//! at all, so its driver reads nothing. Every change is kept as a [`ControlEvent`] for
//! summary.json and handed back to the caller, which says it on stderr.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::plan::Load;

/// `state` bit: paused; no new attempt starts.
const PAUSED: u32 = 1;
/// `state` bit: the current level is to end now.
const END_LEVEL: u32 = 2;
/// `state` bit: this level was steered (a load change or a pause): the slow path stays on
/// for the rest of it, to read the offered load and the time paused.
const STEERED: u32 = 4;

/// One change asked for through the control API, as summary.json keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ControlEvent {
    /// When it took effect, RFC 3339 UTC (ms).
    pub at: String,
    /// When it took effect, Unix ms (the JTL's `timeStamp` clock).
    pub at_unix_ms: u64,
    /// "pause", "resume", "end_level", "stop", "rate" or "concurrency".
    pub action: String,
    /// The new rate (events/s) or concurrency; absent for the other actions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    /// The level it applied to (its label, as in the level table).
    pub level: String,
    /// Who asked: the client's address.
    pub client: String,
}

/// A refused change: the reason, for a 4xx answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// No level is running (before the first, between levels, or after the last).
    #[error("no level is running")]
    NoLevel,
    /// The value is outside the bounds the run was started with.
    #[error("{0}")]
    OutOfBounds(String),
    /// The action does not apply to this level's load model.
    #[error("{0}")]
    WrongModel(&'static str),
}

/// The level being run, as the control sees it.
#[derive(Debug, Clone)]
pub struct LevelNow {
    /// Position in the run, from 0.
    pub index: usize,
    /// The level's label ("200", "500/s").
    pub label: String,
    /// The load the level started with.
    pub started_with: Load,
    /// The load offered now (changed by the control API within bounds).
    pub offered: Load,
    /// Paused now.
    pub paused: bool,
    /// Time spent paused in this level so far (s).
    pub paused_s: f64,
}

#[derive(Debug, Default)]
struct Inner {
    level: Option<(LevelNow, Instant)>,
    paused_since: Option<Instant>,
    paused: Duration,
    /// Open model: the highest rate any level of the run asks for (the bound of a change).
    max_rate: f64,
    /// Closed model: the highest concurrency any level of the run asks for (the bound of a
    /// change; each closed level starts this many workers, those above its load idle).
    max_concurrency: u32,
    events: Vec<ControlEvent>,
}

/// The run's steering wheel, shared by the control API and the engine's driver side.
#[derive(Debug)]
pub struct Control {
    state: AtomicU32,
    /// Bumped on every change, so a pacer asleep on a slot can tell its plan is stale.
    generation: AtomicU64,
    changed: Notify,
    cancel: CancellationToken,
    inner: Mutex<Inner>,
}

/// What the driver side is to do after a look at the control.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Steer {
    /// Go on: `offered` is the load now, `paused` the level's paused time so far (it moves the
    /// level's deadline), `generation` the plan's version.
    Go {
        offered: Load,
        paused: Duration,
        generation: u64,
    },
    /// End the level now.
    End,
}

impl Control {
    /// A control for a run stopped by `cancel`; `max_rate` bounds rate changes (open model).
    pub fn new(cancel: CancellationToken, max_rate: f64) -> Self {
        Control {
            state: AtomicU32::new(0),
            generation: AtomicU64::new(0),
            changed: Notify::new(),
            cancel,
            inner: Mutex::new(Inner {
                max_rate,
                ..Inner::default()
            }),
        }
    }

    /// A control for a run of `levels`: a rate change is bounded by their highest rate, a
    /// concurrency change by their highest concurrency.
    pub fn for_levels(cancel: CancellationToken, levels: &[super::plan::LevelSpec]) -> Self {
        let max_rate = levels
            .iter()
            .filter_map(|l| match l.load {
                Load::Open { rate, .. } => Some(rate),
                Load::Closed { .. } => None,
            })
            .fold(0.0, f64::max);
        let c = Self::new(cancel, max_rate);
        c.inner().max_concurrency = max_concurrency(levels);
        c
    }

    /// Workers a closed level of `concurrency` starts: enough for the highest concurrency a
    /// change may ask for (those above the load now wait until it rises).
    pub(crate) fn closed_workers(&self, concurrency: u32) -> u32 {
        concurrency.max(self.inner().max_concurrency)
    }

    /// The highest rate a change may ask for (events/s; 0 in the closed model).
    pub fn max_rate(&self) -> f64 {
        self.inner().max_rate
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The one load on the driver side: whether anything is steered at all.
    #[inline]
    pub(crate) fn engaged(&self) -> bool {
        self.state.load(Ordering::Acquire) != 0
    }

    /// The plan's version: changes with every control action.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// A new level starts: nothing of the last one's steering carries over (a pause does:
    /// a run paused between levels stays paused).
    pub(crate) fn begin_level(&self, index: usize, label: &str, load: Load) {
        let mut g = self.inner();
        let paused = g.paused_since.is_some();
        if paused {
            g.paused_since = Some(Instant::now());
        }
        g.paused = Duration::ZERO;
        // Workers above a closed level's load idle from its start: the slow path is on.
        let idle = matches!(load, Load::Closed { concurrency } if concurrency < g.max_concurrency);
        g.level = Some((
            LevelNow {
                index,
                label: label.to_string(),
                started_with: load,
                offered: load,
                paused,
                paused_s: 0.0,
            },
            Instant::now(),
        ));
        let state = match (paused, idle) {
            (true, _) => PAUSED | STEERED,
            (false, true) => STEERED,
            (false, false) => 0,
        };
        self.state.store(state, Ordering::Release);
        self.bump();
    }

    /// The level ended; returns the time it spent paused.
    pub(crate) fn end_level(&self) -> Duration {
        let mut g = self.inner();
        let now = Instant::now();
        let mut paused = g.paused;
        if let Some(since) = g.paused_since {
            paused += now.saturating_duration_since(since);
        }
        g.level = None;
        let keep = self.state.load(Ordering::Acquire) & PAUSED;
        self.state.store(keep, Ordering::Release);
        paused
    }

    /// The level now, with its paused time so far; `None` between levels.
    pub fn level(&self) -> Option<(LevelNow, Duration)> {
        let g = self.inner();
        let (mut l, started) = g.level.clone()?;
        let now = Instant::now();
        let paused = g.paused
            + g.paused_since
                .map_or(Duration::ZERO, |s| now.saturating_duration_since(s));
        l.paused = g.paused_since.is_some();
        l.paused_s = paused.as_secs_f64();
        Some((l, now.saturating_duration_since(started)))
    }

    /// Whether the run is paused.
    pub fn is_paused(&self) -> bool {
        self.state.load(Ordering::Acquire) & PAUSED != 0
    }

    /// Whether the run was stopped (by the API or a signal).
    pub fn is_stopped(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Every change so far, in order.
    pub fn events(&self) -> Vec<ControlEvent> {
        self.inner().events.clone()
    }

    fn bump(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.changed.notify_waiters();
    }

    /// Keep `action` as an event, and return it.
    fn note(g: &mut Inner, action: &str, value: Option<f64>, client: &str) -> ControlEvent {
        let now = SystemTime::now();
        let at_unix_ms = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let level = g
            .level
            .as_ref()
            .map_or_else(String::new, |(l, _)| l.label.clone());
        let e = ControlEvent {
            at: humantime::format_rfc3339_millis(now).to_string(),
            at_unix_ms,
            action: action.to_string(),
            value,
            level,
            client: client.to_string(),
        };
        g.events.push(e.clone());
        e
    }

    /// Pause: no attempt starts until [`resume`](Self::resume); those in flight end normally.
    /// `None` when already paused or stopped (nothing recorded).
    pub fn pause(&self, client: &str) -> Option<ControlEvent> {
        let mut g = self.inner();
        if g.paused_since.is_some() || self.is_stopped() {
            return None;
        }
        let e = Self::note(&mut g, "pause", None, client);
        g.paused_since = Some(Instant::now());
        self.state.fetch_or(PAUSED | STEERED, Ordering::AcqRel);
        self.bump();
        Some(e)
    }

    /// Resume after a pause. `None` when not paused.
    pub fn resume(&self, client: &str) -> Option<ControlEvent> {
        let mut g = self.inner();
        let since = g.paused_since.take()?;
        if g.level.is_some() {
            g.paused += Instant::now().saturating_duration_since(since);
        }
        let e = Self::note(&mut g, "resume", None, client);
        self.state.fetch_and(!PAUSED, Ordering::AcqRel);
        self.bump();
        Some(e)
    }

    /// End the current level now and go on with the next.
    pub fn end_current_level(&self, client: &str) -> Result<ControlEvent, Refused> {
        let mut g = self.inner();
        if g.level.is_none() {
            return Err(Refused::NoLevel);
        }
        let e = Self::note(&mut g, "end_level", None, client);
        self.state.fetch_or(END_LEVEL | STEERED, Ordering::AcqRel);
        self.bump();
        Ok(e)
    }

    /// The level ran its course (its deadline passed, or its requests ran out): every worker
    /// still held (paused, or above the concurrency now) ends; no change is recorded.
    pub(crate) fn level_over(&self) {
        if self.state.load(Ordering::Acquire) & END_LEVEL == 0 {
            self.state.fetch_or(END_LEVEL | STEERED, Ordering::AcqRel);
            self.bump();
        }
    }

    /// Record a stop; the caller then stops the run as the first SIGINT does. `None` when
    /// the run is already stopping.
    pub fn stop(&self, client: &str) -> Option<ControlEvent> {
        let mut g = self.inner();
        if self.is_stopped() {
            return None;
        }
        Some(Self::note(&mut g, "stop", None, client))
    }

    /// Change the open model's rate (events/s), within (0, the run's highest level rate].
    pub fn set_rate(&self, rate: f64, client: &str) -> Result<ControlEvent, Refused> {
        let mut g = self.inner();
        let max = g.max_rate;
        let Some((level, _)) = g.level.as_mut() else {
            return Err(Refused::NoLevel);
        };
        let Load::Open { max_inflight, .. } = level.offered else {
            return Err(Refused::WrongModel(
                "a rate applies to the open model; this level is closed (change its concurrency)",
            ));
        };
        if !(rate.is_finite() && rate > 0.0 && rate <= max) {
            return Err(Refused::OutOfBounds(format!(
                "rate must be above 0 and at most {max}/s (the run's highest level)"
            )));
        }
        level.offered = Load::Open { rate, max_inflight };
        let e = Self::note(&mut g, "rate", Some(rate), client);
        self.state.fetch_or(STEERED, Ordering::AcqRel);
        self.bump();
        Ok(e)
    }

    /// Change the closed model's concurrency, within 1 ..= the run's highest level concurrency.
    pub fn set_concurrency(&self, concurrency: u32, client: &str) -> Result<ControlEvent, Refused> {
        let mut g = self.inner();
        let run_max = g.max_concurrency;
        let Some((level, _)) = g.level.as_mut() else {
            return Err(Refused::NoLevel);
        };
        let Load::Closed { concurrency: own } = level.started_with else {
            return Err(Refused::WrongModel(
                "a concurrency applies to the closed model; this level is open (change its rate)",
            ));
        };
        let max = own.max(run_max);
        if concurrency == 0 || concurrency > max {
            return Err(Refused::OutOfBounds(format!(
                "concurrency must be 1 to {max} (the run's highest level concurrency)"
            )));
        }
        level.offered = Load::Closed { concurrency };
        let e = Self::note(&mut g, "concurrency", Some(f64::from(concurrency)), client);
        self.state.fetch_or(STEERED, Ordering::AcqRel);
        self.bump();
        Ok(e)
    }

    /// The slow path, when [`engaged`](Self::engaged): waits while paused (or, closed model,
    /// while `worker` is above the concurrency now), then says what to do. A stop ends the
    /// wait with `Go` (the caller's own stop check follows).
    pub(crate) async fn steer(&self, worker: Option<usize>) -> Steer {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let state = self.state.load(Ordering::Acquire);
            if state & END_LEVEL != 0 {
                return Steer::End;
            }
            let (offered, paused, generation) = {
                let g = self.inner();
                let Some((l, _)) = &g.level else {
                    return Steer::End;
                };
                (l.offered, g.paused, self.generation())
            };
            let idle = match (offered, worker) {
                (Load::Closed { concurrency }, Some(w)) => w >= concurrency as usize,
                _ => false,
            };
            if (state & PAUSED == 0 && !idle) || self.is_stopped() {
                return Steer::Go {
                    offered,
                    paused,
                    generation,
                };
            }
            tokio::select! {
                _ = notified => {}
                _ = self.cancel.cancelled() => {}
            }
        }
    }

    /// Resolves at the next change (for a pacer asleep on a slot).
    pub(crate) async fn changed(&self) {
        self.changed.notified().await
    }
}

/// The highest concurrency of the closed levels among `levels` (0 when none is closed): the
/// bound of a concurrency change.
pub fn max_concurrency(levels: &[super::plan::LevelSpec]) -> u32 {
    levels
        .iter()
        .filter_map(|l| match l.load {
            Load::Closed { concurrency } => Some(concurrency),
            Load::Open { .. } => None,
        })
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(rate: f64) -> Load {
        Load::Open {
            rate,
            max_inflight: 100,
        }
    }

    #[test]
    fn unused_it_is_not_engaged_and_changes_are_bounded() {
        let c = Control::new(CancellationToken::new(), 400.0);
        assert!(!c.engaged());
        assert_eq!(c.set_rate(300.0, "t"), Err(Refused::NoLevel));
        c.begin_level(0, "200/s", open(200.0));
        assert!(!c.engaged());
        assert!(matches!(
            c.set_rate(401.0, "t"),
            Err(Refused::OutOfBounds(_))
        ));
        assert!(matches!(
            c.set_concurrency(3, "t"),
            Err(Refused::WrongModel(_))
        ));
        assert!(!c.engaged(), "a refused change engages nothing");
        assert!(c.events().is_empty());
        c.set_rate(400.0, "127.0.0.1:5").unwrap();
        assert!(c.engaged());
        let e = c.events();
        assert_eq!(e.len(), 1);
        assert_eq!(
            (e[0].action.as_str(), e[0].value, e[0].level.as_str()),
            ("rate", Some(400.0), "200/s")
        );
        assert_eq!(e[0].client, "127.0.0.1:5");
    }

    #[tokio::test(start_paused = true)]
    async fn a_pause_holds_the_driver_until_resume_and_counts_the_time() {
        let c = std::sync::Arc::new(Control::new(CancellationToken::new(), 0.0));
        c.begin_level(0, "4", Load::Closed { concurrency: 4 });
        assert!(c.pause("a").is_some());
        assert!(c.pause("a").is_none(), "already paused");
        let held = tokio::spawn({
            let c = c.clone();
            async move { c.steer(Some(0)).await }
        });
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(!held.is_finished());
        assert!(c.resume("a").is_some());
        match held.await.unwrap() {
            Steer::Go { paused, .. } => assert_eq!(paused, Duration::from_secs(2)),
            s => panic!("{s:?}"),
        }
        assert_eq!(c.end_level(), Duration::from_secs(2));
        let actions: Vec<_> = c.events().into_iter().map(|e| e.action).collect();
        assert_eq!(actions, ["pause", "resume"]);
    }

    /// A level that ran its course ends the workers held above a level's concurrency (a sweep
    /// with a page starts the run's highest), records nothing, and leaves the next level be.
    #[tokio::test(start_paused = true)]
    async fn a_level_over_ends_the_held_workers_and_records_nothing() {
        let c = std::sync::Arc::new(Control::new(CancellationToken::new(), 0.0));
        c.inner().max_concurrency = 2;
        c.begin_level(0, "1", Load::Closed { concurrency: 1 });
        let held = tokio::spawn({
            let c = c.clone();
            async move { c.steer(Some(1)).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!held.is_finished());
        c.level_over();
        assert_eq!(held.await.unwrap(), Steer::End);
        assert!(c.events().is_empty());
        c.end_level();
        c.begin_level(1, "2", Load::Closed { concurrency: 2 });
        assert!(matches!(c.steer(Some(1)).await, Steer::Go { .. }));
    }

    #[tokio::test(start_paused = true)]
    async fn a_lower_concurrency_idles_the_workers_above_it_and_end_level_ends_all() {
        let c = std::sync::Arc::new(Control::new(CancellationToken::new(), 0.0));
        c.begin_level(0, "4", Load::Closed { concurrency: 4 });
        assert!(matches!(
            c.set_concurrency(5, "t"),
            Err(Refused::OutOfBounds(_))
        ));
        c.set_concurrency(2, "t").unwrap();
        assert!(matches!(c.steer(Some(1)).await, Steer::Go { .. }));
        let idle = tokio::spawn({
            let c = c.clone();
            async move { c.steer(Some(3)).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!idle.is_finished());
        c.end_current_level("t").unwrap();
        assert_eq!(idle.await.unwrap(), Steer::End);
        assert_eq!(c.steer(Some(0)).await, Steer::End);
        c.end_level();
        c.begin_level(1, "8", Load::Closed { concurrency: 8 });
        assert!(!c.engaged(), "the next level starts unsteered");
    }

    #[tokio::test(start_paused = true)]
    async fn a_closed_level_below_the_sweeps_top_idles_its_extra_workers_until_raised() {
        let closed = |concurrency| super::super::plan::LevelSpec {
            load: Load::Closed { concurrency },
            stop: super::super::plan::Stop {
                duration: Some(Duration::from_secs(1)),
                requests: None,
            },
            warmup: Duration::ZERO,
            ramp_up: Duration::ZERO,
        };
        let c = std::sync::Arc::new(Control::for_levels(
            CancellationToken::new(),
            &[closed(4), closed(8)],
        ));
        assert_eq!((c.closed_workers(4), c.closed_workers(8)), (8, 8));
        c.begin_level(0, "4", Load::Closed { concurrency: 4 });
        assert!(c.engaged(), "workers 5 to 8 must wait from the start");
        let fifth = tokio::spawn({
            let c = c.clone();
            async move { c.steer(Some(4)).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!fifth.is_finished());
        assert!(matches!(
            c.set_concurrency(9, "t"),
            Err(Refused::OutOfBounds(_))
        ));
        c.set_concurrency(8, "t").unwrap();
        assert!(matches!(fifth.await.unwrap(), Steer::Go { .. }));
        assert!(matches!(c.steer(Some(7)).await, Steer::Go { .. }));
        c.end_level();
        c.begin_level(1, "8", Load::Closed { concurrency: 8 });
        assert!(!c.engaged(), "the sweep's top level has no idle workers");
    }
}
