//! What hubload's changes to the vendored `h2` (vendor/h2/PATCHED.md) must keep, checked
//! through h2's own client and server over TCP on 127.0.0.1: the decoder's memory of literal
//! values gives back exactly what the peer sent, however values repeat, change, grow past what
//! it remembers or are marked sensitive; and the one-pass check of connection-specific fields
//! refuses what RFC 9113 §8.2.2 forbids and nothing else; the Huffman encoder writes the
//! octets RFC 7541 gives, for values of any length; a header block cut anywhere by a
//! CONTINUATION frame decodes as a whole one does, now that the decoder consumes it once; a
//! body given to a stream after its connection failed is refused with the connection's error.

use bytes::Bytes;
use h2::client::SendRequest;
use http::{HeaderMap, HeaderValue, Request, Response};
use tokio::net::{TcpListener, TcpStream};

/// The response fields the server sends for request `i`, and the client expects.
///
/// `etag`, `location`, `age` and `set-cookie` are fields h2's encoder never indexes, so each
/// is sent as a literal with a static-table name on every response: what the decoder's memory
/// serves. The values: twelve `etag`s in turn (more than the memory's eight slots, so some are
/// forgotten and decoded again), 3 to 90 characters long (so some are too long to remember);
/// a `location` that keeps its length but changes its bytes every fifth response; an `age`
/// that changes every response; a `set-cookie` marked sensitive (never remembered).
fn fields_for(i: usize) -> Vec<(&'static str, String, bool)> {
    let etag_len = 3 + (i * 7) % 12 * 8;
    let etag: String = (0..etag_len)
        .map(|k| char::from(b'a' + ((k + i % 12) % 26) as u8))
        .collect();
    vec![
        ("etag", etag, false),
        ("location", format!("/topics/{:04}", i / 5), false),
        ("age", (i * 13 % 1000).to_string(), false),
        ("set-cookie", format!("s={}", i % 3), true),
    ]
}

/// An h2 server on 127.0.0.1:0 for one connection, answering each request with `answer`.
async fn serve(
    answer: impl Fn(http::Request<h2::RecvStream>, h2::server::SendResponse<Bytes>) + Send + 'static,
) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (sock, _) = listener.accept().await.unwrap();
        let mut conn = h2::server::handshake(sock).await.unwrap();
        while let Some(Ok((req, respond))) = conn.accept().await {
            answer(req, respond);
        }
    });
    addr
}

/// A server answering each request `/r/{i}` with `fields_for(i)`.
async fn server() -> std::net::SocketAddr {
    serve(|req, mut respond| {
        let i: usize = req.uri().path()["/r/".len()..].parse().unwrap();
        let mut resp = Response::builder().status(200);
        for (name, value, sensitive) in fields_for(i) {
            let mut value = HeaderValue::from_str(&value).unwrap();
            value.set_sensitive(sensitive);
            resp = resp.header(name, value);
        }
        respond.send_response(resp.body(()).unwrap(), true).unwrap();
    })
    .await
}

async fn client(addr: std::net::SocketAddr) -> SendRequest<Bytes> {
    let sock = TcpStream::connect(addr).await.unwrap();
    let (send, conn) = h2::client::handshake(sock).await.unwrap();
    tokio::spawn(conn);
    send
}

fn request(path: &str) -> Request<()> {
    Request::post(format!("http://127.0.0.1{path}"))
        .body(())
        .unwrap()
}

#[tokio::test]
async fn literal_values_decode_to_exactly_what_was_sent_as_they_repeat_and_change() {
    let addr = server().await;
    let mut send = client(addr).await;
    for i in 0..300 {
        send = send.ready().await.unwrap();
        let (resp, _) = send
            .send_request(request(&format!("/r/{i}")), true)
            .unwrap();
        let resp = resp.await.unwrap();
        let got: Vec<(String, String)> = resp
            .headers()
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_string()))
            .collect();
        let want: Vec<(String, String)> = fields_for(i)
            .into_iter()
            .map(|(n, v, _)| (n.to_string(), v))
            .collect();
        assert_eq!(got, want, "response {i}");
    }
}

