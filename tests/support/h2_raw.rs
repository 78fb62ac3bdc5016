//! A raw HTTP/2 (h2c) server whose frames are written by hand, to break the protocol in ways
//! the `h2` crate's own server never would: one [`Fault`] per server, done to every request.
//! It counts the request heads it read, the streams it answered `hub.mode=accepted` and the
//! streams it refused, so tests compare hubload's counts with the server's.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// One way of misbehaving.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// None: 200 `hub.mode=accepted` to every request.
    Answer,
    /// A response head of 1,026 fields of 1 KiB (1 MiB), over CONTINUATION frames.
    HugeHead,
    /// A response head of 100 small fields (HTTP/1.1 takes 64).
    ManyFields,
    /// An 8 KiB header block that decodes to 16 MB: one 4,000-byte field put in the HPACK
    /// dynamic table, then indexed 4,000 times.
    HpackBomb,
    /// 100 interim `103` heads and never a final one.
    EndlessInterim,
    /// A 200 head and body, then trailers of 100 fields.
    ManyTrailers,
    /// 10,000 PINGs on the connection's first request.
    PingFlood,
    /// 10,000 empty SETTINGS on the connection's first request.
    SettingsFlood,
    /// 10,000 frames of an unknown type on the connection's first request.
    UnknownFlood,
    /// 10,000 PRIORITY frames on the connection's first request.
    PriorityFlood,
    /// A 200 head, then 10,000 empty DATA frames without END_STREAM on the connection's
    /// first request.
    EmptyDataFlood,
    /// SETTINGS_MAX_CONCURRENT_STREAMS 0; a stream that comes anyway is refused.
    StreamLimitZero,
    /// A 200 head, then a DATA frame of 20,000 bytes (the client allows 16,384).
    OversizedFrame,
    /// A header block indexing past both HPACK tables.
    BadHpack,
    /// A connection WINDOW_UPDATE that takes the window past 2^31 - 1.
    WindowOverflow,
    /// SETTINGS_INITIAL_WINDOW_SIZE 2^31 (over the largest allowed).
    BadInitialWindow,
    /// A response head with a connection-specific field (`connection`, malformed in HTTP/2).
    ConnectionField,
    /// A PUSH_PROMISE, though the client disabled push.
    PushPromise,
    /// GOAWAY (last stream 0, PROTOCOL_ERROR) on each request; the connection stays open.
    GoAway,
    /// GOAWAY (last stream 0, ENHANCE_YOUR_CALM) on each request, as a server shedding load.
    GoAwayCalm,
    /// A HEADERS frame without END_HEADERS, and no CONTINUATION ever.
    EndlessHeaderBlock,
    /// Reads every request and never answers.
    Silent,
    /// Opens every window wide (stream and connection, 2^31 - 1), then reads nothing more.
    NoRead,
    /// Answers the connection preface as an HTTP/1.1-only server does: `400 Bad Request`.
    Http11,
}

impl Fault {
    /// The hostile family (every fault but `Answer`), in the order docs/deadlines.md lists it.
    pub const HOSTILE: [Fault; 22] = [
        Fault::HugeHead,
        Fault::ManyFields,
        Fault::HpackBomb,
        Fault::EndlessInterim,
        Fault::ManyTrailers,
        Fault::PingFlood,
        Fault::SettingsFlood,
        Fault::UnknownFlood,
        Fault::PriorityFlood,
        Fault::EmptyDataFlood,
        Fault::StreamLimitZero,
        Fault::OversizedFrame,
        Fault::BadHpack,
        Fault::WindowOverflow,
        Fault::BadInitialWindow,
        Fault::ConnectionField,
        Fault::PushPromise,
        Fault::GoAway,
        Fault::GoAwayCalm,
        Fault::EndlessHeaderBlock,
        Fault::Silent,
        Fault::Http11,
    ];
}

/// A running server and its counts.
pub struct RawH2 {
    /// `http://127.0.0.1:PORT/hub`.
    pub url: String,
    counts: Arc<Counts>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Default)]
struct Counts {
    heads: AtomicU64,
    answered: AtomicU64,
    refused: AtomicU64,
}

impl Drop for RawH2 {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl RawH2 {
    /// A server on 127.0.0.1:0 doing `fault` to every request.
    pub async fn start(fault: Fault) -> RawH2 {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hub", listener.local_addr().unwrap());
        let counts = Arc::new(Counts::default());
        let c = counts.clone();
        let task = tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                tokio::spawn(connection(sock, fault, c.clone()));
            }
        });
        RawH2 { url, counts, task }
    }

    /// Request heads read (HEADERS frames from the client).
    pub fn heads(&self) -> u64 {
        self.counts.heads.load(Ordering::SeqCst)
    }

    /// Streams answered 200 `hub.mode=accepted`.
    pub fn answered(&self) -> u64 {
        self.counts.answered.load(Ordering::SeqCst)
    }

    /// Streams refused with REFUSED_STREAM.
    pub fn refused(&self) -> u64 {
        self.counts.refused.load(Ordering::SeqCst)
    }
}

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const PRIORITY: u8 = 0x2;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PUSH_PROMISE: u8 = 0x5;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const ACK: u8 = 0x1;

