//! A request rendered for HTTP/1.1 (`targets/request.rs`) as an HTTP/2 request: the head's
//! fields as HPACK takes them, with names in lowercase and the connection-specific fields
//! left out (RFC 9113 §8.2.2), `Host` as `:authority`.
//!
//! Why from the HTTP/1.1 bytes: every request shape (both dialects, registration,
//! credentials) is rendered in one place, so HTTP/2 sends exactly the fields HTTP/1.1 does.

use bytes::Bytes;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::uri::{Authority, PathAndQuery, Scheme};
use http::{Method, Request, Uri};
use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

/// A request head converted for HTTP/2 once (per topic, before the load): each attempt
/// clones it, which shares the names, values and URI parts instead of parsing and allocating
/// them again. Those parts are held for the process's life (`interned`), so a clone copies
/// pointers: a clone of a reference-counted `Bytes` and its drop are two atomic operations,
/// and a publish's head has about five such parts.
#[derive(Debug, Clone)]
pub struct H2Head {
    method: Method,
    uri: Uri,
    headers: HeaderMap,
}

impl H2Head {
    /// The head and body of the complete HTTP/1.1 request `raw`; `None` when `raw` is not
    /// one (hubload rendered it, so that would be a bug of ours).
    pub fn from_http1(raw: &[u8], scheme: &Scheme) -> Option<(Self, Bytes)> {
        let (req, body) = to_h2(raw, scheme)?;
        let (parts, ()) = req.into_parts();
        let head = H2Head {
            method: parts.method,
            uri: held_uri(parts.uri),
            headers: held_fields(parts.headers),
        };
        Some((head, body))
    }

    /// Add `name` with a placeholder value, so [`request`](Self::request)'s `fill` replaces
    /// it in place rather than growing a clone of the map (a second allocation).
    pub fn with_slot(mut self, name: HeaderName) -> Self {
        self.headers.append(name, HeaderValue::from_static(""));
        self
    }

    /// The request to send: a clone of this head, its fields changed by `fill`.
    pub fn request(&self, fill: impl FnOnce(&mut HeaderMap)) -> Request<()> {
        let mut req = Request::new(());
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri.clone();
        *req.version_mut() = http::Version::HTTP_2;
        let mut headers = self.headers.clone();
        fill(&mut headers);
        *req.headers_mut() = headers;
        req
    }
}

/// `bytes`, stored once for the rest of the process: the same bytes asked for again are the
/// same storage, so what a process holds this way is bounded by the distinct request heads it
/// converts (each topic's path, the host, the fixed fields), not by how many runs convert them.
fn interned(bytes: &[u8]) -> &'static [u8] {
    static HELD: Mutex<BTreeSet<&'static [u8]>> = Mutex::new(BTreeSet::new());
    let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(kept) = held.get(bytes) {
        return kept;
    }
    let kept: &'static [u8] = Box::leak(bytes.into());
    held.insert(kept);
    kept
}

/// `uri` with its authority and path interned (the scheme is a constant already).
fn held_uri(uri: Uri) -> Uri {
    let mut parts = uri.into_parts();
    if let Some(a) = &parts.authority {
        let held =
            Authority::from_maybe_shared(Bytes::from_static(interned(a.as_str().as_bytes())));
        parts.authority = held.ok().or(parts.authority);
    }
    if let Some(p) = &parts.path_and_query {
        let held =
            PathAndQuery::from_maybe_shared(Bytes::from_static(interned(p.as_str().as_bytes())));
        parts.path_and_query = held.ok().or(parts.path_and_query);
    }
    Uri::from_parts(parts).expect("the parts of a valid URI")
}

/// Fields whose values are credentials: kept only as long as the head, never interned.
const SECRET_FIELDS: [HeaderName; 3] = [
    http::header::AUTHORIZATION,
    http::header::PROXY_AUTHORIZATION,
    http::header::COOKIE,
];