#[tokio::test]
async fn connection_specific_fields_are_refused_and_te_trailers_is_sent() {
    let addr = server().await;
    let mut send = client(addr).await;
    let refused: [&[(&str, &str)]; 7] = [
        &[("connection", "close")],
        &[("keep-alive", "5")],
        &[("proxy-connection", "keep-alive")],
        &[("transfer-encoding", "chunked")],
        &[("upgrade", "h2c")],
        &[("te", "gzip")],
        // Every `te` field must be `trailers`, not only the first.
        &[("te", "trailers"), ("te", "gzip")],
    ];
    for fields in refused {
        let mut req = request("/r/1");
        let mut headers = HeaderMap::new();
        for (n, v) in fields {
            headers.append(*n, HeaderValue::from_static(v));
        }
        *req.headers_mut() = headers;
        send = send.ready().await.unwrap();
        let err = send.send_request(req, true).unwrap_err();
        // h2's user error for these, raised before anything is sent.
        assert_eq!(
            err.to_string(),
            "user error: malformed headers",
            "{fields:?}"
        );
    }
    // Allowed: `te: trailers`, and a name that only starts like a forbidden one.
    let mut req = request("/r/2");
    req.headers_mut()
        .append("te", HeaderValue::from_static("trailers"));
    req.headers_mut()
        .append("keep-alive-x", HeaderValue::from_static("1"));
    send = send.ready().await.unwrap();
    let (resp, _) = send.send_request(req, true).unwrap();
    assert_eq!(resp.await.unwrap().status(), 200);
}

/// The header block of the first request h2's client sends to a bare TCP peer: the bytes
/// after the frame header of the first HEADERS frame (the request fits in one).
async fn first_header_block(req: Request<()>) -> Vec<u8> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let peer = tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        // An empty SETTINGS frame: the peer's side of the connection preface.
        sock.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await.unwrap();
        let mut preface = [0u8; 24];
        sock.read_exact(&mut preface).await.unwrap();
        assert_eq!(&preface, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
        loop {
            let mut head = [0u8; 9];
            sock.read_exact(&mut head).await.unwrap();
            let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
            let mut payload = vec![0u8; len];
            sock.read_exact(&mut payload).await.unwrap();
            if head[3] == 0x1 {
                return payload;
            }
        }
    });
    let mut send = client(addr).await;
    send = send.ready().await.unwrap();
    let _response = send.send_request(req, true).unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(10), peer)
        .await
        .expect("no HEADERS frame within 10 s")
        .unwrap()
}

/// The string literals of RFC 7541 appendix C.4 (requests with Huffman coding), each as a
/// length prefix with the Huffman bit set and the octets the RFC gives.
#[tokio::test]
async fn huffman_coded_strings_are_the_octets_rfc_7541_gives() {
    let mut req = Request::get("http://www.example.com/").body(()).unwrap();
    req.headers_mut()
        .insert("cache-control", HeaderValue::from_static("no-cache"));
    req.headers_mut()
        .insert("custom-key", HeaderValue::from_static("custom-value"));
    let block = first_header_block(req).await;
    let expected: [&[u8]; 4] = [
        // "www.example.com"
        &[
            0x8c, 0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
        ],
        // "no-cache"
        &[0x86, 0xa8, 0xeb, 0x10, 0x64, 0x9c, 0xbf],
        // "custom-key"
        &[0x88, 0x25, 0xa8, 0x49, 0xe9, 0x5b, 0xa9, 0x7d, 0x7f],
        // "custom-value"
        &[0x89, 0x25, 0xa8, 0x49, 0xe9, 0x5b, 0xb8, 0xe8, 0xb4, 0xbf],
    ];
    for want in expected {
        assert!(
            block.windows(want.len()).any(|w| w == want),
            "{want:02x?} not in the header block {block:02x?}"
        );
    }
}

