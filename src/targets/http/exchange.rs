//! The pool's exchange as one hand-written future: the common case (a free slot, an idle
//! connection, the request written as the socket takes it, a response that arrives whole in
//! one read) is a few small fields polled in place; everything else is handed to the general
//! path, boxed, where it stands.
//!
//! Why by hand: nested `async fn`s each keep their own copy of their arguments and resume
//! point, state that is cold again by the time the connection's next response comes
//! (docs/http-client.md, "The exchange's state").

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::time::Instant;

use super::conn::{Conn, Render, RenderFn, Resume};
use super::slots::Slot;
use super::{HttpPool, Response, Take, TransportError};
use crate::result::TimeoutKind;

/// The pool's two ways into an exchange (here, beside the future they return, so the pool
/// itself never names this module: the exchange calls into the pool, not the other way).
impl HttpPool {
    /// [`send`](Self::send), started at `started` (the caller's clock read, at most the
    /// present), into a caller-owned `Response`, reusing its body and content-type allocations.
    ///
    /// This and [`send_rendered`](Self::send_rendered) hand back the exchange's own future
    /// rather than wrap it in one more: a wrapper's state (its own copy of the arguments) would
    /// be touched on every request too.
    pub fn send_into<'a>(
        &'a self,
        request: &'a [u8],
        started: Instant,
        deadline: Instant,
        resp: &'a mut Response,
    ) -> impl Future<Output = Result<(), TransportError>> + 'a {
        Exchange::new(self, request, started, deadline, resp)
    }

    /// [`send_into`](Self::send_into) with the request rendered by `render` (which appends
    /// head and body to the buffer it is given) only once a connection is ready to take it,
    /// into a buffer of the thread's that is free again as soon as the socket has the bytes:
    /// the form for the hot path. A request that must be sent again on a fresh connection
    /// (a stale keep-alive one refused it) is rendered again, so `render` must give the same
    /// bytes every time.
    /// `started` as for [`send_into`](Self::send_into).
    pub fn send_rendered<'a, F: Fn(&mut Vec<u8>) + Send + Sync + Unpin + 'a>(
        &'a self,
        render: F,
        started: Instant,
        deadline: Instant,
        resp: &'a mut Response,
    ) -> impl Future<Output = Result<(), TransportError>> + 'a {
        Exchange::new(self, RenderFn(render), started, deadline, resp)
    }
}

/// The general path's future, boxed: it is made only off the common case.
type General<'a> = Pin<Box<dyn Future<Output = Result<(), TransportError>> + Send + 'a>>;

/// One exchange through `pool`; what [`HttpPool::send_into`] and
/// [`HttpPool::send_rendered`] return.
pub(crate) struct Exchange<'a, R> {
    pool: &'a HttpPool,
    /// The caller's start: when the exchange takes its connection on the common case (see
    /// the idle timeout in the module docs of `http`).
    started: Instant,
    deadline: Instant,
    state: State<'a, R>,
}

enum State<'a, R> {
    /// Not polled yet.
    Start { request: R, resp: &'a mut Response },
    /// The common case: the request was written as far as the socket took it at once; the
    /// rest is written (`written` then), and the response read. The request is kept to be
    /// sent again on a fresh connection if this one refuses it.
    Sending {
        held: Held<'a>,
        request: R,
        written: bool,
    },
    /// Off the common case: the general path does the rest.
    General(General<'a>),
    /// Finished (polled again, it panics as any finished future may).
    Done,
}

/// What the common case holds between its polls.
struct Held<'a> {
    slot: Slot<'a>,
    conn: Box<Conn>,
    resp: &'a mut Response,
    head_request: bool,
}

