//! One HTTP/1.1 connection: write a pre-rendered request, read exactly one response off the
//! socket into a reused buffer, and say whether the connection can carry another request.

use std::future::Future;
use std::io;
use std::pin::{pin, Pin};
use std::task::{ready, Context, Poll};

use tokio::time::{Instant, Sleep};

use super::stream::Stream;
use super::{io_error, Response, TransportError, BODY_CAP};
use crate::result::{ConnErrorKind, OtherReason};
use hubload_http1::chunked::{append_capped, Chunked};
use hubload_http1::response::memo::HeadMemo;
use hubload_http1::response::{parse_head, Framing};

/// Longest response head accepted, bytes.
pub(crate) const MAX_HEAD: usize = 64 * 1024;
/// Interim (1xx) responses skipped before one more is an error (`other.unexpected_1xx`), as
/// Go's net/http stops at 5: a server sends one or two (`100 Continue`, `103 Early Hints`),
/// and one that never stops sending them must not keep the attempt parsing heads until its
/// deadline, its task's every poll spent on them while other attempts' timers wait.
pub(crate) const MAX_INTERIM: u32 = 5;
/// The thread's read buffer size, and the least free space offered to each read into a
/// connection's own buffer, bytes.
const READ_CHUNK: usize = 8 * 1024;

/// A request to write, rendered into the thread's write buffer just before it is written.
pub(crate) trait Render {
    /// Append the complete request (head and body) to `out`.
    fn render(&self, out: &mut Vec<u8>);
}

impl Render for [u8] {
    fn render(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self);
    }
}

impl<T: Render + ?Sized> Render for &T {
    fn render(&self, out: &mut Vec<u8>) {
        (**self).render(out);
    }
}

/// A closure as a [`Render`].
pub(crate) struct RenderFn<F>(pub F);

impl<F: Fn(&mut Vec<u8>)> Render for RenderFn<F> {
    fn render(&self, out: &mut Vec<u8>) {
        (self.0)(out);
    }
}

/// A write buffer that grew past this (a large event) is freed after use rather than kept.
const WRITE_BUF_KEPT: usize = 64 * 1024;

thread_local! {
    /// Where requests are rendered and written from: one per thread, so the bytes a request is
    /// written from are the same few cache lines every time, however many connections are
    /// open. A request is held past its write only when the socket did not take all of it
    /// (then the rest is kept in its connection's `unsent`).
    static WRITE_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };

    /// Where the first read of every response goes: one per thread, for the same reason. A
    /// response found whole in it is parsed there and its bytes never touch the connection;
    /// only a response split across reads (or followed by bytes nobody asked for) is copied
    /// into its connection's own buffer, which is then read into until the response is done.
    ///
    /// With it, the last head the thread parsed ([`HeadMemo`]): a server's heads repeat.
    static READ_BUF: std::cell::RefCell<(Box<[u8]>, HeadMemo)> =
        std::cell::RefCell::new((vec![0; READ_CHUNK].into_boxed_slice(), HeadMemo::default()));
}

/// Why an exchange failed, and whether a retry on a fresh connection is safe.
#[derive(Debug)]
pub(crate) struct Failure {
    pub error: TransportError,
    /// Writing the request failed: the server cannot have acted on it (a keep-alive
    /// connection it had already closed), so one retry on a fresh connection is safe. Once the
    /// request is written, a POST is never resent (as Go's net/http does for non-idempotent
    /// requests): the server may have processed it, and a load tester must count what it sent.
    pub unsent: bool,
}

/// An open connection with its carry-over buffer.
#[derive(Debug)]
pub(crate) struct Conn {
    stream: Stream,
    /// A response that did not arrive whole in one read: bytes read but not yet consumed are
    /// `buf[pos..]`. Unallocated while every response comes in one read.
    buf: Vec<u8>,
    pos: usize,
    /// Whether this connection has already carried a complete exchange.
    pub reused: bool,
    /// Which of the pool's addresses this connection goes to.
    pub addr: usize,
    /// The timer of the exchange in progress, kept from one exchange to the next (a new timer
    /// per exchange is a registration in the runtime's timer wheel and a removal from it),
    /// and moved lazily: see [`exchange_by`](Self::exchange_by).
    timer: DeadlineTimer,
    /// The part of the request in progress the socket did not take at once (usually empty),
    /// and how much of it has been written since.
    unsent: Vec<u8>,
    sent: usize,
}

