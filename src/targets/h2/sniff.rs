//! The server's first bytes on an h2c connection, checked once: an HTTP/1.x answer to the
//! connection preface (a server that does not speak h2c) becomes an I/O error h2 passes on to
//! every stream, which [`is_not_h2`] tells from any other.
//!
//! h2 would read `HTTP/1.1 400` as the head of a frame 4.7 MB long and fail with
//! FRAME_SIZE_ERROR, or see the connection close, and neither says that the server speaks
//! another version. A server speaking HTTP/2 opens with a SETTINGS frame whose first byte (its
//! length's high byte) is 0, never `H`.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The text of the I/O error h2 carries to the streams (it keeps the message, not the type).
const NOT_H2: &str = "the server answered the HTTP/2 connection preface with HTTP/1.x";

/// `T`, whose first bytes read are checked for an HTTP/1.x status line.
#[derive(Debug)]
pub(super) struct Sniffed<T> {
    io: T,
    checked: bool,
}

impl<T> Sniffed<T> {
    pub(super) fn new(io: T) -> Self {
        Self { io, checked: false }
    }
}

/// Whether `e` is the error a [`Sniffed`] connection failed with for an HTTP/1.x answer.
pub(super) fn is_not_h2(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::InvalidData && e.get_ref().is_some_and(|m| m.to_string() == NOT_H2)
}

impl<T: AsyncRead + Unpin> AsyncRead for Sniffed<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if !self.checked {
            let new = &buf.filled()[before..];
            if !new.is_empty() {
                self.checked = true;
                let n = new.len().min(5);
                if new[..n] == b"HTTP/"[..n] {
                    return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, NOT_H2)));
                }
            }
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Sniffed<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    async fn first_read(server_says: &'static [u8]) -> io::Result<usize> {
        let (mut server, client) = tokio::io::duplex(64);
        server.write_all(server_says).await.unwrap();
        let mut sniffed = Sniffed::new(client);
        let mut buf = [0u8; 32];
        sniffed.read(&mut buf).await
    }

    #[tokio::test]
    async fn an_http1_answer_is_not_h2_and_a_settings_frame_passes() {
        let e = first_read(b"HTTP/1.1 400 Bad Request\r\n\r\n")
            .await
            .unwrap_err();
        assert!(is_not_h2(&e), "{e}");
        // An empty SETTINGS frame: length 0, type 4, no flags, stream 0.
        assert_eq!(first_read(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await.unwrap(), 9);
        let other = io::Error::new(io::ErrorKind::InvalidData, "something else");
        assert!(!is_not_h2(&other));
    }
}