impl<'a, R: Render + Send + Sync + 'a> Exchange<'a, R> {
    pub(crate) fn new(
        pool: &'a HttpPool,
        request: R,
        started: Instant,
        deadline: Instant,
        resp: &'a mut Response,
    ) -> Self {
        Self {
            pool,
            started,
            deadline,
            state: State::Start { request, resp },
        }
    }

    /// The common case's start, done at the first poll: a slot and an idle connection
    /// without waiting (one lock round trip), and the request rendered and written. The
    /// state it leaves.
    fn start(&self, request: R, resp: &'a mut Response) -> State<'a, R> {
        let (pool, started, deadline) = (self.pool, self.started, self.deadline);
        // Before anything can fail: a pool wait or a connect that fails reads no byte.
        resp.reset();
        let Some((slot, idle)) = pool.slots.try_take(started) else {
            return State::General(Box::pin(pool.wait_then_exchange(request, deadline, resp)));
        };
        let Some(mut conn) = idle else {
            let new = pool.with_slot(slot, started, Take::Idle(None), request, deadline, resp);
            return State::General(Box::pin(new));
        };
        pool.count_attempt(&conn);
        match conn.begin(&request, resp) {
            Ok(head_request) => State::Sending {
                held: Held {
                    slot,
                    conn,
                    resp,
                    head_request,
                },
                request,
                written: false,
            },
            // Nothing reached the server through a connection it had closed while idle: once
            // more on a fresh one (as `HttpPool::with_slot` does).
            Err(_) => {
                drop(conn);
                let fresh = pool.with_slot(slot, started, Take::Retry, request, deadline, resp);
                State::General(Box::pin(fresh))
            }
        }
    }
}

impl<'a, R: Render + Send + Sync + Unpin + 'a> Future for Exchange<'a, R> {
    type Output = Result<(), TransportError>;

    /// The common case moves the state twice (started, finished): each move is a copy of
    /// it and a drop of what it replaces.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        loop {
            match &mut this.state {
                State::Sending { held, written, .. } => {
                    if !*written {
                        match held.conn.poll_write_rest(cx) {
                            Poll::Ready(Ok(())) => *written = true,
                            // A write error: nothing of the request was acted on; once more,
                            // on a fresh connection.
                            Poll::Ready(Err(_)) => {
                                this.retry();
                                continue;
                            }
                            Poll::Pending => return this.pending(cx),
                        }
                    }
                    match held.conn.poll_first(cx, held.head_request, held.resp) {
                        Poll::Ready(Ok(Some(keep_alive))) => {
                            if let State::Sending { held, .. } = this.take() {
                                let Held { slot, conn, .. } = held;
                                this.pool.finished(slot, conn, keep_alive, this.started);
                            }
                            return Poll::Ready(Ok(()));
                        }
                        Poll::Ready(Ok(None)) => this.split(),
                        // After the request was written: never resent.
                        Poll::Ready(Err(failure)) => {
                            this.state = State::Done;
                            return Poll::Ready(Err(failure.error));
                        }
                        Poll::Pending => return this.pending(cx),
                    }
                }
                State::General(general) => {
                    let polled = general.as_mut().poll(cx);
                    if polled.is_ready() {
                        this.state = State::Done;
                    }
                    return polled;
                }
                State::Start { .. } => {
                    if let State::Start { request, resp } = this.take() {
                        this.state = this.start(request, resp);
                    }
                }
                State::Done => panic!("an exchange polled after it finished"),
            }
        }
    }
}

impl<'a, R: Render + Send + Sync + 'a> Exchange<'a, R> {
    fn take(&mut self) -> State<'a, R> {
        std::mem::replace(&mut self.state, State::Done)
    }

    /// Waiting on the socket in the common case: pending, unless the deadline has passed
    /// (then the connection is dropped, never reused).
    fn pending(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        let State::Sending { held, .. } = &mut self.state else {
            unreachable!("only the common case waits here")
        };
        if held.conn.poll_deadline(cx, self.deadline).is_pending() {
            return Poll::Pending;
        }
        self.state = State::Done;
        Poll::Ready(Err(TransportError::Timeout(TimeoutKind::Response)))
    }

    /// The write failed: the request once more on a fresh connection, by the general path.
    fn retry(&mut self) {
        if let State::Sending { held, request, .. } = self.take() {
            let Held { slot, resp, .. } = held;
            let (started, deadline) = (self.started, self.deadline);
            let fresh = self
                .pool
                .with_slot(slot, started, Take::Retry, request, deadline, resp);
            self.state = State::General(Box::pin(fresh));
        }
    }

    /// The response did not come whole in the first read: the general path reads the rest.
    fn split(&mut self) {
        if let State::Sending { held, .. } = self.take() {
            let Held {
                slot,
                conn,
                resp,
                head_request,
            } = held;
            let from = Resume::FirstRead { head_request };
            let rest = self
                .pool
                .finish_on(slot, self.started, conn, from, self.deadline, resp);
            self.state = State::General(Box::pin(rest));
        }
    }
}