/// Where [`Conn::finish`] takes an exchange up.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Resume {
    /// [`Conn::begin`] wrote what the socket took at once.
    Written { head_request: bool },
    /// [`Conn::poll_first`] found the response split: its first bytes are in the buffer.
    FirstRead { head_request: bool },
}

impl Conn {
    pub(crate) fn new(stream: Stream, addr: usize) -> Self {
        Self {
            stream,
            buf: Vec::new(),
            pos: 0,
            reused: false,
            addr,
            timer: DeadlineTimer::default(),
            unsent: Vec::new(),
            sent: 0,
        }
    }

    /// [`exchange`](Self::exchange), bounded by `deadline`: `None` when it ran out first (the
    /// exchange is abandoned and the connection must not be reused).
    pub(crate) async fn exchange_by<R: Render + ?Sized>(
        &mut self,
        deadline: Instant,
        request: &R,
        resp: &mut Response,
    ) -> Option<Result<bool, Failure>> {
        match self.begin(request, resp) {
            Err(failure) => Some(Err(failure)),
            Ok(head_request) => {
                self.finish_by(deadline, Resume::Written { head_request }, resp)
                    .await
            }
        }
    }

    /// [`finish`](Self::finish), bounded by `deadline` as [`exchange_by`](Self::exchange_by).
    pub(crate) async fn finish_by(
        &mut self,
        deadline: Instant,
        from: Resume,
        resp: &mut Response,
    ) -> Option<Result<bool, Failure>> {
        // The timer is out of the connection while the exchange borrows it, and put back after.
        let mut timer = std::mem::take(&mut self.timer);
        let out = {
            let mut exchange = pin!(self.finish(from, resp));
            // As `tokio::time::timeout_at`: the exchange first, then the deadline.
            std::future::poll_fn(|cx| {
                if let Poll::Ready(r) = exchange.as_mut().poll(cx) {
                    return Poll::Ready(Some(r));
                }
                timer.poll(cx, deadline).map(|()| None)
            })
            .await
        };
        self.timer = timer;
        out
    }

    /// Whether `deadline` has passed, from inside a future polled with `cx` (which is woken
    /// then); the connection's timer is made on the first use and kept for the next exchange.
    pub(crate) fn poll_deadline(&mut self, cx: &mut Context<'_>, deadline: Instant) -> Poll<()> {
        self.timer.poll(cx, deadline)
    }

    /// Tests: bytes the scripted peer has not handed over yet.
    #[cfg(test)]
    pub(crate) fn scripted_bytes_left(&self) -> usize {
        match &self.stream {
            Stream::Script(pieces) => pieces.iter().map(Vec::len).sum(),
            _ => 0,
        }
    }

    /// Tests: the capacity of the carry-over buffer (0 while no response was split).
    #[cfg(test)]
    pub(crate) fn carry_capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// True when the idle connection cannot carry a request: the peer closed or reset it, or
    /// sent bytes nobody asked for (a `408` before closing, a TLS close_notify).
    pub(crate) fn is_stale(&self) -> bool {
        self.stream.is_stale()
    }

    /// Send `request` and read one response into `resp`. `Ok(true)` means the connection is
    /// clean and may be reused. `resp.bytes_received` counts every byte read, as it is read,
    /// so it is right on failure too (and when the caller's deadline drops this future).
    ///
    /// Every limit is applied to the bytes, never to how they arrived: the head parser sees
    /// at most the first [`MAX_HEAD`] bytes of a head, so a head is too large exactly when
    /// those bytes hold no complete head, however the reads split them.
    ///
    /// [`begin`](Self::begin), then [`finish`](Self::finish); the pool's hand-written
    /// exchange runs the same steps by their polls ([`poll_write_rest`](Self::poll_write_rest),
    /// [`poll_first`](Self::poll_first)) and hands over to `finish` where they end.
    #[cfg(test)]
    pub(crate) async fn exchange<R: Render + ?Sized>(
        &mut self,
        request: &R,
        resp: &mut Response,
    ) -> Result<bool, Failure> {
        resp.reset();
        let head_request = self.begin(request, resp)?;
        self.finish(Resume::Written { head_request }, resp).await
    }

