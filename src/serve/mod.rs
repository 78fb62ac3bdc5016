//! hubload's own HTTP/1.1 servers (the callback server, the topic server): accept, one lean request loop per connection, deadlines and counts, until stopped.

#[cfg(test)]
mod cap_tests;
mod deadlines;
#[cfg(test)]
pub(crate) mod misbehave_tests;
mod server_conn;
mod server_counts;
mod timer;

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

pub use deadlines::ServerDeadlines;
pub(crate) use server_conn::Handler;
#[cfg(test)]
pub(crate) use server_conn::{serve, End};
pub use server_counts::{ServerCounts, ServerStats};

/// Serve `handler` on `listener` in the background until the returned token is cancelled;
/// connections then finish the request in hand and close. `what` names the server in logs.
pub(crate) fn spawn<H: Handler>(
    listener: TcpListener,
    handler: Arc<H>,
    limits: ServerDeadlines,
    stats: Arc<ServerStats>,
    what: &'static str,
) -> CancellationToken {
    let stop = CancellationToken::new();
    let s = stop.clone();
    tokio::spawn(async move {
        loop {
            let stream = tokio::select! {
                _ = s.cancelled() => return,
                a = listener.accept() => match a {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        // Out of descriptors and the like: keep serving the open connections.
                        tracing::warn!(error = %e, "{what}: accept failed");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                },
            };
            let open = stats.accepted.load(Relaxed) - stats.ended.load(Relaxed);
            if open >= limits.max_connections as u64 {
                stats.over_limit.fetch_add(1, Relaxed);
                drop(stream);
                continue;
            }
            let _ = stream.set_nodelay(true);
            stats.accepted.fetch_add(1, Relaxed);
            tokio::spawn(connection(
                stream,
                handler.clone(),
                limits,
                stats.clone(),
                s.clone(),
            ));
        }
    });
    stop
}

/// One client connection, counted when it ends.
async fn connection<H: Handler>(
    mut stream: TcpStream,
    h: Arc<H>,
    limits: ServerDeadlines,
    stats: Arc<ServerStats>,
    stop: CancellationToken,
) {
    let mut answered = 0;
    let end = server_conn::serve(&mut stream, &*h, &limits, &stop, &mut answered).await;
    stats.answered.fetch_add(answered, Relaxed);
    let late = match end {
        Ok(server_conn::End::Idle) => Some(&stats.idle_closed),
        Ok(server_conn::End::ReadLate) => Some(&stats.read_late),
        Ok(server_conn::End::WriteLate) => Some(&stats.write_late),
        _ => None,
    };
    if let Some(counter) = late {
        counter.fetch_add(1, Relaxed);
    }
    if let Ok(server_conn::End::WriteLate) = end {
        // A reader too slow for its deadline: reset, so the kernel does not go on sending
        // it the answers queued in the socket after the connection is given up.
        let _ = stream.set_zero_linger();
    }
    if let Ok(server_conn::End::Refused) = end {
        // Closing with unread input would reset the connection and could destroy the answer
        // before the client reads it: send FIN, then drain for a while (nginx's lingering close).
        let _ = stream.shutdown().await;
        let drain = async {
            let mut sink = vec![0; server_conn::READ_SIZE];
            while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
        };
        let _ = tokio::time::timeout(Duration::from_secs(2), drain).await;
    }
    // Dropped here: a late connection is closed at once, its unread input resetting it.
    drop(stream);
    stats.ended.fetch_add(1, Relaxed);
}