/// Header values of every length from 0 to 299, cycling through every octet a field value
/// may hold (tab, visible ASCII, obs-text), arrive as sent: long values are Huffman coded in
/// several 64-byte pieces, and each length ends on a different bit of the last octet.
#[tokio::test]
async fn huffman_coded_values_of_every_length_arrive_exactly() {
    let allowed: Vec<u8> = std::iter::once(b'\t')
        .chain(0x20..=0x7e)
        .chain(0x80..=0xff)
        .collect();
    let value = |i: usize| -> Vec<u8> {
        (0..i)
            .map(|k| allowed[(k * 7 + i) % allowed.len()])
            .collect()
    };
    // Echo the value back as the body.
    let addr = serve(|req, mut respond| {
        let got = req
            .headers()
            .get("x-value")
            .map(|v| Bytes::copy_from_slice(v.as_bytes()))
            .unwrap_or_default();
        let mut stream = respond
            .send_response(Response::new(()), got.is_empty())
            .unwrap();
        if !got.is_empty() {
            stream.send_data(got, true).unwrap();
        }
    })
    .await;
    let mut send = client(addr).await;
    for i in 0..300 {
        let want = value(i);
        let mut req = request("/echo");
        if i > 0 {
            req.headers_mut()
                .insert("x-value", HeaderValue::from_bytes(&want).unwrap());
        }
        send = send.ready().await.unwrap();
        let (resp, _) = send.send_request(req, true).unwrap();
        let mut body = resp.await.unwrap().into_body();
        let mut got = Vec::new();
        while let Some(chunk) = body.data().await {
            let chunk = chunk.unwrap();
            let _ = body.flow_control().release_capacity(chunk.len());
            got.extend_from_slice(&chunk);
        }
        assert_eq!(got, want, "value of length {i}");
    }
}

/// One response's header block, written out by hand (RFC 7541 §6), with every kind of field
/// representation, and the fields it decodes to on a fresh connection. Each response inserts
/// `x-a` and `x-b` into the dynamic table again, and the indexed field 63 (the second newest
/// entry) must still be `x-a`: a field inserted twice would make it `x-b`.
fn cut_block() -> (Vec<u8>, Vec<(&'static str, &'static str)>) {
    let mut block = vec![0x88]; // indexed: `:status: 200`
                                // With incremental indexing, new name, raw strings: `x-a: one`.
    block.extend_from_slice(&[0x40, 3, b'x', b'-', b'a', 3, b'o', b'n', b'e']);
    // With incremental indexing, new name raw, value Huffman coded: `x-b: custom-value`.
    block.extend_from_slice(&[0x40, 3, b'x', b'-', b'b']);
    block.extend_from_slice(&[0x89, 0x25, 0xa8, 0x49, 0xe9, 0x5b, 0xb8, 0xe8, 0xb4, 0xbf]);
    block.push(0x80 | 63); // indexed, dynamic: `x-a: one`
                           // Without indexing, static name 24 (`cache-control`), Huffman value `no-cache`.
    block.extend_from_slice(&[0x0f, 24 - 15, 0x86, 0xa8, 0xeb, 0x10, 0x64, 0x9c, 0xbf]);
    // Never indexed, Huffman name `custom-key`, raw value `v1`.
    block.extend_from_slice(&[0x10, 0x88, 0x25, 0xa8, 0x49, 0xe9, 0x5b, 0xa9, 0x7d, 0x7f]);
    block.extend_from_slice(&[2, b'v', b'1']);
    let fields = vec![
        ("x-a", "one"),
        ("x-b", "custom-value"),
        ("x-a", "one"),
        ("cache-control", "no-cache"),
        ("custom-key", "v1"),
    ];
    (block, fields)
}