    /// Start an exchange: clear the carry-over buffer, render `request` into the thread's
    /// write buffer and write as much of it as the socket takes at once (the rest is kept in
    /// `unsent`). Returns whether it is a `HEAD` request (its response has no body). An error
    /// here is a write error: nothing of the request reached the server. `resp` was reset by
    /// the exchange's start ([`Response::reset`], before anything could fail), and only
    /// `request_bytes` is set here.
    pub(crate) fn begin<R: Render + ?Sized>(
        &mut self,
        request: &R,
        resp: &mut Response,
    ) -> Result<bool, Failure> {
        self.buf.clear();
        self.pos = 0;
        self.sent = 0;
        let stream = &mut self.stream;
        let unsent = &mut self.unsent;
        unsent.clear();
        let rendered = &mut resp.request_bytes;
        WRITE_BUF
            .with_borrow_mut(|buf| {
                buf.clear();
                request.render(buf);
                *rendered = buf.len() as u64;
                let n = stream.write_now(buf)?;
                unsent.extend_from_slice(&buf[n..]);
                let head_request = buf.starts_with(b"HEAD ");
                if buf.capacity() > WRITE_BUF_KEPT {
                    *buf = Vec::new();
                }
                Ok::<_, io::Error>(head_request)
            })
            .map_err(|e| unsent_failure(&e))
    }

    /// Write what [`begin`](Self::begin) left and push it out (ready at once when nothing
    /// was left, for plain TCP). An error is still a write error.
    pub(crate) fn poll_write_rest(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Failure>> {
        self.stream
            .poll_finish_write(cx, &self.unsent, &mut self.sent)
            .map_err(|e| unsent_failure(&e))
    }

    /// The rest of an exchange after `from`: the write's remainder and the first read (when
    /// `from` is [`Resume::Written`]), then the rest of a response that did not come whole.
    pub(crate) async fn finish(
        &mut self,
        from: Resume,
        resp: &mut Response,
    ) -> Result<bool, Failure> {
        let head_request = match from {
            Resume::Written { head_request } => {
                std::future::poll_fn(|cx| self.poll_write_rest(cx)).await?;
                let first = std::future::poll_fn(|cx| self.poll_first(cx, head_request, resp));
                if let Some(keep_alive) = first.await? {
                    return Ok(keep_alive);
                }
                head_request
            }
            Resume::FirstRead { head_request } => head_request,
        };

        // The response did not come whole in the first read: its bytes are in `buf`, and the
        // rest is read after them. The head; informational 1xx heads (100 Continue, 103 Early
        // Hints) are skipped.
        let mut interim = 0;
        let head = loop {
            let window = (self.buf.len() - self.pos).min(MAX_HEAD);
            if window == 0 {
                // Nothing to parse yet (an empty head is incomplete): read first.
                self.fill(&mut resp.bytes_received).await?;
                continue;
            }
            let bytes = &self.buf[self.pos..self.pos + window];
            match parse_head(bytes, head_request, &mut resp.content_type) {
                Err(reason) => return Err(protocol(reason.into())),
                Ok(Some(h)) => {
                    self.pos += h.len;
                    if (100..200).contains(&h.status) && h.status != 101 {
                        interim += 1;
                        if interim > MAX_INTERIM {
                            return Err(protocol(OtherReason::Unexpected1xx));
                        }
                        continue;
                    }
                    if h.server_timing {
                        super::head_server_timing::read(&bytes[..h.len], &mut resp.server_timing);
                    }
                    if Response::reads_retry_after(h.status) {
                        super::head_retry_after::read(&bytes[..h.len], &mut resp.retry_after);
                    }
                    break h;
                }
                Ok(None) if window == MAX_HEAD => return Err(protocol(OtherReason::HeadTooLarge)),
                Ok(None) => self.fill(&mut resp.bytes_received).await?,
            }
        };
        resp.status = head.status;
        let mut keep_alive = head.keep_alive && head.status != 101;

        match head.framing {
            Framing::Empty => {}
            Framing::Length(mut left) => loop {
                let avail = &self.buf[self.pos..];
                let n = avail.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                append_capped(&mut resp.body, &avail[..n], BODY_CAP);
                self.pos += n;
                left -= n as u64;
                if left == 0 {
                    break;
                }
                self.fill(&mut resp.bytes_received).await?;
            },
            Framing::Chunked => {
                let mut dec = Chunked::default();
                loop {
                    let n = dec
                        .decode(&self.buf[self.pos..], &mut resp.body, BODY_CAP)
                        .map_err(|_| protocol(OtherReason::BadChunk))?;
                    self.pos += n;
                    if dec.is_done() {
                        break;
                    }
                    self.fill(&mut resp.bytes_received).await?;
                }
            }
            Framing::UntilClose => loop {
                let avail = &self.buf[self.pos..];
                append_capped(&mut resp.body, avail, BODY_CAP);
                self.pos = self.buf.len();
                match self.read_more(&mut resp.bytes_received).await {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) => return Err(read_failure(&e)),
                }
            },
        }
        // Bytes beyond the response were never asked for: the stream is out of step.
        if self.pos != self.buf.len() {
            keep_alive = false;
        }
        Ok(keep_alive)
    }

