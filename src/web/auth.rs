//! Who may do what on the live server: the token (a Bearer header, the page's cookie, or a
//! `?token=` on the page's first load) on every request when one is set, and for control
//! verbs also an `Origin` that is the server's own (no cross-site form or script can steer).

use axum::http::{header, HeaderMap, StatusCode};

use crate::secret::Secret;

/// The cookie the page's first load (`/?token=…`) sets, so its later requests carry the token.
pub const COOKIE: &str = "hubload_web";

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denied {
    /// No token, or the wrong one: 401.
    Token,
    /// A control verb from another origin: 403.
    Origin,
    /// Without a token, a request naming a host other than loopback: 403.
    Host,
}

impl Denied {
    /// The answer's status and one line of text.
    pub fn answer(self) -> (StatusCode, &'static str) {
        match self {
            Denied::Token => (StatusCode::UNAUTHORIZED, "a valid token is required\n"),
            Denied::Origin => (
                StatusCode::FORBIDDEN,
                "control requests must come from this server's own page\n",
            ),
            Denied::Host => (
                StatusCode::FORBIDDEN,
                "without a token this server answers only to a loopback host name\n",
            ),
        }
    }
}

/// Equal, in a time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The token the request carries: Bearer header, then cookie, then `query_token`.
fn carried<'a>(headers: &'a HeaderMap, query_token: Option<&'a str>) -> Option<&'a str> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|kv| kv.trim().strip_prefix(COOKIE)?.strip_prefix('='));
    bearer.or(cookie).or(query_token)
}

/// Whether the request names a loopback host (`127.x`, `localhost`, `[::1]`).
fn loopback_host(headers: &HeaderMap) -> bool {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.split(':').next().unwrap_or(""),
    };
    name == "localhost"
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Check the token (when `want` is set) on any request. Without a token (a loopback server)
/// the request must name a loopback host: a page of another site whose name was made to
/// resolve to 127.0.0.1 (DNS rebinding) names its own.
pub fn check_token(
    want: Option<&Secret>,
    headers: &HeaderMap,
    query_token: Option<&str>,
) -> Result<(), Denied> {
    let Some(want) = want else {
        return match loopback_host(headers) {
            true => Ok(()),
            false => Err(Denied::Host),
        };
    };
    match carried(headers, query_token) {
        Some(t) if same(t.trim().as_bytes(), want.expose().as_bytes()) => Ok(()),
        _ => Err(Denied::Token),
    }
}

/// Check a control verb: the token, then the `Origin` (absent, as from curl, or this
/// server's own `http://Host`).
pub fn check_control(want: Option<&Secret>, headers: &HeaderMap) -> Result<(), Denied> {
    check_token(want, headers, None)?;
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    match (origin.to_str().ok(), host) {
        (Some(o), Some(h)) if o.strip_prefix("http://") == Some(h) => Ok(()),
        _ => Err(Denied::Origin),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn the_token_comes_by_header_cookie_or_query_and_must_match() {
        let t = Secret::new("abc");
        let want = Some(&t);
        assert_eq!(check_token(want, &headers(&[]), None), Err(Denied::Token));
        let bearer = headers(&[("authorization", "Bearer abc")]);
        assert_eq!(check_token(want, &bearer, None), Ok(()));
        let wrong = headers(&[("authorization", "Bearer abd")]);
        assert_eq!(check_token(want, &wrong, None), Err(Denied::Token));
        let cookie = headers(&[("cookie", "x=1; hubload_web=abc")]);
        assert_eq!(check_token(want, &cookie, None), Ok(()));
        assert_eq!(check_token(want, &headers(&[]), Some("abc")), Ok(()));
        assert_eq!(
            check_token(want, &headers(&[]), Some("ab")),
            Err(Denied::Token)
        );
        let local = headers(&[("host", "127.0.0.1:8089")]);
        assert_eq!(check_token(None, &local, None), Ok(()));
        let local6 = headers(&[("host", "[::1]:8089")]);
        assert_eq!(check_token(None, &local6, None), Ok(()));
        let named = headers(&[("host", "localhost:8089")]);
        assert_eq!(check_token(None, &named, None), Ok(()));
        let rebound = headers(&[("host", "evil.example:8089")]);
        assert_eq!(check_token(None, &rebound, None), Err(Denied::Host));
    }

    #[test]
    fn control_needs_the_servers_own_origin_or_none() {
        let own = headers(&[
            ("host", "127.0.0.1:8089"),
            ("origin", "http://127.0.0.1:8089"),
        ]);
        assert_eq!(check_control(None, &own), Ok(()));
        let none = headers(&[("host", "127.0.0.1:8089")]);
        assert_eq!(check_control(None, &none), Ok(()));
        let other = headers(&[
            ("host", "127.0.0.1:8089"),
            ("origin", "http://evil.example"),
        ]);
        assert_eq!(check_control(None, &other), Err(Denied::Origin));
        let null = headers(&[("host", "127.0.0.1:8089"), ("origin", "null")]);
        assert_eq!(check_control(None, &null), Err(Denied::Origin));
        let t = Secret::new("abc");
        assert_eq!(check_control(Some(&t), &own), Err(Denied::Token));
    }
}
