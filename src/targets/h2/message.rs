//! A request rendered for HTTP/1.1 (`targets/request.rs`) as an HTTP/2 request: the head's
//! fields as HPACK takes them, with names in lowercase and the connection-specific fields
//! left out (RFC 9113 §8.2.2), `Host` as `:authority`.
//!
//! Why from the HTTP/1.1 bytes: every request shape (both dialects, registration,
//! credentials) is rendered in one place, so HTTP/2 sends exactly the fields HTTP/1.1 does.

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::uri::{Authority, PathAndQuery, Scheme};
use http::{Method, Request, Uri};

/// Most header fields in a request hubload renders (the same bound as the response parser).
const MAX_HEADERS: usize = 64;

/// Fields HTTP/2 forbids (RFC 9113 §8.2.2); `Host` becomes `:authority` instead.
fn dropped(name: &str) -> bool {
    [
        "host",
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "upgrade",
    ]
    .iter()
    .any(|n| n.eq_ignore_ascii_case(name))
}

/// The HTTP/2 request and body of the HTTP/1.1 request `raw`; `None` when `raw` is not a
/// complete request head (hubload rendered it, so that would be a bug of ours).
pub(super) fn to_h2(raw: &[u8], scheme: &Scheme) -> Option<(Request<()>, Bytes)> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut head = httparse::Request::new(&mut fields);
    let httparse::Status::Complete(head_len) = head.parse(raw).ok()? else {
        return None;
    };
    let mut authority = None;
    let mut req = Request::builder()
        .method(Method::from_bytes(head.method?.as_bytes()).ok()?)
        .version(http::Version::HTTP_2);
    let headers = req.headers_mut()?;
    for f in head.headers.iter() {
        if f.name.eq_ignore_ascii_case("host") {
            authority = Some(Authority::try_from(f.value).ok()?);
        }
        if dropped(f.name) {
            continue;
        }
        // `HeaderName` keeps names in lowercase, as HTTP/2 requires.
        let name = HeaderName::from_bytes(f.name.as_bytes()).ok()?;
        headers.append(name, HeaderValue::from_bytes(f.value).ok()?);
    }
    let uri = Uri::builder()
        .scheme(scheme.clone())
        .authority(authority?)
        .path_and_query(PathAndQuery::try_from(head.path?).ok()?)
        .build()
        .ok()?;
    let req = req.uri(uri).body(()).ok()?;
    Some((req, Bytes::copy_from_slice(&raw[head_len..])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_lowercase_and_connection_fields_are_gone() {
        let raw = b"POST /hub?hub.mode=publish&hub.topic=t HTTP/1.1\r\nHost: hub.test:8080\r\n\
            User-Agent: hubload/0\r\nContent-Type: application/json\r\nAuthorization: Bearer x\r\n\
            Connection: keep-alive\r\nKeep-Alive: 5\r\nContent-Length: 2\r\n\r\n{}";
        let (req, body) = to_h2(raw, &Scheme::HTTPS).unwrap();
        assert_eq!(req.method(), Method::POST);
        assert_eq!(
            req.uri().to_string(),
            "https://hub.test:8080/hub?hub.mode=publish&hub.topic=t"
        );
        let names: Vec<&str> = req.headers().keys().map(|k| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "user-agent",
                "content-type",
                "authorization",
                "content-length"
            ]
        );
        assert_eq!(req.headers()["authorization"], "Bearer x");
        assert_eq!(&body[..], b"{}");
    }

    #[test]
    fn an_incomplete_head_is_refused() {
        assert!(to_h2(b"POST /hub HTTP/1.1\r\nHost: h\r\n", &Scheme::HTTP).is_none());
        assert!(to_h2(b"POST /hub HTTP/1.1\r\n\r\n", &Scheme::HTTP).is_none());
    }
}
