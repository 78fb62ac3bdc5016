//! The deliveries one worker holds and their retry schedule: which are due for an attempt,
//! and what each attempt's answer makes of them (final, or a retry after its backoff).
//!
//! Each round sends the due deliveries, oldest first, as many as the connection takes in one
//! write. A failed attempt n is due again `backoff(n)` after its answer, until the policy's
//! attempts are used; a request the callback did not process is due again at once and uses no
//! attempt. So each delivery's attempts and waits are those it would get alone.

use tokio::time::Instant;

use crate::config::RetryPolicy;

/// How one delivery attempt went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// 2xx.
    Delivered,
    /// 410: the subscriber is gone for good.
    Gone,
    /// Anything else (status, timeout, connection error): retry.
    Failed,
}

/// How a delivery ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Final {
    Delivered,
    Gone,
    Failed,
    /// The subscription ended before the delivery did.
    Stopped,
}

#[derive(Debug)]
struct Slot<T> {
    item: T,
    /// Attempts made (answered, or lost with a failed connection).
    tries: u32,
    /// Not to be attempted before this.
    due: Instant,
    end: Option<Final>,
}

/// A worker's deliveries, in the order they were taken.
#[derive(Debug)]
pub(crate) struct Batch<T> {
    slots: Vec<Slot<T>>,
}

impl<T> Default for Batch<T> {
    fn default() -> Self {
        Batch { slots: Vec::new() }
    }
}

impl<T> Batch<T> {
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Add a delivery, due at once.
    pub fn push(&mut self, item: T, now: Instant) {
        self.slots.push(Slot {
            item,
            tries: 0,
            due: now,
            end: None,
        });
    }

    pub fn item(&self, i: usize) -> &T {
        &self.slots[i].item
    }

    /// Attempts slot `i` has made so far (more than 0: its next attempt is a retry).
    pub fn tries(&self, i: usize) -> u32 {
        self.slots[i].tries
    }

    /// Into `out`, the slots due at `now`, oldest first, at most `room`; when none is due,
    /// the instant the first one will be (`None` when the batch is empty).
    pub fn due(&self, now: Instant, room: usize, out: &mut Vec<usize>) -> Option<Instant> {
        out.clear();
        let due = (0..self.slots.len()).filter(|&i| self.slots[i].due <= now);
        out.extend(due.take(room.max(1)));
        if out.is_empty() {
            self.slots.iter().map(|s| s.due).min()
        } else {
            None
        }
    }

    /// Record how slot `i`'s attempt went at `now`: `None` when it was not made (the
    /// request was not processed). A failure is retried after its backoff until the
    /// policy's attempts are used up.
    pub fn settle(&mut self, i: usize, attempt: Option<Attempt>, now: Instant, p: &RetryPolicy) {
        let s = &mut self.slots[i];
        let Some(a) = attempt else {
            s.due = now;
            return;
        };
        s.tries += 1;
        s.end = match a {
            Attempt::Delivered => Some(Final::Delivered),
            Attempt::Gone => Some(Final::Gone),
            Attempt::Failed if s.tries >= p.max_attempts.max(1) => Some(Final::Failed),
            Attempt::Failed => {
                s.due = now + p.backoff(s.tries);
                None
            }
        };
    }

    /// Take out the deliveries that have ended, with their ends, in order.
    pub fn finished(&mut self, mut each: impl FnMut(T, Final)) {
        let mut i = 0;
        while i < self.slots.len() {
            if let Some(end) = self.slots[i].end {
                each(self.slots.remove(i).item, end);
            } else {
                i += 1;
            }
        }
    }