    /// The first read of a response, into the thread's read buffer: `Some(keep_alive)` when
    /// the whole response was in it (parsed there; the connection's buffer is not touched),
    /// `None` when it was not (its bytes are copied into `buf`, and `resp` is as it was: go
    /// on with [`finish`](Self::finish) from [`Resume::FirstRead`]).
    pub(crate) fn poll_first(
        &mut self,
        cx: &mut Context<'_>,
        head_request: bool,
        resp: &mut Response,
    ) -> Poll<Result<Option<bool>, Failure>> {
        let stream = &mut self.stream;
        let carry = &mut self.buf;
        READ_BUF.with_borrow_mut(|(buf, memo)| {
            let n = match ready!(stream.poll_read_into(cx, buf)) {
                Ok(0) => return Poll::Ready(Err(closed())),
                Ok(n) => n,
                Err(e) => return Poll::Ready(Err(read_failure(&e))),
            };
            resp.bytes_received += n as u64;
            let bytes = &buf[..n];
            if let Some(keep_alive) = whole_response(bytes, head_request, resp, memo) {
                return Poll::Ready(Ok(Some(keep_alive)));
            }
            resp.body.clear();
            // Read again with the head below.
            resp.server_timing = crate::result::ServerTimings::NONE;
            resp.retry_after = crate::result::RetryAfter::NONE;
            carry.extend_from_slice(bytes);
            Poll::Ready(Ok(None))
        })
    }

    /// Read more bytes for a response that is not complete; EOF is an error here.
    async fn fill(&mut self, received: &mut u64) -> Result<(), Failure> {
        match self.read_more(received).await {
            Ok(0) => Err(closed()),
            Ok(_) => Ok(()),
            Err(e) => Err(read_failure(&e)),
        }
    }

    /// One read into the free space after the unconsumed bytes, counted into `received`.
    /// Returns the bytes read.
    async fn read_more(&mut self, received: &mut u64) -> io::Result<usize> {
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        } else if self.pos > 0 && self.buf.capacity() - self.buf.len() < READ_CHUNK / 2 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.reserve(READ_CHUNK / 2);
        let n = self.stream.read_buf(&mut self.buf).await?;
        *received += n as u64;
        Ok(n)
    }
}

/// The response in `bytes` when they hold all of it, read as [`Conn::exchange`] reads it
/// from its buffer: `Some(keep_alive)`, with `resp`'s status, content type and body set.
/// `None` when more bytes are needed, the body runs until the connection closes, or the
/// bytes are malformed: then the exchange reads them again from the connection's buffer,
/// which gives every verdict and error (`resp.body` may hold a partial body, to be cleared).
/// Heads are parsed through the thread's `memo`, which gives the parser's own verdicts.
fn whole_response(
    bytes: &[u8],
    head_request: bool,
    resp: &mut Response,
    memo: &mut HeadMemo,
) -> Option<bool> {
    let mut pos = 0;
    let mut interim = 0;
    let head = loop {
        if pos == bytes.len() {
            return None;
        }
        let head = memo
            .parse(&bytes[pos..], head_request, &mut resp.content_type)
            .ok()??;
        pos += head.len;
        if !(100..200).contains(&head.status) || head.status == 101 {
            let at = pos - head.len;
            if head.server_timing {
                super::head_server_timing::read(&bytes[at..pos], &mut resp.server_timing);
            }
            if Response::reads_retry_after(head.status) {
                super::head_retry_after::read(&bytes[at..pos], &mut resp.retry_after);
            }
            break head;
        }
        // Too many: the connection's buffer gives the verdict.
        interim += 1;
        if interim > MAX_INTERIM {
            return None;
        }
    };
    let body = &bytes[pos..];
    let used = match head.framing {
        Framing::Empty => 0,
        Framing::Length(len) => {
            let len = usize::try_from(len).ok().filter(|&n| n <= body.len())?;
            append_capped(&mut resp.body, &body[..len], BODY_CAP);
            len
        }
        Framing::Chunked => {
            let mut dec = Chunked::default();
            let used = dec.decode(body, &mut resp.body, BODY_CAP).ok()?;
            if !dec.is_done() {
                return None;
            }
            used
        }
        Framing::UntilClose => return None,
    };
    resp.status = head.status;
    // Bytes beyond the response were never asked for: the stream is out of step.
    Some(head.keep_alive && head.status != 101 && pos + used == bytes.len())
}

