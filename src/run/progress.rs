//! The live progress bar per level (TTY only, silent with --quiet): elapsed/total, req/s,
//! errors by class and p99 so far.

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
}

/// Whether progress should be drawn.
pub fn enabled(quiet: bool) -> bool {
    !quiet && std::io::stderr().is_terminal()
}

impl LevelProgress {
    /// Start drawing for `spec`; a no-op bar when `on` is false.
    pub fn start(on: bool, spec: &LevelSpec, live: Arc<Live>) -> Self {
        if !on {
            return LevelProgress {
                bar: ProgressBar::hidden(),
                task: None,
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
                    "{rps:>8.0} req/s  p99 {:>7.1} ms  {}",
                    p99 as f64 / 1000.0,
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
        }
    }

    /// Stop and clear the bar.
    pub fn finish(mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
        self.bar.finish_and_clear();
    }
}
