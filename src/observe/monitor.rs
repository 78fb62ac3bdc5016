//! `GeneratorMonitor`: is hubload itself the bottleneck? Per level, its CPU time as a share
//! of its allowance and how late a 1 ms ticker task on the run's own runtime wakes.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::cpu::{allowance, process_cpu_s};
use crate::report::model::observations::GeneratorLevel;

/// CPU share at or above which a level is generator-bound.
pub const CPU_BOUND: f64 = 0.9;
/// Scheduling delay p99, as a share of the median latency, at or above which a level is
/// generator-bound.
pub const SCHED_BOUND: f64 = 0.1;
/// The ticker's period.
const TICK: Duration = Duration::from_millis(1);
/// Scheduling delay below this (µs) never makes a level generator-bound: on a shared host a
/// thread's wake-ups wander by a millisecond or two whoever runs (measured at load 13 on 2
/// cores: an idle level's p99 1.7 ms beyond its baseline), and a throttled generator shows
/// tens of ms and its CPU share anyway.
pub const SCHED_FLOOR_US: u64 = 2_000;
/// Wake-ups of the idle ticker wanted for its baseline before the first level.
const BASELINE_TICKS: u64 = 50;

/// Watches the process; a level is opened and closed around each level's load.
#[derive(Debug)]
pub struct GeneratorMonitor {
    lateness: Arc<Mutex<Histogram<u64>>>,
    /// The ticker task (`None` outside a runtime: then no scheduling delay is claimed).
    ticker: Option<tokio::task::JoinHandle<()>>,
    allowance: (f64, &'static str),
    /// The idle lateness p99 (µs), taken at the first level's start.
    baseline_p99_us: Mutex<Option<u64>>,
    level: Mutex<Option<(Instant, f64)>>,
}

impl GeneratorMonitor {
    /// Start the ticker task on the current runtime (the one the workers run on); its
    /// wake-ups until the first level are the idle baseline.
    ///
    /// A task, not a thread of its own: a task's wake-up is late when the runtime's threads
    /// are busy, which is the delay the workers' sends see too (the usual event-loop lag
    /// measure), whereas a separate thread only saw the host's scheduler. And a process that
    /// never starts a second thread keeps glibc's single-threaded fast path in `send` and
    /// `recv` (a thread, once made, turns it off for good: ~95 instructions per request).
    pub fn start() -> Self {
        let lateness = Arc::new(Mutex::new(
            Histogram::<u64>::new_with_bounds(1, 60_000_000, 2).expect("valid bounds"),
        ));
        let l = lateness.clone();
        let ticker = tokio::runtime::Handle::try_current()
            .ok()
            .map(|rt| rt.spawn(async move { tick(&l).await }));
        GeneratorMonitor {
            lateness,
            ticker,
            allowance: allowance(),
            baseline_p99_us: Mutex::new(None),
            level: Mutex::new(None),
        }
    }

