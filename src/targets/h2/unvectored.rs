//! The connection's I/O as h2 should see it: the same stream, reporting no vectored writes, so
//! h2 batches small DATA frames into its write buffer instead of writing each one on its own.
//!
//! With vectored writes, h2 sends a DATA payload of 256 bytes or more by reference and takes
//! no further frame until it is written: one `writev` per publish. Without, h2 copies payloads
//! under 1,024 bytes (the vendored h2, vendor/h2/PATCHED.md: any that fits) into its 16 KiB
//! buffer, and the frames of every ready stream leave in one write (bench/README.md).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// `T`, minus its vectored writes.
#[derive(Debug)]
pub(super) struct Unvectored<T>(pub(super) T);

impl<T: AsyncRead + Unpin> AsyncRead for Unvectored<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Unvectored<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }

    // `poll_write_vectored` keeps its default (the first non-empty slice), which h2 does not
    // call once this says false.
    fn is_write_vectored(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use bytes::Bytes;
    use tokio::io::DuplexStream;

    use super::*;

    /// Counts the writes that reach the socket; says what `T` says about vectored writes.
    struct Counted<T>(T, Arc<AtomicUsize>);

    impl<T: AsyncRead + Unpin> AsyncRead for Counted<T> {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            Pin::new(&mut self.0).poll_read(cx, buf)
        }
    }

    impl<T: AsyncWrite + Unpin> AsyncWrite for Counted<T> {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            let n = std::task::ready!(Pin::new(&mut self.0).poll_write(cx, buf))?;
            self.1.fetch_add(1, Ordering::Relaxed);
            Poll::Ready(Ok(n))
        }

        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            bufs: &[io::IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            let n = std::task::ready!(Pin::new(&mut self.0).poll_write_vectored(cx, bufs))?;
            self.1.fetch_add(1, Ordering::Relaxed);
            Poll::Ready(Ok(n))
        }

        fn is_write_vectored(&self) -> bool {
            self.0.is_write_vectored()
        }

        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.0).poll_flush(cx)
        }

        fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.0).poll_shutdown(cx)
        }
    }

    /// A pipe that writes vectors in one call, as a TCP socket does (the "before" of the fix).
    struct Vectored(DuplexStream);

    impl AsyncRead for Vectored {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            Pin::new(&mut self.0).poll_read(cx, buf)
        }
    }

    impl AsyncWrite for Vectored {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            Pin::new(&mut self.0).poll_write(cx, buf)
        }

        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            bufs: &[io::IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            let all: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
            Pin::new(&mut self.0).poll_write(cx, &all)
        }

        fn is_write_vectored(&self) -> bool {
            true
        }

        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.0).poll_flush(cx)
        }

        fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.0).poll_shutdown(cx)
        }
    }

    /// An h2 server on `io` answering every request 200 once its body has arrived.
    fn serve(io: DuplexStream) {
        tokio::spawn(async move {
            let mut conn = h2::server::handshake(io).await.unwrap();
            while let Some(Ok((req, mut respond))) = conn.accept().await {
                tokio::spawn(async move {
                    let mut body = req.into_body();
                    while let Some(chunk) = body.data().await {
                        let n = chunk.unwrap().len();
                        let _ = body.flow_control().release_capacity(n);
                    }
                    let resp = http::Response::new(());
                    respond.send_response(resp, true).unwrap();
                });
            }
        });
    }

    /// The client's writes while it sends `n` publishes of `size` bytes at once, their streams
    /// all started before its connection task runs (as the workers do), over `io`.
    async fn writes_for_burst<T>(io: T, writes: Arc<AtomicUsize>, n: usize, size: usize) -> usize
    where
        T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let body = Bytes::from(vec![b'x'; size]);
        let (mut send, conn) = h2::client::handshake(io).await.unwrap();
        tokio::spawn(async move { conn.await.unwrap() });
        let post = || http::Request::post("http://hub.test/hub").body(()).unwrap();
        // One exchange first: the preface and both SETTINGS (and their acks) are done.
        let (resp, mut stream) = send.send_request(post(), false).unwrap();
        stream.send_data(body.clone(), true).unwrap();
        assert_eq!(resp.await.unwrap().status(), 200);
        writes.store(0, Ordering::Relaxed);
        let mut answers = Vec::new();
        for _ in 0..n {
            let (resp, mut stream) = send.send_request(post(), false).unwrap();
            stream.send_data(body.clone(), true).unwrap();
            answers.push(resp);
        }
        for resp in answers {
            assert_eq!(resp.await.unwrap().status(), 200);
        }
        writes.load(Ordering::Relaxed)
    }

    #[tokio::test]
    async fn the_frames_of_streams_started_together_leave_in_one_write() {
        let n = 20;
        // Before: h2 chains each 600-byte DATA payload and writes it on its own.
        let (client, server) = tokio::io::duplex(1 << 20);
        serve(server);
        let writes = Arc::new(AtomicUsize::new(0));
        let io = Counted(Vectored(client), writes.clone());
        assert_eq!(writes_for_burst(io, writes, n, 600).await, n);
        // After: all twenty requests' HEADERS and DATA (about 13 KB) in one write.
        let (client, server) = tokio::io::duplex(1 << 20);
        serve(server);
        let writes = Arc::new(AtomicUsize::new(0));
        let io = Counted(Unvectored(client), writes.clone());
        assert_eq!(writes_for_burst(io, writes, n, 600).await, 1);
    }

    /// Bodies over 1,024 bytes: h2 chained them (one more write each, and nothing buffered
    /// behind them until written: 20 writes for 10), the vendored h2 copies a payload that
    /// fits in its 16 KiB buffer. Ten of 1,500 bytes (15.3 KB with their frames) leave in one
    /// write. An eleventh's DATA no longer fits: it is chained as before, its payload a second
    /// write; a twelfth follows in a third.
    #[tokio::test]
    async fn bodies_over_a_kilobyte_that_fit_in_the_buffer_leave_with_the_rest() {
        for (n, expected) in [(10, 1), (11, 2), (12, 3)] {
            let (client, server) = tokio::io::duplex(1 << 20);
            serve(server);
            let writes = Arc::new(AtomicUsize::new(0));
            let io = Counted(Unvectored(client), writes.clone());
            assert_eq!(
                writes_for_burst(io, writes, n, 1500).await,
                expected,
                "{n} bodies"
            );
        }
    }
}
