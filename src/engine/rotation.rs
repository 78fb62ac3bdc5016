//! Churn's schedule: at a fixed rate, one cycle at a time started on the next idle item of a
//! set, round robin (subscription churn's subscribers, topic churn's topics).

use std::future::Future;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Tick `rate` times a second on a fixed schedule (the n-th tick n periods after the start, so
/// a slow cycle does not slow the rate). Each tick starts `cycle(k)` on the next of the `n`
/// items, round robin, that is not in a cycle already and that `eligible` accepts; when there
/// is none, it calls `skipped`. Ends at `stop`, once the cycles in flight have finished.
pub(crate) async fn rotate<F>(
    n: usize,
    rate: f64,
    stop: CancellationToken,
    eligible: impl Fn(usize) -> bool,
    mut skipped: impl FnMut(),
    mut cycle: impl FnMut(usize) -> F,
) where
    F: Future<Output = ()> + Send + 'static,
{
    let period = Duration::from_secs_f64(1.0 / rate);
    let start = Instant::now();
    let mut busy = vec![false; n];
    let mut next = 0usize;
    let mut cycles = JoinSet::new();
    for tick in 1u32.. {
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = tokio::time::sleep_until(start + period * tick) => {}
        }
        while let Some(done) = cycles.try_join_next() {
            if let Ok(k) = done {
                busy[k] = false;
            }
        }
        let Some(k) = (0..n)
            .map(|j| (next + j) % n)
            .find(|&k| !busy[k] && eligible(k))
        else {
            skipped();
            continue;
        };
        next = k + 1;
        busy[k] = true;
        let c = cycle(k);
        cycles.spawn(async move {
            c.await;
            k
        });
    }
    while cycles.join_next().await.is_some() {}
}
