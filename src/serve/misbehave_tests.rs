//! Clients that misbehave in one way each against hubload's own servers, timing when the server closes on them (the deadline tests of the callback and topic servers).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use crate::test_lateness::Lateness;

use super::deadlines::ServerDeadlines;
use super::server_conn::{serve, End, Handler};

/// Misbehaving clients send or read one byte per this.
pub(crate) const DRIP: Duration = Duration::from_millis(20);

/// How a client misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Misbehaviour {
    /// Connects and sends nothing.
    NeverSends,
    /// Sends the request's head a byte at a time.
    TrickledHead,
    /// Sends the head whole, then the body a byte at a time.
    TrickledBody,
}

/// Connect to `addr`, misbehave `how` with `request` (a whole request; `body_at` is where
/// its body starts), and return how long after the client's first byte (or its connect,
/// for [`Misbehaviour::NeverSends`]) the server ended the connection, and the bytes read.
pub(crate) async fn misbehave(
    addr: SocketAddr,
    how: Misbehaviour,
    request: &[u8],
    body_at: usize,
) -> (Duration, usize) {
    // Timed from before the connect: the server's clock for this connection starts when it
    // accepts it, which can be before this task runs again after `connect` returns (a
    // millisecond or more with 16 clients on 2 threads), and a start taken then made a close
    // exactly on time look early.
    let start = Instant::now();
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut rd, mut wr) = stream.into_split();
    let request = request.to_vec();
    let writer = tokio::spawn(async move {
        match how {
            Misbehaviour::NeverSends => {}
            Misbehaviour::TrickledHead => drip(&mut wr, &request).await,
            Misbehaviour::TrickledBody => {
                if wr.write_all(&request[..body_at]).await.is_ok() {
                    drip(&mut wr, &request[body_at..]).await;
                }
            }
        }
        // Hold the write half open: a half-close would be a clean end of input.
        std::future::pending::<()>().await;
    });
    let mut read = 0;
    let mut chunk = [0; 64];
    loop {
        match rd.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => read += n,
        }
    }
    let took = start.elapsed();
    writer.abort();
    (took, read)
}

/// Send `bytes` one per [`DRIP`], until the connection fails.
async fn drip(wr: &mut OwnedWriteHalf, bytes: &[u8]) {
    for b in bytes {
        if wr.write_all(std::slice::from_ref(b)).await.is_err() {
            return;
        }
        tokio::time::sleep(DRIP).await;
    }
}

/// `n` clients misbehaving `how` at once: each one's time to the server's close.
pub(crate) async fn many(
    addr: SocketAddr,
    how: Misbehaviour,
    n: usize,
    request: &[u8],
    body_at: usize,
) -> Vec<(Duration, usize)> {
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let request = request.to_vec();
            tokio::spawn(async move { misbehave(addr, how, &request, body_at).await })
        })
        .collect();
    let mut took = Vec::with_capacity(n);
    for t in tasks {
        took.push(t.await.unwrap());
    }
    took
}

/// `n` clients at once that each send `request` whole and then read the answer 64 bytes
/// per [`DRIP`], over an in-memory pipe that holds 4 kB (a kernel's socket buffers grow to
/// megabytes, which a debug build takes too long to fill; `topic_server/slow_reader_tcp_tests.rs`
/// keeps them small from the client's side instead), served by `h`'s own request loop:
/// for each, how long after its request the loop ended, how it ended, and the bytes read.
pub(crate) async fn slow_readers<H: Handler>(
    h: std::sync::Arc<H>,
    limits: ServerDeadlines,
    n: usize,
    request: &[u8],
) -> Vec<(Duration, End, usize)> {
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (h, request) = (h.clone(), request.to_vec());
            tokio::spawn(async move {
                let (mut client, mut server) = tokio::io::duplex(4096);
                let start = Instant::now();
                let served = tokio::spawn(async move {
                    let mut answered = 0;
                    let end = serve(
                        &mut server,
                        &*h,
                        &limits,
                        &CancellationToken::new(),
                        &mut answered,
                    )
                    .await;
                    (start.elapsed(), end.unwrap())
                });
                // The pipe holds less than a long request: written while the server reads.
                client.write_all(&request).await.unwrap();
                let mut read = 0;
                let mut chunk = [0; 64];
                while !served.is_finished() {
                    read += client.read(&mut chunk).await.unwrap();
                    tokio::time::sleep(DRIP).await;
                }
                let (took, end) = served.await.unwrap();
                (took, end, read)
            })
        })
        .collect();
    let mut ended = Vec::with_capacity(n);
    for t in tasks {
        ended.push(t.await.unwrap());
    }
    ended
}

/// Every time in `took` within [`deadline`, `deadline` + 50 ms + the machine's wake-up
/// lateness while `lateness` watched].
#[track_caller]
pub(crate) fn assert_on_time(
    took: &[(Duration, usize)],
    deadline: Duration,
    lateness: &Lateness,
    what: &str,
) {
    let bound = lateness.bound(deadline);
    for (t, _) in took {
        assert!(
            *t >= deadline && *t <= bound,
            "{what}: closed after {t:?}, deadline {deadline:?}, bound {bound:?}: {took:?}"
        );
    }
}

/// A server's counts once every connection it accepted has ended (polled, 10 s at most).
pub(crate) async fn settled(counts: impl Fn() -> super::ServerCounts) -> super::ServerCounts {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let c = counts();
        if c.ended == c.accepted || Instant::now() > deadline {
            return c;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
