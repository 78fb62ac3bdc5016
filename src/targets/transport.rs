//! The two ways a hub request travels: the hand-written HTTP/1.1 pool or the HTTP/2 pool
//! (`--http-version`), behind one call that ends in a response or an outcome.

use tokio::time::Instant;

use super::h2::H2Pool;
use super::http::{HttpPool, Response};
use crate::result::Outcome;

/// The connections a target sends on.
#[derive(Debug)]
pub enum Transport {
    /// HTTP/1.1 keep-alive connections, one exchange at a time each.
    Http1(HttpPool),
    /// HTTP/2 connections, many streams each.
    Http2(H2Pool),
}

impl Transport {
    /// One exchange of the complete HTTP/1.1-rendered `request`, into `resp`.
    pub async fn send_bytes(
        &self,
        request: &[u8],
        started: Instant,
        deadline: Instant,
        resp: &mut Response,
    ) -> Result<(), Outcome> {
        match self {
            Transport::Http1(pool) => pool
                .send_into(request, started, deadline, resp)
                .await
                .map_err(|e| e.outcome()),
            // Boxed, so HTTP/1.1's state does not grow by HTTP/2's (see `send_rendered`).
            Transport::Http2(pool) => {
                Box::pin(pool.send_into(request, started, deadline, resp)).await
            }
        }
    }
}

/// [`H2Pool::send_into`] of the request `render` writes, rendered into a buffer this thread
/// keeps for the next one (HTTP/2 takes the request whole, not as the socket is ready).
/// Boxed by its caller: the publish's state holds a pointer for it, so HTTP/1.1 publishes do
/// not carry HTTP/2's state.
pub async fn send_rendered_h2(
    pool: &H2Pool,
    render: impl Fn(&mut Vec<u8>),
    started: Instant,
    deadline: Instant,
    resp: &mut Response,
) -> Result<(), Outcome> {
    let mut request = REQUESTS.with_borrow_mut(Vec::pop).unwrap_or_default();
    request.clear();
    render(&mut request);
    let result = pool.send_into(&request, started, deadline, resp).await;
    if request.capacity() <= KEPT_BYTES {
        REQUESTS.with_borrow_mut(|kept| {
            if kept.len() < KEPT {
                kept.push(request);
            }
        });
    }
    result
}

/// Request buffers kept per thread, at most this many (one per stream in flight is enough).
const KEPT: usize = 1024;
/// A buffer that grew past this many bytes is freed rather than kept.
const KEPT_BYTES: usize = 16 * 1024;

thread_local! {
    static REQUESTS: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
}
