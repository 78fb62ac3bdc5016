//! The byte stream under a connection: plain TCP or TLS over TCP, behind one enum so the
//! hot path has no dynamic dispatch.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// A connected socket, with `TCP_NODELAY` set.
#[derive(Debug)]
pub(crate) enum Stream {
    /// `http://`.
    Plain(TcpStream),
    /// `https://` (boxed: the TLS state is large and this enum is moved around).
    Tls(Box<TlsStream<TcpStream>>),
    /// Tests: a peer whose every read returns exactly the next scripted piece, so a test
    /// decides how the bytes of a response are split across reads.
    #[cfg(test)]
    Script(std::collections::VecDeque<Vec<u8>>),
}

impl Stream {
    /// Write as much of `buf` as can go without waiting; returns how many bytes went. Plain
    /// TCP: `write(2)` while the socket takes bytes (tokio's readiness says when it will not,
    /// without a system call). TLS: into rustls, which encrypts and keeps the records until
    /// [`finish_write`](Self::finish_write) sends them.
    pub(crate) fn write_now(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => {
                let mut n = 0;
                while n < buf.len() {
                    match s.try_write(&buf[n..]) {
                        Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                        Ok(k) => n += k,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) => return Err(e),
                    }
                }
                Ok(n)
            }
            Stream::Tls(s) => io::Write::write(&mut s.get_mut().1.writer(), buf),
            #[cfg(test)]
            Stream::Script(_) => Ok(buf.len()),
        }
    }

    /// Write `rest[*sent..]` (what [`write_now`](Self::write_now) left), advancing `*sent`
    /// as the socket takes it, and push everything to the socket: ready once all of it is
    /// out. A poll, not an `async fn`, so the exchange that calls it keeps only `sent` across
    /// a wait (a partial write is rare; the common write is whole at once and this is ready
    /// at its first poll).
    pub(crate) fn poll_finish_write(
        &mut self,
        cx: &mut Context<'_>,
        rest: &[u8],
        sent: &mut usize,
    ) -> Poll<io::Result<()>> {
        match self {
            Stream::Plain(_) if *sent == rest.len() => Poll::Ready(Ok(())),
            Stream::Plain(s) => poll_write_all(s, cx, rest, sent),
            Stream::Tls(s) => {
                ready!(poll_write_all(&mut **s, cx, rest, sent))?;
                // rustls buffers records; flush sends them.
                Pin::new(&mut **s).poll_flush(cx)
            }
            #[cfg(test)]
            Stream::Script(_) => Poll::Ready(Ok(())),
        }
    }

    /// Whether an idle connection is unusable, checked without waiting: a peek that finds EOF,
    /// an error or unexpected bytes means the server is done with it. A peek that would block is
    /// the healthy case.
    ///
    /// The peek (one `recv` system call) runs only when tokio's readiness says the socket
    /// became readable since the last read drained it — the only case in which it can find
    /// anything — so a healthy connection costs one atomic load: no system call, no waker
    /// registered. (`poll_peek` answered the same but took the socket's waiter lock and
    /// registered a waker on every check.)
    pub(crate) fn is_stale(&self) -> bool {
        let tcp = match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => s.get_ref().0,
            #[cfg(test)]
            Stream::Script(_) => return false,
        };
        let peek = || {
            let mut byte = [std::mem::MaybeUninit::uninit()];
            socket2::SockRef::from(tcp).peek(&mut byte)
        };
        !matches!(
            tcp.try_io(tokio::io::Interest::READABLE, peek),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock
        )
    }

    /// One read into `buf` (a buffer of the thread's, borrowed only while this poll runs);
    /// `Ok(n)`: the first `n` bytes were read, `Ok(0)` is EOF.
    pub(crate) fn poll_read_into(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let mut out = ReadBuf::new(buf);
        let polled = match self {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, &mut out),
            Stream::Tls(s) => Pin::new(&mut **s).poll_read(cx, &mut out),
            #[cfg(test)]
            Stream::Script(pieces) => {
                // A piece larger than the buffer is handed over in parts.
                let mut piece = pieces.pop_front().unwrap_or_default();
                let n = piece.len().min(out.remaining());
                out.put_slice(&piece[..n]);
                if n < piece.len() {
                    pieces.push_front(piece.split_off(n));
                }
                Poll::Ready(Ok(()))
            }
        };
        polled.map_ok(|()| out.filled().len())
    }

    /// One read into the spare capacity of `buf`; `Ok(0)` is EOF.
    pub(crate) async fn read_buf(&mut self, buf: &mut Vec<u8>) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read_buf(buf).await,
            Stream::Tls(s) => s.read_buf(buf).await,
            #[cfg(test)]
            Stream::Script(pieces) => {
                let piece = pieces.pop_front().unwrap_or_default();
                buf.extend_from_slice(&piece);
                Ok(piece.len())
            }
        }
    }
}

/// Write `rest[*sent..]` to `w`, advancing `*sent` as it goes; ready once all of it went.
fn poll_write_all<W: AsyncWrite + Unpin>(
    w: &mut W,
    cx: &mut Context<'_>,
    rest: &[u8],
    sent: &mut usize,
) -> Poll<io::Result<()>> {
    while *sent < rest.len() {
        match ready!(Pin::new(&mut *w).poll_write(cx, &rest[*sent..])) {
            Ok(0) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
            Ok(n) => *sent += n,
            Err(e) => return Poll::Ready(Err(e)),
        }
    }
    Poll::Ready(Ok(()))
}
