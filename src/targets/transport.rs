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
            // Boxed, so HTTP/1.1's state does not grow by HTTP/2's.
            Transport::Http2(pool) => Box::pin(pool.send_into(request, deadline, resp)).await,
        }
    }
}