    /// A level's load starts now. Before the first, the idle baseline is taken (waiting up
    /// to 100 ms for enough wake-ups when the run went straight to its first level).
    pub async fn level_start(&self) {
        let first = self
            .baseline_p99_us
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none();
        if first {
            for _ in 0..10 {
                if self
                    .lateness
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .len()
                    >= BASELINE_TICKS
                {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        let idle = take(&self.lateness);
        if first {
            *self
                .baseline_p99_us
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = Some(idle.value_at_quantile(0.99));
        }
        *self.level.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((Instant::now(), process_cpu_s().unwrap_or(0.0)));
    }

    /// The level's load ended now; `median_latency_us` is the level's median latency.
    pub fn level_end(&self, median_latency_us: u64) -> Option<GeneratorLevel> {
        let (start, cpu0) = self
            .level
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()?;
        let wall = start.elapsed().as_secs_f64();
        let cpu_s = (process_cpu_s().unwrap_or(cpu0) - cpu0).max(0.0);
        let late = take(&self.lateness);
        let p99 = late.value_at_quantile(0.99);
        let baseline = self
            .baseline_p99_us
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .unwrap_or(0);
        let sched = p99.saturating_sub(baseline);
        let (cores, source) = self.allowance;
        let cpu_ratio = if wall > 0.0 && cores > 0.0 {
            cpu_s / (wall * cores)
        } else {
            0.0
        };
        Some(judge(
            GeneratorLevel {
                cpu_s,
                allowance_cores: cores,
                allowance_source: source.to_string(),
                cpu_ratio,
                sched_delay_p99_us: sched,
                sched_baseline_p99_us: baseline,
                late_sends: None,
                bound_because: Vec::new(),
            },
            median_latency_us,
        ))
    }

    /// The CPU share of the level in progress so far (for the exporter), if one is open.
    pub fn cpu_ratio_now(&self) -> Option<f64> {
        let (start, cpu0) = (*self.level.lock().unwrap_or_else(|e| e.into_inner()))?;
        let wall = start.elapsed().as_secs_f64();
        let cpu = process_cpu_s()? - cpu0;
        (wall > 0.0).then(|| cpu / (wall * self.allowance.0))
    }
}

impl Drop for GeneratorMonitor {
    fn drop(&mut self) {
        if let Some(t) = &self.ticker {
            t.abort();
        }
    }
}

/// Fill in why `g` is generator-bound, if it is.
pub fn judge(mut g: GeneratorLevel, median_latency_us: u64) -> GeneratorLevel {
    g.bound_because.clear();
    if g.cpu_ratio >= CPU_BOUND {
        g.bound_because.push(format!(
            "CPU {:.0} % of {:.2} cores ({})",
            g.cpu_ratio * 100.0,
            g.allowance_cores,
            g.allowance_source
        ));
    }
    let limit = median_latency_us as f64 * SCHED_BOUND;
    if g.sched_delay_p99_us >= SCHED_FLOOR_US && g.sched_delay_p99_us as f64 >= limit {
        g.bound_because.push(format!(
            "scheduling delay p99 {} µs ≥ 10 % of the median latency ({} µs)",
            g.sched_delay_p99_us, median_latency_us
        ));
    }
    g
}

/// The histogram's contents, leaving it empty.
fn take(h: &Mutex<Histogram<u64>>) -> Histogram<u64> {
    let mut h = h.lock().unwrap_or_else(|e| e.into_inner());
    let out = h.clone();
    h.reset();
    out
}

/// Sleep 1 ms at a time and record how late each wake-up is, µs, until aborted. (The
/// runtime's timer has a 1 ms resolution, so an idle wake-up is up to 1 ms late: the
/// baseline taken before the first level removes that.)
async fn tick(h: &Mutex<Histogram<u64>>) {
    loop {
        let t0 = Instant::now();
        tokio::time::sleep(TICK).await;
        let late = t0.elapsed().saturating_sub(TICK).as_micros() as u64;
        let _ = h
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .record(late.max(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(cpu_ratio: f64, sched: u64) -> GeneratorLevel {
        GeneratorLevel {
            cpu_ratio,
            allowance_cores: 0.2,
            allowance_source: "cgroup v2".into(),
            sched_delay_p99_us: sched,
            ..GeneratorLevel::default()
        }
    }

    #[test]
    fn bound_at_ninety_percent_cpu_or_a_tenth_of_the_median() {
        assert!(judge(g(0.89, 99), 1000).bound_because.is_empty());
        assert_eq!(
            judge(g(0.9, 0), 1000).bound_because,
            vec!["CPU 90 % of 0.20 cores (cgroup v2)"]
        );
        // 10 % of a 50 ms median, above the floor.
        assert_eq!(judge(g(0.1, 5000), 50_000).bound_because.len(), 1);
        assert!(judge(g(0.1, 4999), 50_000).bound_because.is_empty());
        // Below the floor: scheduling noise, however small the median.
        assert!(judge(g(0.1, 1999), 1000).bound_because.is_empty());
        assert_eq!(judge(g(0.95, 5000), 1000).bound_because.len(), 2);
    }
}