/// A connection's deadline timer ([`poll_deadline`]), and which task it wakes.
///
/// Polling a timer registers the task's waker with it: two atomic read-modify-writes in the
/// runtime's timer (its waker slot's lock and unlock), each worth tens of plain instructions.
/// A connection is usually taken again by the task that just gave it back (the pool's idle
/// stack is last in, first out), so the timer is usually registered already, for this task,
/// at a deadline no later than this exchange's: then polling it again changes nothing, and
/// is skipped. It is polled as before whenever the task differs, the deadline would move
/// earlier, or the timer has fired (its wake-up is then due to this exchange).
#[derive(Debug, Default)]
pub(crate) struct DeadlineTimer {
    sleep: Option<Pin<Box<Sleep>>>,
    /// The waker (its data and vtable addresses) the timer holds since its last poll, which
    /// left it pending; `None` when that is not known.
    armed: Option<(usize, usize)>,
}

impl DeadlineTimer {
    /// [`poll_deadline`] on this timer, skipped when it would change nothing (see above).
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>, deadline: Instant) -> Poll<()> {
        let task = waker_id(cx.waker());
        if let (Some(sleep), Some(armed)) = (&self.sleep, self.armed) {
            // The timer holds a clone of that waker, which keeps its task (and so the
            // addresses) alive: equal addresses are this task's waker.
            if armed == task && sleep.deadline() <= deadline && !sleep.is_elapsed() {
                return Poll::Pending;
            }
        }
        let polled = poll_deadline(&mut self.sleep, cx, deadline);
        self.armed = polled.is_pending().then_some(task);
        polled
    }
}

/// A waker's identity, as [`std::task::Waker::will_wake`] compares them.
fn waker_id(w: &std::task::Waker) -> (usize, usize) {
    (w.data() as usize, std::ptr::from_ref(w.vtable()) as usize)
}

/// [`Conn::poll_deadline`] on a timer kept in `timer` (made on first use).
///
/// The timer is moved only when it would fire late. Each exchange normally has a later
/// deadline than the last (a later start, the same timeout), so the timer keeps the earlier
/// one, and when that fires during this exchange it is moved to this deadline then: about
/// once per timeout per connection instead of once per exchange (a reset cost ~170
/// instructions of every request). The exchange still ends exactly at its own deadline.
///
/// The exchange polled just before may have spent the task's whole cooperative budget: a peer
/// whose bytes never stop (an endless run of `100 Continue` heads, say) makes every read ready
/// until the budget is gone, and a timer polled without budget is always pending, so the
/// deadline was never seen while the flood lasted (20 s past a 1 s timeout). As
/// `tokio::time::timeout` does, the timer is then polled outside the budget. While budget
/// remains (every exchange that waits on its socket), this costs one thread-local read.
pub(crate) fn poll_deadline(
    timer: &mut Option<Pin<Box<Sleep>>>,
    cx: &mut Context<'_>,
    deadline: Instant,
) -> Poll<()> {
    let timer = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
    if deadline < timer.deadline() {
        timer.as_mut().reset(deadline);
    }
    if tokio::task::coop::has_budget_remaining() {
        return poll_timer(timer, cx, deadline);
    }
    let unbudgeted = tokio::task::coop::unconstrained(std::future::poll_fn(|cx| {
        poll_timer(timer, cx, deadline)
    }));
    pin!(unbudgeted).poll(cx)
}

/// Poll `timer` until it has fired for `deadline` (see [`poll_deadline`]).
fn poll_timer(timer: &mut Pin<Box<Sleep>>, cx: &mut Context<'_>, deadline: Instant) -> Poll<()> {
    loop {
        ready!(timer.as_mut().poll(cx));
        if timer.deadline() >= deadline {
            return Poll::Ready(());
        }
        // An earlier exchange's deadline: on to this one's (polled again, so the timer is
        // registered for it, or ready if it has passed).
        timer.as_mut().reset(deadline);
    }
}

fn unsent_failure(e: &io::Error) -> Failure {
    Failure {
        error: io_error(e),
        unsent: true,
    }
}

fn closed() -> Failure {
    Failure {
        error: TransportError::Conn(ConnErrorKind::Closed),
        unsent: false,
    }
}

fn protocol(reason: OtherReason) -> Failure {
    Failure {
        error: TransportError::Protocol(reason),
        unsent: false,
    }
}

fn read_failure(e: &io::Error) -> Failure {
    Failure {
        error: io_error(e),
        unsent: false,
    }
}