/// A response's header block cut at every octet into a HEADERS frame and a CONTINUATION frame
/// decodes to the same fields: the decoder keeps a field cut in two for the next frame and
/// gives back every whole one exactly once (it consumes the block once, at its end).
#[tokio::test]
async fn a_header_block_cut_anywhere_into_headers_and_continuation_decodes_the_same() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (block, fields) = cut_block();
    // `HeaderMap` iterates a repeated name's values together, at its first position.
    let mut want: Vec<(String, String)> = Vec::new();
    for (name, _) in &fields {
        if !want.iter().any(|(n, _)| n == name) {
            for (n, v) in fields.iter().filter(|(n, _)| n == name) {
                want.push((n.to_string(), v.to_string()));
            }
        }
    }
    let cuts = block.len() + 1;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let peer = tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut preface = [0u8; 24];
        sock.read_exact(&mut preface).await.unwrap();
        sock.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await.unwrap();
        let mut answered = 0;
        while answered < cuts {
            let mut head = [0u8; 9];
            sock.read_exact(&mut head).await.unwrap();
            let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
            let mut payload = vec![0u8; len];
            sock.read_exact(&mut payload).await.unwrap();
            let (kind, flags) = (head[3], head[4]);
            if kind == 0x4 && flags & 0x1 == 0 {
                sock.write_all(&[0, 0, 0, 4, 1, 0, 0, 0, 0]).await.unwrap(); // SETTINGS ACK
            }
            if kind != 0x1 {
                continue;
            }
            // The request's HEADERS: answer on its stream, cut at `answered` octets.
            let (first, rest) = block.split_at(answered);
            let frame = |kind: u8, flags: u8, payload: &[u8]| {
                let mut f = (payload.len() as u32).to_be_bytes()[1..].to_vec();
                f.extend_from_slice(&[kind, flags]);
                f.extend_from_slice(&head[5..9]);
                f.extend_from_slice(payload);
                f
            };
            let mut out = frame(0x1, 0x1, first); // HEADERS, END_STREAM
            out.extend(frame(0x9, 0x4, rest)); // CONTINUATION, END_HEADERS
            sock.write_all(&out).await.unwrap();
            answered += 1;
        }
    });
    let mut send = client(addr).await;
    for cut in 0..cuts {
        send = send.ready().await.unwrap();
        let (resp, _) = send.send_request(request("/cut"), true).unwrap();
        let resp = tokio::time::timeout(std::time::Duration::from_secs(10), resp)
            .await
            .expect("no response within 10 s")
            .unwrap();
        let got: Vec<(String, String)> = resp
            .headers()
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_string()))
            .collect();
        assert_eq!(got, want, "block cut after {cut} of {} octets", cuts - 1);
    }
    peer.await.unwrap();
}

/// The stream that races its connection's end: its response head is read, then the
/// connection fails (a DATA frame over the 16 KiB the client allows, FRAME_SIZE_ERROR), and
/// only then is its body given. h2 refuses the body with the connection's error, not with a
/// bare "inactive stream" that has no reason, so a client names the fault for this stream as
/// for the others.
#[tokio::test]
async fn a_body_given_after_the_connection_failed_is_refused_with_the_connections_error() {
    use crate::support::h2_raw::{Fault, RawH2};
    let server = RawH2::start(Fault::OversizedFrame).await;
    let addr: std::net::SocketAddr = server.url["http://".len()..]
        .trim_end_matches("/hub")
        .parse()
        .unwrap();
    let sock = TcpStream::connect(addr).await.unwrap();
    let (send, conn) = h2::client::handshake(sock).await.unwrap();
    let conn = tokio::spawn(conn);
    let mut send = send.ready().await.unwrap();
    let (response, mut body) = send.send_request(request("/hub"), false).unwrap();
    // The server answers the HEADERS at once: the head, then the oversized frame.
    let head = response
        .await
        .expect("the head came before the connection failed");
    assert_eq!(head.status(), 200);
    let ended = conn
        .await
        .unwrap()
        .expect_err("the oversized frame ends the connection");
    assert_eq!(
        ended.reason(),
        Some(h2::Reason::FRAME_SIZE_ERROR),
        "{ended}"
    );
    let refused = body
        .send_data(Bytes::from_static(b"late"), true)
        .expect_err("the stream is closed");
    assert_eq!(
        refused.reason(),
        Some(h2::Reason::FRAME_SIZE_ERROR),
        "{refused}"
    );
    assert!(refused.is_go_away() && !refused.is_remote(), "{refused:?}");
    assert_eq!(server.heads(), 1);
}