    /// Take out every delivery (the subscription ended).
    pub fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        self.slots.drain(..).map(|s| s.item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 5,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(300),
        }
    }

    fn ms(t0: Instant, t: Instant) -> u64 {
        (t - t0).as_millis() as u64
    }

    /// Drive one batch with `answer(item, attempt number)` deciding each attempt, `room` per
    /// round, on a virtual clock that jumps to the next due instant; returns each item's
    /// attempt times (ms) and its end.
    fn drive(
        items: usize,
        room: usize,
        mut answer: impl FnMut(usize, u32) -> Option<Attempt>,
    ) -> Vec<(Vec<u64>, Final)> {
        let t0 = Instant::now();
        let mut now = t0;
        let mut b = Batch::default();
        for i in 0..items {
            b.push(i, now);
        }
        let mut times = vec![Vec::new(); items];
        let mut ends = vec![None; items];
        let mut due = Vec::new();
        for _round in 0..1000 {
            if b.is_empty() {
                break;
            }
            if let Some(t) = b.due(now, room, &mut due) {
                assert!(t > now);
                now = t;
                continue;
            }
            assert!(due.len() <= room);
            for &i in &due {
                let item = *b.item(i);
                times[item].push(ms(t0, now));
                let a = answer(item, b.tries(i) + 1);
                b.settle(i, a, now, &policy());
            }
            b.finished(|item, end| ends[item] = Some(end));
        }
        times
            .into_iter()
            .zip(ends)
            .map(|(t, e)| (t, e.unwrap()))
            .collect()
    }

    #[test]
    fn backoff_is_exponential_and_capped() {
        // Fails 3 times, then delivered: waits 100, 200, 300 (capped from 400).
        let r = drive(1, 16, |_, n| {
            Some(if n > 3 {
                Attempt::Delivered
            } else {
                Attempt::Failed
            })
        });
        assert_eq!(r, [(vec![0, 100, 300, 600], Final::Delivered)]);
    }

    #[test]
    fn gives_up_after_max_attempts_and_gone_is_not_retried() {
        let r = drive(2, 16, |i, _| Some([Attempt::Failed, Attempt::Gone][i]));
        assert_eq!(
            r,
            [
                (vec![0, 100, 300, 600, 900], Final::Failed),
                (vec![0], Final::Gone)
            ]
        );
    }

    #[test]
    fn each_delivery_keeps_its_own_schedule_in_one_pipeline() {
        // Item 1 fails twice; items 0 and 2 go through at once: item 1's retries are
        // timed as if it had been sent alone.
        let r = drive(3, 16, |i, n| {
            Some(if i == 1 && n <= 2 {
                Attempt::Failed
            } else {
                Attempt::Delivered
            })
        });
        assert_eq!(
            r,
            [
                (vec![0], Final::Delivered),
                (vec![0, 100, 300], Final::Delivered),
                (vec![0], Final::Delivered)
            ]
        );
    }

    #[test]
    fn a_request_not_processed_uses_no_attempt_and_is_due_at_once() {
        // Room 2 per round; the second request of every round is not processed (the
        // callback closes after each answer), so each item is sent again, at once, and
        // every item ends delivered on its first attempt.
        let mut second = false;
        let mut sent = 0;
        let r = drive(3, 2, |_, n| {
            sent += 1;
            assert_eq!(n, 1, "an unprocessed request is not an attempt");
            second = !second;
            second.then_some(Attempt::Delivered)
        });
        assert_eq!(
            r.iter().map(|(_, e)| *e).collect::<Vec<_>>(),
            [Final::Delivered; 3]
        );
        assert!(r.iter().all(|(t, _)| t.iter().all(|&t| t == 0)));
        // Rounds: [0,1] → 0 done, 1 unsent; [1,2] → 1 done, 2 unsent; [2] → done.
        assert_eq!(sent, 5);
        assert_eq!(
            r.iter().map(|(t, _)| t.len()).collect::<Vec<_>>(),
            [1, 2, 2]
        );
    }

    #[test]
    fn due_is_oldest_first_within_room_and_says_when_next() {
        let t0 = Instant::now();
        let mut b = Batch::default();
        for i in 0..5 {
            b.push(i, t0);
        }
        let mut due = Vec::new();
        assert_eq!(b.due(t0, 3, &mut due), None);
        assert_eq!(due, [0, 1, 2]);
        for i in 0..5 {
            b.settle(
                i,
                Some(Attempt::Failed),
                t0 + Duration::from_millis(i as u64),
                &policy(),
            );
        }
        assert_eq!(
            b.due(t0 + Duration::from_millis(50), 3, &mut due),
            Some(t0 + Duration::from_millis(100))
        );
        assert!(due.is_empty());
        assert_eq!(b.due(t0 + Duration::from_millis(102), 3, &mut due), None);
        assert_eq!(due, [0, 1, 2]);
        assert_eq!(b.drain().collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
        assert_eq!(b.due(t0, 3, &mut due), None);
        assert!(b.is_empty());
    }
}
