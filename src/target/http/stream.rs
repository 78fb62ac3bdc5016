//! The byte stream under a connection: plain TCP (TLS slots in as a second variant).

use std::io;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A connected socket, with `TCP_NODELAY` set.
#[derive(Debug)]
pub(crate) enum Stream {
    /// `http://`.
    Plain(TcpStream),
}

impl Stream {
    /// Write the whole buffer.
    pub(crate) async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.write_all(buf).await,
        }
    }

    /// One read into the spare capacity of `buf`; `Ok(0)` is EOF.
    pub(crate) async fn read_buf(&mut self, buf: &mut Vec<u8>) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read_buf(buf).await,
        }
    }
}
