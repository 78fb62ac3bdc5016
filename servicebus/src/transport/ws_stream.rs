//! [`WsStream`]: a WebSocket connection seen as a byte stream, so the AMQP connection runs
//! over it unchanged. Each write is one binary message; reads concatenate binary messages.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use futures_util::{Sink, Stream};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_tungstenite::tungstenite::{Bytes, Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;

/// AMQP bytes over a WebSocket (client or server side). Text messages are a protocol error
/// (the binding carries binary only); pings are answered by the WebSocket layer; a close
/// message or the end of the stream reads as end-of-file.
pub struct WsStream<S> {
    ws: WebSocketStream<S>,
    /// The unread part of the last binary message.
    pending: Bytes,
}

impl<S> WsStream<S> {
    /// Wrap an upgraded WebSocket.
    pub fn new(ws: WebSocketStream<S>) -> Self {
        WsStream {
            ws,
            pending: Bytes::new(),
        }
    }
}

impl<S> std::fmt::Debug for WsStream<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsStream")
            .field("pending", &self.pending.len())
            .finish()
    }
}

/// A WebSocket error as an I/O error whose text names the WebSocket layer (the AMQP error
/// that carries it then says why).
fn io_error(e: WsError) -> io::Error {
    match e {
        WsError::Io(e) => e,
        WsError::Capacity(c) => {
            io::Error::new(io::ErrorKind::InvalidData, format!("WebSocket: {c}"))
        }
        WsError::ConnectionClosed | WsError::AlreadyClosed => {
            io::Error::new(io::ErrorKind::BrokenPipe, "WebSocket closed")
        }
        other => io::Error::other(format!("WebSocket: {other}")),
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for WsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        while self.pending.is_empty() {
            match ready!(Pin::new(&mut self.ws).poll_next(cx)) {
                Some(Ok(Message::Binary(b))) => self.pending = b,
                // Pings are queued for an answer by tungstenite itself; pongs and raw frames
                // carry nothing for AMQP.
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {}
                Some(Ok(Message::Text(_))) => {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "WebSocket: a text message (AMQP travels in binary messages)",
                    )))
                }
                Some(Ok(Message::Close(_))) | None => return Poll::Ready(Ok(())),
                Some(Err(e)) => return Poll::Ready(Err(io_error(e))),
            }
        }
        let n = self.pending.len().min(buf.remaining());
        let chunk = self.pending.split_to(n);
        buf.put_slice(&chunk);
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for WsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        ready!(Pin::new(&mut self.ws).poll_ready(cx)).map_err(io_error)?;
        let n = buf.len().min(super::WS_MAX_MESSAGE);
        Pin::new(&mut self.ws)
            .start_send(Message::Binary(Bytes::copy_from_slice(&buf[..n])))
            .map_err(io_error)?;
        Poll::Ready(Ok(n))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.ws).poll_flush(cx).map_err(io_error)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match ready!(Pin::new(&mut self.ws).poll_close(cx)) {
            Ok(()) | Err(WsError::ConnectionClosed | WsError::AlreadyClosed) => Poll::Ready(Ok(())),
            Err(e) => Poll::Ready(Err(io_error(e))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_tungstenite::tungstenite::protocol::Role;

    async fn pair() -> (
        WsStream<tokio::io::DuplexStream>,
        WebSocketStream<tokio::io::DuplexStream>,
    ) {
        let (a, b) = tokio::io::duplex(1 << 16);
        let cfg = Some(super::super::ws_config());
        let client = WebSocketStream::from_raw_socket(a, Role::Client, cfg).await;
        let server = WebSocketStream::from_raw_socket(b, Role::Server, cfg).await;
        (WsStream::new(client), server)
    }

    #[tokio::test]
    async fn bytes_cross_as_binary_messages_and_reads_join_them() {
        use futures_util::{SinkExt, StreamExt};
        let (mut s, mut peer) = pair().await;
        s.write_all(b"AMQP\x00\x01\x00\x00").await.unwrap();
        s.flush().await.unwrap();
        let m = peer.next().await.unwrap().unwrap();
        assert_eq!(
            m,
            Message::Binary(Bytes::from_static(b"AMQP\x00\x01\x00\x00"))
        );
        peer.send(Message::Binary(Bytes::from_static(b"abc")))
            .await
            .unwrap();
        peer.send(Message::Ping(Bytes::from_static(b"p")))
            .await
            .unwrap();
        peer.send(Message::Binary(Bytes::from_static(b"defg")))
            .await
            .unwrap();
        let mut got = [0u8; 7];
        s.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"abcdefg");
        peer.send(Message::Close(None)).await.unwrap();
        assert_eq!(s.read(&mut got).await.unwrap(), 0, "a close reads as EOF");
    }

    #[tokio::test]
    async fn a_text_message_is_a_named_error() {
        use futures_util::SinkExt;
        let (mut s, mut peer) = pair().await;
        peer.send(Message::text("hello")).await.unwrap();
        let e = s.read(&mut [0u8; 8]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("text message"), "{e}");
    }

    #[tokio::test]
    async fn an_oversized_message_is_refused_not_buffered() {
        use futures_util::SinkExt;
        let (a, b) = tokio::io::duplex(1 << 16);
        let client =
            WebSocketStream::from_raw_socket(a, Role::Client, Some(super::super::ws_config()))
                .await;
        // The peer itself has no limit: it sends 2 MiB in one message.
        let mut peer = WebSocketStream::from_raw_socket(b, Role::Server, None).await;
        let mut s = WsStream::new(client);
        let big = vec![7u8; 2 * super::super::WS_MAX_MESSAGE];
        let sending = tokio::spawn(async move {
            let _ = peer.send(Message::Binary(big.into())).await;
            peer
        });
        let e = s.read(&mut [0u8; 8]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert_eq!(
            e.to_string(),
            "WebSocket: Message too long: 2097152 > 1048576"
        );
        drop(s);
        let _ = sending.await;
    }
}
