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
    let mut authority = None;
    let mut req = Request::builder().version(http::Version::HTTP_2);
    let headers = req.headers_mut()?;
    let mut bad = false;
    let (method, path, head_len) = hubload_http1::request::read_fields(raw, |name, value| {
        if name.eq_ignore_ascii_case("host") {
            authority = Authority::try_from(value).ok();
            bad |= authority.is_none();
        }
        if dropped(name) {
            return;
        }
        // `HeaderName` keeps names in lowercase, as HTTP/2 requires.
        match (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_bytes(value),
        ) {
            (Ok(name), Ok(value)) => {
                headers.append(name, value);
            }
            _ => bad = true,
        }
    })?;
    if bad {
        return None;
    }
    let req = req.method(Method::from_bytes(method.as_bytes()).ok()?);
    let uri = Uri::builder()
        .scheme(scheme.clone())
        .authority(authority?)
        .path_and_query(PathAndQuery::try_from(path).ok()?)
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
