//! A worker's view of the run's stop: a flag read without a lock before and during every
//! attempt, set by the cancellation token's own wake-up.
//!
//! Why: `CancellationToken::is_cancelled` and a polled `cancelled()` future each take a lock,
//! two or three per attempt. Here the waiter is polled once, with a waker of our own that
//! raises the flag before waking the task; `cancel()` wakes every waiter before it returns,
//! so the flag is up as soon as the token is cancelled.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Wake, Waker};

use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// The flag raised by the token's wake-up, and the task to wake after raising it.
struct Flag {
    fired: AtomicBool,
    task: Waker,
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.fired.store(true, Ordering::Release);
        self.task.wake_by_ref();
    }
}

/// One worker's stop (give it a child token of its own, so its waiter is its alone).
pub(crate) struct StopWatch {
    token: CancellationToken,
    waiter: Pin<Box<WaitForCancellationFutureOwned>>,
    armed: Option<Arc<Flag>>,
    stopped: bool,
}

impl StopWatch {
    pub(crate) fn new(token: CancellationToken) -> Self {
        StopWatch {
            waiter: Box::pin(token.clone().cancelled_owned()),
            token,
            armed: None,
            stopped: false,
        }
    }

    /// Whether the stop has come: a flag load once armed, the token's own check before.
    pub(crate) fn is_stopped(&self) -> bool {
        match &self.armed {
            _ if self.stopped => true,
            Some(flag) => flag.fired.load(Ordering::Acquire),
            None => self.token.is_cancelled(),
        }
    }

    /// [`is_stopped`](Self::is_stopped) from inside a future being polled with `cx`: makes
    /// sure a cancel wakes this task (arming the waiter with its waker when that is new).
    pub(crate) fn poll_stopped(&mut self, cx: &mut Context<'_>) -> bool {
        if self.is_stopped() {
            return true;
        }
        if self
            .armed
            .as_ref()
            .is_some_and(|f| f.task.will_wake(cx.waker()))
        {
            return false;
        }
        let flag = Arc::new(Flag {
            fired: AtomicBool::new(false),
            task: cx.waker().clone(),
        });
        let waker = Waker::from(flag.clone());
        // The waiter checks the token under its lock before it waits: no cancel is missed
        // between the check above and this registration.
        if self
            .waiter
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_ready()
        {
            self.stopped = true;
            return true;
        }
        self.armed = Some(flag);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Poll;

    /// Armed from a pending future, the flag goes up with the cancel itself, and the task is
    /// woken to see it.
    #[tokio::test]
    async fn a_cancel_raises_the_flag_and_wakes_the_armed_task() {
        let token = CancellationToken::new();
        let mut watch = StopWatch::new(token.child_token());
        assert!(!watch.is_stopped());
        let canceller = token.clone();
        let mut polls = 0;
        std::future::poll_fn(|cx| {
            polls += 1;
            if watch.poll_stopped(cx) {
                return Poll::Ready(());
            }
            if polls == 1 {
                // Armed now; cancel from elsewhere: only the token's wake-up can end this.
                assert!(watch.armed.is_some());
                let c = canceller.clone();
                tokio::spawn(async move { c.cancel() });
            }
            Poll::Pending
        })
        .await;
        assert_eq!(polls, 2, "woken once, by the cancel");
        assert!(watch.is_stopped());
        assert!(watch.armed.as_ref().unwrap().fired.load(Ordering::Acquire));
    }

    #[tokio::test]
    async fn a_token_cancelled_before_arming_is_seen() {
        let token = CancellationToken::new();
        let mut watch = StopWatch::new(token.child_token());
        token.cancel();
        assert!(watch.is_stopped());
        let seen = std::future::poll_fn(|cx| Poll::Ready(watch.poll_stopped(cx))).await;
        assert!(seen);
    }
}
