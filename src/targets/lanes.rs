//! Bounded-concurrency set-up phases that stop on cancellation: `n` lanes pull items in order;
//! no item starts once the token is cancelled, and one in flight then is abandoned.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::future::join_all;
use tokio_util::sync::CancellationToken;

/// Run `f` over `items` on `n` lanes (at least one). Each started item is in the result with
/// `Some(output)`, or `None` when the run was cancelled while it was in flight; items not
/// started before the cancellation are left out. Order is by lane, not by item.
pub async fn run_lanes<'a, I, O, Fut>(
    items: &'a [I],
    n: usize,
    cancel: &CancellationToken,
    f: impl Fn(&'a I) -> Fut,
) -> Vec<(&'a I, Option<O>)>
where
    Fut: Future<Output = O>,
{
    // N lanes pulling indices: bounded concurrency without spawning.
    let next = AtomicUsize::new(0);
    let lanes = (0..n.max(1).min(items.len().max(1))).map(|_| async {
        let mut done = Vec::new();
        while !cancel.is_cancelled() {
            let Some(item) = items.get(next.fetch_add(1, Ordering::Relaxed)) else {
                break;
            };
            let out = tokio::select! {
                biased;
                _ = cancel.cancelled() => None,
                o = f(item) => Some(o),
            };
            done.push((item, out));
        }
        done
    });
    join_all(lanes).await.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Paused time: 10 items of 100 ms on 3 lanes, cancelled at 250 ms. Items 0–5 finish (two
    /// rounds of three), 6–8 are in flight (abandoned), 9 never starts.
    #[tokio::test(start_paused = true)]
    async fn nothing_starts_after_cancel_and_in_flight_items_are_abandoned() {
        let items: Vec<u32> = (0..10).collect();
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(250)).await;
            c.cancel();
        });
        let started = AtomicUsize::new(0);
        let t0 = tokio::time::Instant::now();
        let out = run_lanes(&items, 3, &cancel, |i| {
            started.fetch_add(1, Ordering::Relaxed);
            async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                *i
            }
        })
        .await;
        assert_eq!(t0.elapsed(), Duration::from_millis(250));
        assert_eq!(started.load(Ordering::Relaxed), 9);
        let mut done: Vec<u32> = out.iter().filter_map(|(_, o)| *o).collect();
        done.sort_unstable();
        assert_eq!(done, vec![0, 1, 2, 3, 4, 5]);
        let mut abandoned: Vec<u32> = out
            .iter()
            .filter(|(_, o)| o.is_none())
            .map(|(i, _)| **i)
            .collect();
        abandoned.sort_unstable();
        assert_eq!(abandoned, vec![6, 7, 8]);
    }

    #[tokio::test]
    async fn a_cancelled_token_starts_nothing() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let out = run_lanes(&[1, 2, 3], 2, &cancel, |i| async move { *i }).await;
        assert!(out.is_empty());
    }
}
