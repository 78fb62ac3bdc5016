//! A tiny HTTP/1.1 client for the subscription requests: one form POST per connection, off the hot path.
//!
//! http only for now; https arrives with the shared TLS client (docs/delivery.md).

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::targets::request::ExtraHeaders;

/// A hub's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// The body (de-chunked).
    pub body: Vec<u8>,
}

/// Answers are cut at this many bytes (a hub's reason fits easily).
const MAX_REPLY: usize = 64 * 1024;

/// `POST url` with `form` as an `application/x-www-form-urlencoded` body, bounded by `timeout`,
/// connecting to the first of `connect_to` that accepts (`--resolve`), or else to the URL's
/// host as DNS gives it. The error is one line that never contains a header value.
pub async fn post_form(
    url: &url::Url,
    connect_to: Option<&[SocketAddr]>,
    form: &str,
    headers: &ExtraHeaders,
    timeout: Duration,
    http2: bool,
) -> Result<Reply, String> {
    tokio::time::timeout(timeout, exchange(url, connect_to, form, headers, http2))
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {timeout:?}")))
}

async fn exchange(
    url: &url::Url,
    connect_to: Option<&[SocketAddr]>,
    form: &str,
    headers: &ExtraHeaders,
    http2: bool,
) -> Result<Reply, String> {
    if url.scheme() != "http" {
        return Err(format!(
            "{}:// is not supported for subscription requests yet",
            url.scheme()
        ));
    }
    let host = url.host_str().ok_or("the hub URL has no host")?;
    let port = url.port_or_known_default().unwrap_or(80);
    let conn = match connect_to {
        Some(addrs) => tokio::net::TcpStream::connect(addrs).await,
        None => tokio::net::TcpStream::connect((host.trim_matches(['[', ']']), port)).await,
    };
    let mut conn = conn.map_err(|e| format!("connect: {e}"))?;
    if http2 {
        let (status, body) = super::h2c::exchange(url, conn, form, headers, MAX_REPLY).await?;
        return Ok(Reply { status, body });
    }
    let mut target = url.path().to_owned();
    if let Some(q) = url.query() {
        target.push('?');
        target.push_str(q);
    }
    let host_header = match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_owned(),
    };
    let mut req = format!(
        "POST {target} HTTP/1.1\r\nHost: {host_header}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n",
        form.len()
    );
    // The hub's credentials and gateway headers, validated once in config.
    headers.write(&mut req);
    req.push_str("\r\n");
    req.push_str(form);
    conn.write_all(req.as_bytes())
        .await
        .map_err(|e| format!("write: {e}"))?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = conn
            .read(&mut chunk)
            .await
            .map_err(|e| format!("read: {e}"))?;
        if n == 0 || buf.len() >= MAX_REPLY {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    parse_reply(&buf)
}

/// Parse a whole response (read until the server closed), with the codec's response parser
/// and chunked decoder.
fn parse_reply(buf: &[u8]) -> Result<Reply, String> {
    use hubload_http1::response::{parse_head, Framing};
    let mut content_type = None;
    let head = match parse_head(buf, false, &mut content_type) {
        Ok(Some(h)) => h,
        Ok(None) => return Err("the hub closed before a full answer".into()),
        Err(e) => return Err(format!("bad answer: {e:?}")),
    };
    let rest = &buf[head.len..];
    let body = match head.framing {
        Framing::Empty => Vec::new(),
        Framing::Length(n) => {
            rest[..rest.len().min(usize::try_from(n).unwrap_or(usize::MAX))].to_vec()
        }
        Framing::UntilClose => rest.to_vec(),
        Framing::Chunked => {
            // What decodes before the end or an error: the body is only shown, as a reason.
            let mut body = Vec::new();
            let _ = hubload_http1::chunked::Chunked::default().decode(rest, &mut body, usize::MAX);
            body
        }
    };
    Ok(Reply {
        status: head.status,
        body,
    })
}

/// What a hub said: its `hub.reason` (form-encoded answers), or else the first 200 bytes of
/// the body; control characters escaped either way.
pub fn reason(body: &[u8]) -> String {
    let said = url::form_urlencoded::parse(body)
        .find(|(k, _)| k == "hub.reason")
        .map(|(_, v)| v.into_owned().into_bytes());
    let text = said.as_deref().unwrap_or(body);
    String::from_utf8_lossy(&text[..text.len().min(200)])
        .chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_plain_and_chunked() {
        let r = parse_reply(b"HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\nok").unwrap();
        assert_eq!((r.status, r.body.as_slice()), (202, &b"ok"[..]));
        let r = parse_reply(
            b"HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!((r.status, r.body.as_slice()), (400, &b"abcde"[..]));
        assert!(parse_reply(b"HTTP/1.1 2").is_err());
    }

    /// A hub on 127.0.0.1:0 that reads the request, writes `first`, then `each` every 20 ms
    /// until the client goes away.
    async fn dripping_hub(first: &'static [u8], each: &'static [u8]) -> url::Url {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hub", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf).await;
            if s.write_all(first).await.is_err() {
                return;
            }
            loop {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                if s.write_all(each).await.is_err() {
                    return;
                }
            }
        });
        url::Url::parse(&url).unwrap()
    }

    /// A subscription request ends at its timeout whatever the hub sends.
    #[tokio::test]
    async fn a_trickling_hub_is_cut_off_at_the_timeout() {
        let timeout = Duration::from_millis(300);
        for (first, each) in [
            (&b"HTTP/1.1 202 Accepted\r\nX-Slow: "[..], &b"a"[..]),
            (
                b"HTTP/1.1 202 Accepted\r\nContent-Length: 9999\r\n\r\n",
                b"a",
            ),
            (b"", b"HTTP/1.1 100 Continue\r\n\r\n"),
        ] {
            let url = dripping_hub(first, each).await;
            let lateness = crate::test_lateness::Lateness::watch();
            let started = std::time::Instant::now();
            let r = post_form(&url, None, "a=b", &ExtraHeaders::default(), timeout, false).await;
            let took = started.elapsed();
            assert_eq!(r, Err("no answer within 300ms".to_string()));
            assert!(
                took >= timeout && took <= lateness.bound(timeout),
                "{took:?}, bound {:?}",
                lateness.bound(timeout)
            );
        }
    }

    #[test]
    fn reasons_are_escaped_and_short() {
        assert_eq!(reason(b"bad\r\nX: 1"), "bad\\r\\nX: 1");
        assert_eq!(reason(&[b'a'; 300]).len(), 200);
        assert_eq!(
            reason(b"hub.mode=denied&hub.reason=Topic+%5Bt%5D+is+not+registered%0A"),
            "Topic [t] is not registered\\n"
        );
    }
}