/// How many frames a flood sends.
const FLOOD: usize = 10_000;

/// One frame: the 9-byte head and `payload`.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = Vec::with_capacity(9 + payload.len());
    f.extend_from_slice(&len.to_be_bytes()[1..]);
    f.extend_from_slice(&[kind, flags]);
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// An HPACK integer with an `n`-bit prefix whose other bits are `first` (RFC 7541 §5.1).
fn int(out: &mut Vec<u8>, n: u8, first: u8, mut v: usize) {
    let max = (1usize << n) - 1;
    if v < max {
        out.push(first | v as u8);
        return;
    }
    out.push(first | max as u8);
    v -= max;
    while v >= 128 {
        out.push((v % 128) as u8 | 0x80);
        v /= 128;
    }
    out.push(v as u8);
}

/// A literal field with a literal name, not indexed (RFC 7541 §6.2.2), no Huffman coding.
fn literal(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.push(0x00);
    int(out, 7, 0, name.len());
    out.extend_from_slice(name.as_bytes());
    int(out, 7, 0, value.len());
    out.extend_from_slice(value);
}

/// `:status 200` (static index 8) and the form content type.
fn ok_head() -> Vec<u8> {
    let mut b = vec![0x88];
    literal(&mut b, "content-type", b"application/x-www-form-urlencoded");
    b
}

/// `block` as one HEADERS frame and as many CONTINUATION frames as 16,384-byte frames take.
fn header_frames(stream: u32, block: &[u8], end_stream: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let chunks: Vec<&[u8]> = block.chunks(16_384).collect();
    for (i, c) in chunks.iter().enumerate() {
        let last = i + 1 == chunks.len();
        let (kind, mut flags) = if i == 0 {
            (HEADERS, if end_stream { END_STREAM } else { 0 })
        } else {
            (CONTINUATION, 0)
        };
        if last {
            flags |= END_HEADERS;
        }
        out.extend(frame(kind, flags, stream, c));
    }
    out
}

/// What the server writes for the request on `stream` (`first`: the connection's first).
fn reply(fault: Fault, stream: u32, first: bool, counts: &Counts) -> Vec<u8> {
    let accepted = || {
        let mut out = header_frames(stream, &ok_head(), false);
        out.extend(frame(DATA, END_STREAM, stream, b"hub.mode=accepted"));
        out
    };
    let flood = |kind: u8, payload: &[u8]| {
        if !first {
            return Vec::new();
        }
        (0..FLOOD)
            .flat_map(|_| frame(kind, 0, 0, payload))
            .collect()
    };
    match fault {
        Fault::Answer => {
            counts.answered.fetch_add(1, Ordering::SeqCst);
            accepted()
        }
        Fault::HugeHead | Fault::ManyFields => {
            let (n, size) = match fault {
                Fault::HugeHead => (1_026, 1_024),
                _ => (100, 1),
            };
            let mut b = ok_head();
            for i in 0..n {
                literal(&mut b, &format!("x-field-{i}"), &vec![b'v'; size]);
            }
            header_frames(stream, &b, true)
        }
        Fault::HpackBomb => {
            let mut b = vec![0x88, 0x40, 0x01, b'x'];
            int(&mut b, 7, 0, 4_000);
            b.extend(std::iter::repeat_n(b'a', 4_000));
            // Index 62: the newest entry of the dynamic table.
            b.extend(std::iter::repeat_n(0xbe, 4_000));
            header_frames(stream, &b, true)
        }
        Fault::EndlessInterim => {
            // `:status` by its static name index (8), value 103, not indexed.
            let early = [0x08, 0x03, b'1', b'0', b'3'];
            (0..100)
                .flat_map(|_| frame(HEADERS, END_HEADERS, stream, &early))
                .collect()
        }
        Fault::ManyTrailers => {
            let mut out = header_frames(stream, &ok_head(), false);
            out.extend(frame(DATA, 0, stream, b"hub.mode=accepted"));
            let mut t = Vec::new();
            for i in 0..100 {
                literal(&mut t, &format!("x-trailer-{i}"), b"v");
            }
            out.extend(header_frames(stream, &t, true));
            out
        }
        Fault::PingFlood => flood(PING, &[0; 8]),
        Fault::SettingsFlood => flood(SETTINGS, &[]),
        Fault::UnknownFlood => flood(0xfa, &[]),
        Fault::PriorityFlood => {
            if !first {
                return Vec::new();
            }
            // On streams the client never opened (odd ids above its own), depending on 0.
            (0..FLOOD as u32)
                .flat_map(|i| frame(PRIORITY, 0, 1_001 + 2 * i, &[0, 0, 0, 0, 16]))
                .collect()
        }
        Fault::EmptyDataFlood => {
            if !first {
                return Vec::new();
            }
            let mut out = header_frames(stream, &ok_head(), false);
            for _ in 0..FLOOD {
                out.extend(frame(DATA, 0, stream, &[]));
            }
            out
        }
        Fault::StreamLimitZero => {
            counts.refused.fetch_add(1, Ordering::SeqCst);
            frame(RST_STREAM, 0, stream, &7u32.to_be_bytes())
        }
        Fault::OversizedFrame => {
            let mut out = header_frames(stream, &ok_head(), false);
            out.extend(frame(DATA, END_STREAM, stream, &[b'a'; 20_000]));
            out
        }
        Fault::BadHpack => frame(
            HEADERS,
            END_HEADERS | END_STREAM,
            stream,
            &[0xff, 0xff, 0x7f],
        ),
        Fault::WindowOverflow => frame(WINDOW_UPDATE, 0, 0, &0x7fff_ffffu32.to_be_bytes()),
        Fault::ConnectionField => {
            let mut b = ok_head();
            literal(&mut b, "connection", b"close");
            header_frames(stream, &b, true)
        }
        Fault::PushPromise => {
            let mut p = 2u32.to_be_bytes().to_vec();
            p.extend([0x82, 0x84, 0x86]); // GET, /, http
            literal(&mut p, ":authority", b"x");
            frame(PUSH_PROMISE, END_HEADERS, stream, &p)
        }
        Fault::GoAway | Fault::GoAwayCalm => {
            let code: u32 = if fault == Fault::GoAway { 0x1 } else { 0xb };
            let mut p = 0u32.to_be_bytes().to_vec();
            p.extend(code.to_be_bytes());
            frame(GOAWAY, 0, 0, &p)
        }
        // Once per connection: any frame after it but a CONTINUATION is a connection error.
        Fault::EndlessHeaderBlock if first => frame(HEADERS, END_STREAM, stream, &[0x88]),
        Fault::EndlessHeaderBlock => Vec::new(),
        Fault::BadInitialWindow | Fault::Silent | Fault::NoRead | Fault::Http11 => Vec::new(),
    }
}

