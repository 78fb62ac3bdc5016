//! How a level's shared counters are added to: a locked add when its workers may run on
//! several threads at once, a plain load and store when one thread runs them all.
//!
//! A current-thread runtime polls one task at a time on one thread, so no add can come
//! between another's load and store: the count is as exact as with `fetch_add`, without the
//! `lock` prefix that costs tens of cycles a time (bench/README.md, the atomics section).
//! Readers on other threads see whole values either way (the stores are atomic).

use std::sync::atomic::{AtomicU16, AtomicU64, Ordering::Relaxed};

/// Who adds to a level's shared counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Writers {
    /// Workers on several threads at once: every add is an atomic read-modify-write.
    #[default]
    Threads,
    /// Every worker on one thread (a current-thread runtime): an add is a load and a store.
    OneThread,
}

/// One of [`Writers`]' adds: `$name` for an `$atomic` of `$int`.
macro_rules! adder {
    ($name:ident, $atomic:ty, $int:ty) => {
        #[doc = concat!(
                    "Add `n` to an `", stringify!($atomic), "`, wrapping as `fetch_add` does; ",
                    "returns the value before."
                )]
        #[inline(always)]
        pub fn $name(self, c: &$atomic, n: $int) -> $int {
            match self {
                Writers::Threads => c.fetch_add(n, Relaxed),
                Writers::OneThread => {
                    let v = c.load(Relaxed);
                    c.store(v.wrapping_add(n), Relaxed);
                    v
                }
            }
        }
    };
}

impl Writers {
    adder!(add_u64, AtomicU64, u64);
    adder!(add_u16, AtomicU16, u16);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both ways give the same values before and after, wrapping included.
    #[test]
    fn one_thread_adds_as_fetch_add_does() {
        for (start, n) in [(0u64, 1u64), (41, 7), (u64::MAX, 2)] {
            let (a, b) = (AtomicU64::new(start), AtomicU64::new(start));
            assert_eq!(
                Writers::OneThread.add_u64(&a, n),
                Writers::Threads.add_u64(&b, n)
            );
            assert_eq!(a.load(Relaxed), b.load(Relaxed));
        }
        for (start, n) in [(0u16, 1u16), (u16::MAX, 1)] {
            let (a, b) = (AtomicU16::new(start), AtomicU16::new(start));
            assert_eq!(
                Writers::OneThread.add_u16(&a, n),
                Writers::Threads.add_u16(&b, n)
            );
            assert_eq!(a.load(Relaxed), b.load(Relaxed));
        }
    }

    /// Tasks interleaved on a current-thread runtime, each yielding between its adds: the
    /// one-thread adds lose none.
    #[tokio::test]
    async fn tasks_of_a_current_thread_runtime_lose_no_add() {
        let c = std::sync::Arc::new(AtomicU64::new(0));
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let c = c.clone();
                tokio::spawn(async move {
                    for _ in 0..1_000 {
                        Writers::OneThread.add_u64(&c, 1);
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(c.load(Relaxed), 8_000);
    }
}
