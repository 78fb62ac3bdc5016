//! The pool's connection cap and its idle connections under one lock: an exchange takes a
//! slot and the most recent idle connection in one lock round trip, and gives both back in
//! one (docs/http-client.md, "The cap and the idle list").
//!
//! Only an exchange that finds no slot free touches the semaphore: slots given back while
//! some exchange waits are handed to the waiters through it, first come first served.

use std::sync::{Mutex, MutexGuard};

use tokio::sync::Semaphore;
use tokio::time::{timeout_at, Instant};

use super::conn::Conn;

/// The idle connections, each with the instant it expires at (`None`: never, within what an
/// `Instant` holds), most recently used last. Boxed, so taking one and putting it back moves
/// a pointer, and an exchange's state holds 8 bytes for it instead of the whole `Conn`.
type Idle = Vec<(Option<Instant>, Box<Conn>)>;

/// A pool's slots (one per exchange in flight, `max` in all) and its idle connections.
#[derive(Debug)]
pub(crate) struct Slots {
    state: Mutex<State>,
    /// Slots given back while exchanges waited, for them to take; empty otherwise (a slot
    /// left here by a waiter that gave up is taken back by the last one to stop waiting).
    handoff: Semaphore,
}

#[derive(Debug)]
struct State {
    idle: Idle,
    /// Slots neither held by an exchange nor handed off.
    free: usize,
    /// Exchanges waiting on `handoff`. While there is one, `free` is 0: a slot given back
    /// goes to the waiters, never past them to a newcomer.
    waiting: usize,
}

/// One slot, held by an exchange. Dropped, it goes back to the pool (to a waiter first).
#[derive(Debug)]
pub(crate) struct Slot<'a> {
    slots: &'a Slots,
}