/// `fields` with their names and values interned, except credentials and values marked
/// sensitive.
fn held_fields(fields: HeaderMap) -> HeaderMap {
    let mut held = HeaderMap::with_capacity(fields.len());
    let mut last = None;
    for (name, value) in fields {
        // `None`: the same name as the field before it.
        let name = name
            .or_else(|| last.clone())
            .expect("a map's first field has its name");
        last = Some(name.clone());
        let secret = value.is_sensitive() || SECRET_FIELDS.contains(&name);
        let value = match secret {
            true => value,
            false => HeaderValue::from_maybe_shared(Bytes::from_static(interned(value.as_bytes())))
                .unwrap_or(value),
        };
        // Valid and in lowercase, as any `HeaderName`'s text is, so `from_static` takes it.
        let text =
            std::str::from_utf8(interned(name.as_str().as_bytes())).expect("a name is ASCII");
        held.append(HeaderName::from_static(text), value);
    }
    held
}

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
fn to_h2(raw: &[u8], scheme: &Scheme) -> Option<(Request<()>, Bytes)> {
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
    fn a_prepared_head_is_the_converted_request_with_its_slots_filled() {
        let raw = b"POST /hub?hub.mode=publish&hub.topic=t HTTP/1.1\r\nHost: hub.test\r\n\
            Authorization: Bearer x\r\n\r\n";
        let (head, body) = H2Head::from_http1(raw, &Scheme::HTTP).unwrap();
        assert!(body.is_empty());
        let id = HeaderName::from_static("activityid");
        let head = head.with_slot(id.clone());
        let req = head.request(|h| {
            h.insert(&id, HeaderValue::from_static("e1"));
        });
        assert_eq!(req.method(), Method::POST);
        assert_eq!(req.version(), http::Version::HTTP_2);
        assert_eq!(
            req.uri().to_string(),
            "http://hub.test/hub?hub.mode=publish&hub.topic=t"
        );
        let fields: Vec<(&str, &[u8])> = req
            .headers()
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_bytes()))
            .collect();
        assert_eq!(
            fields,
            [
                ("authorization", &b"Bearer x"[..]),
                ("activityid", &b"e1"[..])
            ]
        );
        // The head itself keeps its placeholder for the next attempt.
        assert_eq!(head.request(|_| {}).headers()["activityid"], "");
    }

    #[test]
    fn heads_share_interned_parts_but_never_credentials() {
        let raw = b"POST /hub?hub.mode=publish&hub.topic=interned HTTP/1.1\r\nHost: hub.test\r\n\
            X-Tenant: t7\r\nAuthorization: Bearer secret\r\n\r\n";
        let (a, _) = H2Head::from_http1(raw, &Scheme::HTTP).unwrap();
        let (b, _) = H2Head::from_http1(raw, &Scheme::HTTP).unwrap();
        let (a, b) = (a.request(|_| {}), b.request(|_| {}));
        let at = |r: &Request<()>, name: &str| r.headers()[name].as_bytes().as_ptr();
        // Two conversions of one request: one copy of each part, in the interned storage.
        assert_eq!(
            a.uri().path_and_query().unwrap().as_str().as_ptr(),
            b.uri().path_and_query().unwrap().as_str().as_ptr()
        );
        assert_eq!(
            a.uri().authority().unwrap().as_str().as_ptr(),
            b.uri().authority().unwrap().as_str().as_ptr()
        );
        assert_eq!(at(&a, "x-tenant"), at(&b, "x-tenant"));
        let names = |r: &Request<()>| -> Vec<*const u8> {
            r.headers().keys().map(|k| k.as_str().as_ptr()).collect()
        };
        assert_eq!(names(&a), names(&b));
        // A credential stays each head's own.
        assert_ne!(at(&a, "authorization"), at(&b, "authorization"));
        assert_eq!(a.headers()["authorization"], "Bearer secret");
        assert_eq!(
            a.uri().to_string(),
            "http://hub.test/hub?hub.mode=publish&hub.topic=interned"
        );
    }

    #[test]
    fn an_incomplete_head_is_refused() {
        assert!(to_h2(b"POST /hub HTTP/1.1\r\nHost: h\r\n", &Scheme::HTTP).is_none());
        assert!(to_h2(b"POST /hub HTTP/1.1\r\n\r\n", &Scheme::HTTP).is_none());
    }
}
