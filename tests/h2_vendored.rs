//! What hubload's changes to the vendored `h2` (vendor/h2/PATCHED.md) must keep, checked
//! through h2's own client and server over TCP on 127.0.0.1: the decoder's memory of literal
//! values gives back exactly what the peer sent, however values repeat, change, grow past what
//! it remembers or are marked sensitive; and the one-pass check of connection-specific fields
//! refuses what RFC 9113 §8.2.2 forbids and nothing else.

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

/// A server on 127.0.0.1:0 answering each request `/r/{i}` with `fields_for(i)`.
async fn server() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (sock, _) = listener.accept().await.unwrap();
        let mut conn = h2::server::handshake(sock).await.unwrap();
        while let Some(Ok((req, mut respond))) = conn.accept().await {
            let i: usize = req.uri().path()["/r/".len()..].parse().unwrap();
            let mut resp = Response::builder().status(200);
            for (name, value, sensitive) in fields_for(i) {
                let mut value = HeaderValue::from_str(&value).unwrap();
                value.set_sensitive(sensitive);
                resp = resp.header(name, value);
            }
            respond.send_response(resp.body(()).unwrap(), true).unwrap();
        }
    });
    addr
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