/// The server's SETTINGS, first on every connection.
fn settings(fault: Fault) -> Vec<u8> {
    let mut p = Vec::new();
    match fault {
        Fault::StreamLimitZero => {
            p.extend(3u16.to_be_bytes());
            p.extend(0u32.to_be_bytes());
        }
        Fault::BadInitialWindow => {
            p.extend(4u16.to_be_bytes());
            p.extend(0x8000_0000u32.to_be_bytes());
        }
        Fault::NoRead => {
            p.extend(4u16.to_be_bytes());
            p.extend(0x7fff_ffffu32.to_be_bytes());
            let mut f = frame(SETTINGS, 0, 0, &p);
            f.extend(frame(WINDOW_UPDATE, 0, 0, &0x7fff_0000u32.to_be_bytes()));
            return f;
        }
        _ => {}
    }
    frame(SETTINGS, 0, 0, &p)
}

async fn connection(sock: TcpStream, fault: Fault, counts: Arc<Counts>) {
    let _ = sock.set_nodelay(true);
    let (mut rd, mut wr) = sock.into_split();
    let mut preface = [0u8; 24];
    if rd.read_exact(&mut preface).await.is_err() {
        return;
    }
    if fault == Fault::Http11 {
        let answer = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        let _ = wr.write_all(answer).await;
        // A lingering close, as nginx's: read what the client sent until it closes, so no
        // reset throws away the answer before the client reads it.
        let _ = wr.shutdown().await;
        let mut sink = [0u8; 4096];
        while matches!(rd.read(&mut sink).await, Ok(n) if n > 0) {}
        return;
    }
    // Writes go through a task of their own, so a flood never stops the reads (the client's
    // ACKs would otherwise fill the socket both ways).
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
    tokio::spawn(async move {
        while let Some(bytes) = rx.recv().await {
            if wr.write_all(&bytes).await.is_err() {
                return;
            }
        }
    });
    let _ = tx.send(settings(fault));
    if fault == Fault::NoRead {
        // Hold the socket, read nothing: the client's writes stop when its buffers fill.
        std::future::pending::<()>().await;
    }
    let mut first = true;
    let mut head = [0u8; 9];
    let mut payload = Vec::new();
    while rd.read_exact(&mut head).await.is_ok() {
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let (kind, flags) = (head[3], head[4]);
        let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
        payload.resize(len, 0);
        if rd.read_exact(&mut payload).await.is_err() {
            return;
        }
        let out = match kind {
            SETTINGS if flags & ACK == 0 => frame(SETTINGS, ACK, 0, &[]),
            // Request bodies' window back at once, so the client is never held by ours; but
            // not inside a header block left open (any frame there is a connection error).
            DATA if len > 0 && fault != Fault::EndlessHeaderBlock => {
                frame(WINDOW_UPDATE, 0, 0, &(len as u32).to_be_bytes())
            }
            HEADERS => {
                counts.heads.fetch_add(1, Ordering::SeqCst);
                let out = reply(fault, stream, first, &counts);
                first = false;
                out
            }
            _ => Vec::new(),
        };
        if !out.is_empty() && tx.send(out).is_err() {
            return;
        }
    }
}
