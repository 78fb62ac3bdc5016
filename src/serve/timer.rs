//! A connection's one deadline timer: a future, unless the deadline passes first, whatever the peer sends.

use std::future::Future;
use std::pin::{pin, Pin};
use std::task::Poll;

use tokio::time::{Instant, Sleep};

/// The deadline passed before the future finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Expired;

/// One timer per connection, moved to each new deadline (one timer-wheel entry per
/// connection, not one per read).
#[derive(Debug)]
pub(crate) struct Timer(Pin<Box<Sleep>>);

impl Timer {
    /// A timer, first set to `deadline`.
    pub fn new(deadline: Instant) -> Timer {
        Timer(Box::pin(tokio::time::sleep_until(deadline)))
    }

    /// `fut`'s output, or [`Expired`] once `deadline` has passed.
    ///
    /// The future is polled first, then the timer. A peer whose bytes never stop makes every
    /// read ready until the task's cooperative budget is spent, and a timer polled with no
    /// budget left is always pending: so, as `tokio::time::timeout` does, the timer is then
    /// polled outside the budget (docs/deadlines.md, "What broke it").
    pub async fn within<F: Future>(
        &mut self,
        deadline: Instant,
        fut: F,
    ) -> Result<F::Output, Expired> {
        if self.0.deadline() != deadline {
            self.0.as_mut().reset(deadline);
        }
        let mut fut = pin!(fut);
        let timer = &mut self.0;
        std::future::poll_fn(|cx| {
            if let Poll::Ready(v) = fut.as_mut().poll(cx) {
                return Poll::Ready(Ok(v));
            }
            if tokio::task::coop::has_budget_remaining() {
                return timer.as_mut().poll(cx).map(|()| Err(Expired));
            }
            let unbudgeted = tokio::task::coop::unconstrained(std::future::poll_fn(|cx| {
                timer.as_mut().poll(cx)
            }));
            pin!(unbudgeted).poll(cx).map(|()| Err(Expired))
        })
        .await
    }
}
