//! The accept loop: one hyper connection task per socket (HTTP/1.1, or h2c with prior
//! knowledge, told apart by the first bytes; the same inside TLS with `serve_tls`), keep-alive
//! and TCP_NODELAY, graceful shutdown, the hook that lets the fault layer reset a
//! connection, and the client bounds of [`ServeLimits`].

use std::future::Future;
use std::io;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::Body;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use crate::conn_handle::ConnHandle;
use crate::routes::router;
use crate::serve_limits::{ServeLimits, Watched, WriteStall, PREFACE_BYTES};
use crate::state::HubState;

/// How long open connections may take to finish their requests after shutdown is asked.
const GRACE: Duration = Duration::from_secs(5);

/// Serve the hub on `listener` until `shutdown` completes, then let open requests finish
/// (for up to 5 s) and return.
pub async fn serve(
    listener: TcpListener,
    state: HubState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    serve_with(listener, state, None, ServeLimits::default(), shutdown).await
}

/// [`serve`] with client bounds other than the defaults (tests use short ones).
pub async fn serve_limited(
    listener: TcpListener,
    state: HubState,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    serve_with(listener, state, None, limits, shutdown).await
}

/// [`serve`] over TLS: each connection's handshake first (ALPN `h2` or `http/1.1`; one that
/// fails or takes longer than 10 s is dropped), then the same service.
pub async fn serve_tls(
    listener: TcpListener,
    state: HubState,
    tls: TlsAcceptor,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    serve_with(listener, state, Some(tls), ServeLimits::default(), shutdown).await
}

async fn serve_with(
    listener: TcpListener,
    state: HubState,
    tls: Option<TlsAcceptor>,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    if let Ok(addr) = listener.local_addr() {
        let scheme = if tls.is_some() { "https" } else { "http" };
        let _ = state.inner.bound_url.set(format!("{scheme}://{addr}/"));
    }
    // `/stats` shows what these bounds cut off; a state served twice keeps the first's.
    let _ = state.inner.serve_counts.set(limits.counts.clone());
    let router = router(state);
    let graceful = CancellationToken::new();
    let force = CancellationToken::new();
    let tracker = TaskTracker::new();
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            _ = &mut shutdown => break,
            r = listener.accept() => match r {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors, or a connection that died in the backlog:
                    // keep serving the others.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        if tracker.len() >= limits.max_connections {
            limits.counts.over_limit.fetch_add(1, Ordering::Relaxed);
            drop(stream);
            continue;
        }
        tracker.spawn(connection(
            stream,
            tls.clone(),
            router.clone(),
            Ends {
                graceful: graceful.clone(),
                force: force.clone(),
            },
            limits.clone(),
        ));
    }
    drop(listener);
    graceful.cancel();
    tracker.close();
    if tokio::time::timeout(GRACE, tracker.wait()).await.is_err() {
        force.cancel();
        tracker.wait().await;
    }
    Ok(())
}

/// How a connection is told to end: gracefully (shutdown asked), or at once (grace over).
#[derive(Clone)]
struct Ends {
    graceful: CancellationToken,
    force: CancellationToken,
}

async fn connection(
    stream: TcpStream,
    tls: Option<TlsAcceptor>,
    router: Router,
    ends: Ends,
    limits: ServeLimits,
) {
    let _ = stream.set_nodelay(true);
    // A second descriptor of the same socket: once hyper owns the stream, this is how a
    // reset can still set SO_LINGER 0 on it.
    let dup = match socket2::SockRef::from(&stream).try_clone() {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!(error = %e, "cannot duplicate the socket");
            return;
        }
    };
    let Some(tls) = tls else {
        return drive(stream, dup, router, ends, limits).await;
    };
    match tokio::time::timeout(HANDSHAKE, tls.accept(stream)).await {
        Ok(Ok(s)) => drive(s, dup, router, ends, limits).await,
        Ok(Err(e)) => tracing::debug!(error = %e, "TLS handshake failed"),
        Err(_) => tracing::debug!("TLS handshake took too long"),
    }
}

/// Longest TLS handshake of a new connection.
const HANDSHAKE: Duration = Duration::from_secs(10);

/// Serve one connection's requests on `io` (the socket, or TLS over it; `dup` is the socket).
async fn drive<I>(io: I, dup: socket2::Socket, router: Router, ends: Ends, limits: ServeLimits)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let handle = ConnHandle::default();
    let for_requests = handle.clone();
    let svc = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
        req.extensions_mut().insert(for_requests.clone());
        router.clone().oneshot(req.map(Body::new))
    });
    // HTTP/1.1 and h2c on one listener: hyper-util reads the connection preface to choose.
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .keep_alive(true)
        .header_read_timeout(limits.head_timeout);
    builder.http2().timer(TokioTimer::new());
    let stall = WriteStall::default();
    let io = Watched {
        io,
        stall: stall.clone(),
    };
    let conn = builder.serve_connection(TokioIo::new(io), svc);
    tokio::pin!(conn);
    let mut draining = false;
    // hyper has no write timeout: a client that never reads would hold the connection (and
    // the task) for ever once its socket buffers are full. Nor does its head timeout start
    // before hyper-util has read the bytes that choose the protocol: a client that sends
    // fewer would be held for ever too.
    let started = tokio::time::Instant::now();
    let tick = limits.write_stall.min(limits.head_timeout) / 4;
    let mut watchdog = tokio::time::interval(tick.max(Duration::from_millis(5)));
    watchdog.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let (graceful, force) = (ends.graceful, ends.force);
    loop {
        tokio::select! {
            _ = watchdog.tick() => {
                if stall.stalled_for() >= limits.write_stall {
                    limits.counts.write_stalled.fetch_add(1, Ordering::Relaxed);
                    let _ = dup.set_linger(Some(Duration::ZERO));
                    break;
                }
                if stall.read_bytes() < PREFACE_BYTES && started.elapsed() >= limits.head_timeout {
                    limits.counts.silent.fetch_add(1, Ordering::Relaxed);
                    break;
                }
            }
            r = conn.as_mut() => {
                if let Err(e) = r {
                    if e.downcast_ref::<hyper::Error>().is_some_and(hyper::Error::is_timeout) {
                        limits.counts.head_timeouts.fetch_add(1, Ordering::Relaxed);
                    }
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                break;
            }
            _ = handle.reset_asked() => {
                let _ = dup.set_linger(Some(Duration::ZERO));
                break;
            }
            _ = graceful.cancelled(), if !draining => {
                conn.as_mut().graceful_shutdown();
                draining = true;
            }
            _ = force.cancelled() => break,
        }
    }
}
