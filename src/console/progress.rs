//! The live progress line per level: on a TTY a bar with elapsed/total, current req/s, error %,
//! errors by class and p99 so far; off a TTY one summary line on stderr when the level ends;
//! nothing with --quiet.
//!
//! "p99 so far" is exact to the histogram's 3 significant digits, not sampled: workers flush
//! their attempts into one shared HdrHistogram for the level every 200 ms (`engine::live`), so
//! it lags by at most that.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::engine::{LevelSpec, Live};
use crate::result::Class;

/// A running progress display for one level; `finish` removes it.
#[derive(Debug)]
pub struct LevelProgress {
    bar: ProgressBar,
    task: Option<JoinHandle<()>>,
    /// Off a TTY: print one line at the end (label, start, live counts).
    end_line: Option<(String, Instant, Arc<Live>)>,
}

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A live bar (stderr is a terminal).
    Bar,
    /// One line per level end (stderr is a file or a pipe).
    EndLine,
    /// Nothing (`--quiet`).
    Off,
}

/// How progress should be shown.
pub fn enabled(quiet: bool) -> Mode {
    mode(quiet, std::io::stderr().is_terminal())
}

fn mode(quiet: bool, tty: bool) -> Mode {
    match (quiet, tty) {
        (true, _) => Mode::Off,
        (false, true) => Mode::Bar,
        (false, false) => Mode::EndLine,
    }
}

/// Error % of a count: attempts of an error class (not accepted, not an expected refusal).
fn error_pct(counts: &crate::stats::Counts) -> f64 {
    let n = counts.total();
    if n == 0 {
        0.0
    } else {
        counts.sum_where(Class::is_error) as f64 * 100.0 / n as f64
    }
}

/// The line printed off a TTY when a level ends.
pub fn end_line(label: &str, counts: &crate::stats::Counts, p99_us: u64, secs: f64) -> String {
    let n = counts.total();
    let rps = if secs > 0.0 { n as f64 / secs } else { 0.0 };
    format!(
        "hubload: level {label} done: {n} attempts in {secs:.1}s, {rps:.1} req/s, {:.3}% errors, p99 {} ms",
        error_pct(counts),
        crate::report::precision::ms3(p99_us as f64)
    )
}

impl LevelProgress {
    /// Start showing progress for `spec` as `mode` says.
    pub fn start(mode: Mode, spec: &LevelSpec, live: Arc<Live>) -> Self {
        if mode != Mode::Bar {
            return LevelProgress {
                bar: ProgressBar::hidden(),
                task: None,
                end_line: (mode == Mode::EndLine)
                    .then(|| (spec.load.label(), Instant::now(), live)),
            };
        }
        let total = spec.stop.requests.unwrap_or_else(|| {
            spec.stop
                .duration
                .map_or(0, |d| (d + spec.warmup).as_millis() as u64)
        });
        let by_count = spec.stop.requests.is_some();
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr_with_hz(5));
        let tmpl = if by_count {
            "{prefix:>8} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}"
        } else {
            "{prefix:>8} [{elapsed_precise}] {wide_bar} {msg}"
        };
        bar.set_style(
            ProgressStyle::with_template(tmpl).unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_prefix(spec.load.label());
        let b = bar.clone();
        let started = Instant::now();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(250));
            let mut last = (started, 0u64);
            loop {
                tick.tick().await;
                let (counts, p99) = live.snapshot();
                let n = counts.total();
                let now = Instant::now();
                let rps = (n - last.1) as f64 / now.duration_since(last.0).as_secs_f64().max(1e-3);
                last = (now, n);
                let errs: Vec<String> = Class::ALL
                    .iter()
                    .filter(|c| **c != Class::Accepted && counts.get(**c) > 0)
                    .map(|c| format!("{}={}", c.name(), counts.get(*c)))
                    .collect();
                b.set_position(if by_count {
                    n
                } else {
                    started.elapsed().as_millis() as u64
                });
                b.set_message(format!(
                    "{rps:>8.0} req/s  err {:>6.2}%  p99 {:>6} ms  {}",
                    error_pct(&counts),
                    crate::report::precision::ms3(p99 as f64),
                    if errs.is_empty() {
                        "no errors".to_string()
                    } else {
                        errs.join(" ")
                    }
                ));
            }
        });
        LevelProgress {
            bar,
            task: Some(task),
            end_line: None,
        }
    }

    /// Stop and clear the bar; off a TTY, print the level's line.
    pub fn finish(mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
        self.bar.finish_and_clear();
        if let Some((label, started, live)) = self.end_line.take() {
            let (counts, p99) = live.snapshot();
            let secs = started.elapsed().as_secs_f64();
            crate::console::say!("{}", end_line(&label, &counts, p99, secs));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_wins_then_the_terminal_decides() {
        assert_eq!(mode(true, true), Mode::Off);
        assert_eq!(mode(true, false), Mode::Off);
        assert_eq!(mode(false, true), Mode::Bar);
        assert_eq!(mode(false, false), Mode::EndLine);
    }

    #[test]
    fn the_end_line_names_rate_errors_and_p99() {
        let mut c = crate::stats::Counts::default();
        for _ in 0..3 {
            c.bump(Class::Accepted);
        }
        c.bump(Class::Http503);
        assert_eq!(
            end_line("200", &c, 4213, 2.0),
            "hubload: level 200 done: 4 attempts in 2.0s, 2.0 req/s, 25.000% errors, p99 4.21 ms"
        );
    }
}