impl Slots {
    /// `max` slots, all free, no idle connection.
    pub fn new(max: usize) -> Self {
        Slots {
            state: Mutex::new(State {
                idle: Vec::with_capacity(max),
                free: max,
                waiting: 0,
            }),
            handoff: Semaphore::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave the state inconsistent: each change
        // is one push, pop or count.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A free slot and, with it, the most recently used idle connection that is fresh at
    /// `now` (see [`pop_idle`](Self::pop_idle)); `None` when every slot is taken.
    pub fn try_take(&self, now: Instant) -> Option<(Slot<'_>, Option<Box<Conn>>)> {
        let mut state = self.lock();
        if state.free == 0 {
            return None;
        }
        state.free -= 1;
        let slot = Slot { slots: self };
        Some((slot, pop_fresh(state, now)))
    }

    /// A slot, waiting for one until `limit` when none is free; `None` at the limit.
    pub async fn take_by(&self, limit: Instant) -> Option<Slot<'_>> {
        {
            let mut state = self.lock();
            if state.free > 0 {
                state.free -= 1;
                return Some(Slot { slots: self });
            }
            state.waiting += 1;
        }
        let waiting = Waiting { slots: self };
        let handed = match timeout_at(limit, self.handoff.acquire()).await {
            Ok(Ok(permit)) => {
                // The slot is this exchange's now; the permit only carried it here.
                permit.forget();
                true
            }
            // The semaphore is never closed; treat it like a wait that never ends.
            Ok(Err(_)) | Err(_) => false,
        };
        drop(waiting);
        // Made only when handed: a `Slot` made and dropped would free a slot never taken.
        handed.then(|| Slot { slots: self })
    }

    /// The most recently used idle connection, unless it has been idle too long at `now`;
    /// then it and every older one are closed (outside the lock). One the server closed
    /// while idle is dropped, never written to.
    pub fn pop_idle(&self, now: Instant) -> Option<Box<Conn>> {
        pop_fresh(self.lock(), now)
    }

    /// Idle connections currently kept.
    pub fn idle_count(&self) -> usize {
        self.lock().idle.len()
    }

    /// Close every idle connection now (outside the lock).
    pub fn close_idle(&self) {
        let idle = std::mem::take(&mut self.lock().idle);
        drop(idle);
    }

    /// A slot back: to the first waiter if there is one, else free.
    fn release(&self, state: &mut State) {
        if state.waiting == 0 {
            state.free += 1;
        } else {
            // Under the lock, so a waiter that gives up meanwhile sees it (and takes it back
            // if it was the last one).
            self.handoff.add_permits(1);
        }
    }
}

/// [`Slots::pop_idle`] on the locked state, which it unlocks.
fn pop_fresh(mut state: MutexGuard<'_, State>, now: Instant) -> Option<Box<Conn>> {
    let (expires, conn) = loop {
        let (expires, conn) = state.idle.pop()?;
        if !conn.is_stale() {
            break (expires, conn);
        }
    };
    // An instant compared, not a duration computed: the subtraction cost ~50 instructions
    // of every request.
    if expires.is_none_or(|at| now <= at) {
        return Some(conn);
    }
    let stale = std::mem::take(&mut state.idle);
    drop(state);
    drop((conn, stale));
    None
}

impl Slot<'_> {
    /// Give the slot back with `conn` kept for reuse, in one lock round trip; `since` is when
    /// its last exchange took it. Kept with the instant it expires at, `idle_timeout` later.
    ///
    /// The stack is only ever taken from the top, so after a burst the connections left at
    /// the bottom would stay open (most of them closed by the server by then, held in
    /// CLOSE-WAIT) for as long as the top ones keep being reused. The bottom is the oldest:
    /// those idle too long at `since` are closed here (outside the lock), one compare per
    /// give-back otherwise.
    pub fn give_back(self, conn: Box<Conn>, since: Instant, idle_timeout: std::time::Duration) {
        let slots = self.slots;
        // Released below, with the connection, under the same lock.
        std::mem::forget(self);
        let expires = since.checked_add(idle_timeout);
        let expired = |e: &Option<Instant>| e.is_some_and(|at| at < since);
        let mut state = slots.lock();
        let old = state.idle.first().is_some_and(|(e, _)| expired(e));
        state.idle.push((expires, conn));
        slots.release(&mut state);
        if old {
            let n = state.idle.iter().take_while(|(e, _)| expired(e)).count();
            let gone: Vec<_> = state.idle.drain(..n).collect();
            drop(state);
            drop(gone);
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.slots.release(&mut self.slots.lock());
    }
}

/// An exchange counted in `waiting`; uncounted when the wait ends, however it ends (a
/// dropped send too). The last waiter to leave takes back into `free` any slot handed off
/// that no waiter took (one given back as a waiter's limit passed).
struct Waiting<'a> {
    slots: &'a Slots,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut state = self.slots.lock();
        state.waiting -= 1;
        if state.waiting == 0 {
            while let Ok(permit) = self.slots.handoff.try_acquire() {
                permit.forget();
                state.free += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};
    use std::time::Duration;

    use super::*;

    fn poll_once<F: Future>(f: std::pin::Pin<&mut F>) -> Poll<F::Output> {
        f.poll(&mut Context::from_waker(Waker::noop()))
    }

    fn free(slots: &Slots) -> usize {
        slots.lock().free
    }

    /// `max` slots are taken and no more; a slot dropped is free again.
    #[tokio::test(start_paused = true)]
    async fn the_cap_is_exact() {
        let slots = Slots::new(3);
        let now = Instant::now();
        let held: Vec<_> = (0..3).map(|_| slots.try_take(now).unwrap()).collect();
        assert!(held.iter().all(|(_, conn)| conn.is_none()));
        assert!(slots.try_take(now).is_none());
        let limit = Instant::now() + Duration::from_millis(300);
        assert!(slots.take_by(limit).await.is_none());
        assert_eq!(Instant::now(), limit, "the wait ends at its limit");
        drop(held);
        assert_eq!(free(&slots), 3);
        assert_eq!(slots.lock().waiting, 0);
    }

    /// A slot given back while exchanges wait goes to the first waiter, not to a newcomer,
    /// and the next one to the second.
    #[tokio::test(start_paused = true)]
    async fn a_slot_given_back_goes_to_the_waiters_in_turn() {
        let slots = Slots::new(1);
        let (first, _) = slots.try_take(Instant::now()).unwrap();
        let limit = Instant::now() + Duration::from_secs(1);
        let mut a = pin!(slots.take_by(limit));
        let mut b = pin!(slots.take_by(limit));
        assert!(poll_once(a.as_mut()).is_pending());
        assert!(poll_once(b.as_mut()).is_pending());
        drop(first);
        assert!(
            slots.try_take(Instant::now()).is_none(),
            "no newcomer first"
        );
        assert!(
            poll_once(b.as_mut()).is_pending(),
            "the first waiter's turn"
        );
        let Poll::Ready(Some(got_a)) = poll_once(a.as_mut()) else {
            panic!("the first waiter has the slot")
        };
        drop(got_a);
        let Poll::Ready(Some(got_b)) = poll_once(b.as_mut()) else {
            panic!("the second waiter has the slot")
        };
        assert_eq!((free(&slots), slots.lock().waiting), (0, 0));
        drop(got_b);
        assert_eq!(free(&slots), 1);
    }

    /// A slot handed to a waiter that then stops waiting (its send dropped, or its limit
    /// passed before it ran) is not lost: the pool has all its slots again.
    #[tokio::test(start_paused = true)]
    async fn a_slot_handed_to_a_waiter_that_left_is_taken_back() {
        let slots = Slots::new(2);
        let (one, _) = slots.try_take(Instant::now()).unwrap();
        let (two, _) = slots.try_take(Instant::now()).unwrap();
        {
            let mut w = pin!(slots.take_by(Instant::now() + Duration::from_secs(1)));
            assert!(poll_once(w.as_mut()).is_pending());
            drop(one);
            assert_eq!(free(&slots), 0, "handed to the waiter");
        }
        assert_eq!((free(&slots), slots.lock().waiting), (1, 0));
        drop(two);
        let held: Vec<_> = (0..2)
            .map(|_| slots.try_take(Instant::now()).unwrap())
            .collect();
        assert!(slots.try_take(Instant::now()).is_none());
        drop(held);
    }

    /// Many tasks on a multi-thread runtime taking and giving back slots, some waiting and
    /// some giving up: never more than `max` held at once, and every slot free at the end.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn never_more_than_max_held_under_contention() {
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        use std::sync::Arc;
        const MAX: usize = 3;
        let slots = Arc::new(Slots::new(MAX));
        let held = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..16)
            .map(|i| {
                let (slots, held, most) = (slots.clone(), held.clone(), most.clone());
                tokio::spawn(async move {
                    let mut got = 0u32;
                    for n in 0..300u32 {
                        // Some waits give up at once, most get a slot.
                        let wait = Duration::from_micros(u64::from((n + i) % 4) * 500);
                        let slot = match slots.try_take(Instant::now()) {
                            Some((slot, _)) => Some(slot),
                            None => slots.take_by(Instant::now() + wait).await,
                        };
                        let Some(slot) = slot else { continue };
                        got += 1;
                        let now = held.fetch_add(1, SeqCst) + 1;
                        most.fetch_max(now, SeqCst);
                        tokio::task::yield_now().await;
                        held.fetch_sub(1, SeqCst);
                        drop(slot);
                    }
                    got
                })
            })
            .collect();
        let mut got = 0;
        for t in tasks {
            got += t.await.unwrap();
        }
        assert!(got > 0);
        assert_eq!(most.load(SeqCst), MAX, "the cap was reached and held");
        assert_eq!((free(&slots), slots.lock().waiting), (MAX, 0));
        assert_eq!(slots.handoff.available_permits(), 0);
    }
}
