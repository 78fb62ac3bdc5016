//! Ctrl-C and SIGTERM: the first cancels the run (no new request starts, those in flight are
//! abandoned, the reports of what was measured are written, marked partial) and the process
//! exits 130 within [`STOP_GRACE`] whatever the hub is doing; a second one exits at once (once
//! the report set being written, if any, is whole).

use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// After the first signal the process exits 130 by this time even if something (a stalled
/// report file, a hung DNS lookup) still holds it. The reports then are as of the last
/// finished level or phase: each is written atomically, so none is cut off.
pub const STOP_GRACE: Duration = Duration::from_millis(1500);

/// Exit code of an interrupted run.
const INTERRUPTED: i32 = 130;

/// The longest an exit waits for the report set being written (a few ms on a sane disk; a
/// stalled one is not waited for past this).
const WRITE_GRACE: Duration = Duration::from_secs(2);

/// Exit 130 now, once the report set being written (if any) is complete (see [`WRITE_GRACE`]).
fn exit_interrupted() -> ! {
    crate::report::writer::wait_for_writes(WRITE_GRACE);
    std::process::exit(INTERRUPTED);
}

/// Cancel `token` on the first SIGINT/SIGTERM; exit with 130 on the second, or when the run
/// is still stopping [`STOP_GRACE`] after the first.
pub fn install(token: CancellationToken) {
    let Some(mut signals) = Signals::new() else {
        tracing::warn!("cannot watch SIGINT/SIGTERM: a stop will not write partial reports");
        return;
    };
    tokio::spawn(async move {
        signals.next().await;
        first_stop(&token);
        signals.next().await;
        exit_interrupted();
    });
}

/// Call `first` on the first SIGINT/SIGTERM and exit 130 on the second: a process that stops
/// its own way (`merge --follow` writes what came) with a run's signals and exit code.
pub fn on_first(first: impl FnOnce() + Send + 'static) {
    let Some(mut signals) = Signals::new() else {
        tracing::warn!("cannot watch SIGINT/SIGTERM");
        return;
    };
    tokio::spawn(async move {
        signals.next().await;
        first();
        signals.next().await;
        exit_interrupted();
    });
}

/// What the first SIGINT does, and the control API's stop: cancel `token` (no new request
/// starts, the reports of what was measured are written, marked partial) and exit 130 if the
/// run is still stopping [`STOP_GRACE`] later. Only the first call does anything.
pub fn first_stop(token: &CancellationToken) {
    static STOPPING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if STOPPING.swap(true, std::sync::atomic::Ordering::AcqRel) {
        return;
    }
    crate::console::say!(
        "hubload: interrupted, writing reports for what was measured (press Ctrl-C again to exit now)"
    );
    token.cancel();
    // A thread, not a task: it fires even if the runtime's threads are all blocked.
    let _ = std::thread::Builder::new()
        .name("stop-watchdog".into())
        .spawn(|| {
            std::thread::sleep(STOP_GRACE);
            crate::console::say!(
                "hubload: still stopping after {} ms; exiting now (reports as of the last finished level)",
                STOP_GRACE.as_millis()
            );
            exit_interrupted();
        });
}

/// SIGINT and SIGTERM, watched from install on, so a second signal that arrives while the
/// first is handled is not missed.
struct Signals {
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> Option<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Some(Signals {
                int: signal(SignalKind::interrupt()).ok()?,
                term: signal(SignalKind::terminate()).ok()?,
            })
        }
        #[cfg(not(unix))]
        Some(Signals {})
    }

    async fn next(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}
