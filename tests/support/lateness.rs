//! The deadline tests' bound: an attempt ends by its timeout plus [`MARGIN`] plus however late
//! this machine woke a sleeping thread while the test ran ([`Lateness`]). Shared by the
//! deadline tests of every crate in the workspace.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How far past its timeout an attempt may end on a quiet machine: the timer's wake-up, the
/// close, and the bookkeeping after it.
pub const MARGIN: Duration = Duration::from_millis(50);

/// How late this machine wakes a sleeping thread, watched for as long as it lives: a thread
/// that sleeps 5 ms at a time and keeps the worst overshoot. On a machine so busy that any
/// thread wakes 100 ms late, hubload's timers do too, and that is the machine, not a deadline
/// missed. A deadline broken by hubload (a peer holding an attempt past its timeout) is late
/// by far more than the machine's wake-ups, and still fails.
#[derive(Debug)]
pub struct Lateness {
    worst_us: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Lateness {
    pub fn watch() -> Lateness {
        let worst_us = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (worst, done) = (worst_us.clone(), stop.clone());
        std::thread::spawn(move || {
            const NAP: Duration = Duration::from_millis(5);
            while !done.load(Ordering::Relaxed) {
                let before = Instant::now();
                std::thread::sleep(NAP);
                let over = before.elapsed().saturating_sub(NAP);
                worst.fetch_max(over.as_micros() as u64, Ordering::Relaxed);
            }
        });
        Lateness { worst_us, stop }
    }

    /// The worst overshoot so far.
    pub fn worst(&self) -> Duration {
        Duration::from_micros(self.worst_us.load(Ordering::Relaxed))
    }

    /// The latest an attempt with this `timeout` may end: timeout + [`MARGIN`] + the worst
    /// wake-up so far.
    pub fn bound(&self, timeout: Duration) -> Duration {
        timeout + MARGIN + self.worst()
    }
}

impl Drop for Lateness {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
