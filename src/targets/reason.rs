//! What the hub said, as one line: the status, the hub's reason (`hub.reason` of a form reply,
//! else the first 200 bytes of the body with control characters escaped), and a hint when
//! the answer suggests the other dialect (docs/protocol.md §7).

use super::request::Dialect;
use crate::result::classify::is_form_encoded;
use crate::result::{Attempt, Outcome};

/// Longest reason excerpt kept, in bytes of the body.
pub const REASON_BYTES: usize = 200;

/// The hub's reason in a response body, escaped for one line; `None` for an empty body.
pub fn hub_reason(content_type: Option<&[u8]>, body: &[u8]) -> Option<String> {
    let form = content_type.is_some_and(is_form_encoded);
    let text = form
        .then(|| {
            url::form_urlencoded::parse(body)
                .find(|(k, _)| k == "hub.reason")
                .map(|(_, v)| v.into_owned())
        })
        .flatten();
    let text = match text {
        Some(t) => t,
        None => String::from_utf8_lossy(&body[..body.len().min(REASON_BYTES)]).into_owned(),
    };
    let text = text.trim();
    (!text.is_empty()).then(|| escape(text, REASON_BYTES))
}

/// `s` with control characters written as `\n`, `\r`, `\t` or `\u{..}`, cut at `max` bytes
/// (on a character boundary).
fn escape(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max));
    for (i, c) in s.char_indices() {
        if i >= max {
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// A failed attempt as people read it: `HTTP 400 (reason)`, `denied (HTTP 404: reason)`,
/// `connection refused`, `response timeout`.
pub fn describe(a: &Attempt, reason: Option<&str>) -> String {
    let with = |s: String| match reason {
        Some(r) => format!("{s} ({r})"),
        None => s,
    };
    match a.outcome {
        Outcome::ConnError(k) => format!("connection {}", format!("{k:?}").to_lowercase()),
        Outcome::Timeout(k) => format!("{} timeout", format!("{k:?}").to_lowercase()),
        Outcome::Denied => match reason {
            Some(r) => format!("denied (HTTP {}: {r})", a.status),
            None => format!("denied (HTTP {})", a.status),
        },
        Outcome::ProtocolError(crate::result::ProtocolReason::NotH2) => {
            "the server does not speak HTTP/2 (protocol_error.not_h2: it answered in HTTP/1.x); \
             use --http-version 1.1"
                .into()
        }
        Outcome::TlsError(crate::result::TlsReason::UnknownIssuer) => {
            "TLS handshake failed: tls_error.unknown_issuer (a private CA? give it with --ca-cert)"
                .into()
        }
        Outcome::ProxyRefused(status) => {
            let fix = match status {
                // tinyproxy answers wrong credentials 401, others 407.
                401 | 407 => {
                    "; give the proxy's credentials in its URL (http://user:password@host:port)"
                }
                403 => "; its rules do not allow CONNECT to the hub's host or port",
                502..=504 => "; it could not reach the hub",
                _ => "",
            };
            format!("the HTTP proxy refused the tunnel to the hub: answered {status} (conn_refused.proxy){fix}")
        }
        Outcome::TlsError(_) => format!(
            "TLS handshake failed: {}",
            a.outcome.reason().map_or("", |r| r.name())
        ),
        o => match (o.status(), o.reason()) {
            (Some(s), _) => with(format!("HTTP {s}")),
            (None, Some(r)) if a.status != 0 => with(format!(
                "unexpected reply (HTTP {}, {})",
                a.status,
                r.name()
            )),
            (None, Some(r)) => r.name().to_string(),
            (None, None) => o.class().name().to_string(),
        },
    }
}

/// A hint when a rejection looks like the other dialect's hub answering.
///
/// A Ballerina request rejected with a reason naming `hub.mode` or `hub.url` (a WebSub hub
/// looks for them in a form body) suggests `--dialect websub`; a websub thin ping rejected
/// because the topic is not registered suggests the Ballerina dialect (or `--register always`).
pub fn dialect_hint(dialect: Dialect, a: &Attempt, reason: Option<&str>) -> Option<&'static str> {
    let rejected = matches!(a.outcome, Outcome::Denied | Outcome::Http4xx(_));
    let reason = reason?.to_ascii_lowercase();
    match dialect {
        Dialect::Ballerina
            if rejected && (reason.contains("hub.mode") || reason.contains("hub.url")) =>
        {
            Some("does this hub speak the websub dialect? try --dialect websub")
        }
        Dialect::Websub if rejected && reason.contains("not registered") => Some(
            "does this hub speak the ballerina dialect? try --dialect ballerina, or --register always",
        ),
        _ => None,
    }
}

/// `describe` plus the dialect hint, as `HTTP 400 (reason); hint`.
pub fn explain(dialect: Dialect, a: &Attempt, reason: Option<&str>) -> String {
    let d = describe(a, reason);
    match dialect_hint(dialect, a, reason) {
        Some(h) => format!("{d}; {h}"),
        None => d,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{ConnErrorKind, TimeoutKind};

    const FORM: Option<&[u8]> = Some(b"application/x-www-form-urlencoded; charset=utf-8");

    fn at(outcome: Outcome, status: u16) -> Attempt {
        Attempt {
            server_timing: crate::result::ServerTimings::NONE,
            retry_after: crate::result::RetryAfter::NONE,
            outcome,
            status,
            bytes_sent: 0,
            bytes_received: 0,
        }
    }

    #[test]
    fn reasons() {
        /// (content type, body, the reason shown)
        type Case<'a> = (Option<&'a [u8]>, &'a [u8], Option<&'a str>);
        let cases: &[Case] = &[
            (
                FORM,
                b"hub.mode=denied&hub.reason=Topic+%5Bt%5D+is+not+registered",
                Some("Topic [t] is not registered"),
            ),
            (
                Some(b"text/html"),
                b"Missing form argument: hub.mode\r\n",
                Some("Missing form argument: hub.mode"),
            ),
            (None, b"a\x01b\nc", Some("a\\u{1}b\\nc")),
            // A form reply without hub.reason: the body itself.
            (FORM, b"hub.mode=denied", Some("hub.mode=denied")),
            (None, b"  ", None),
            (None, b"", None),
        ];
        for (ct, body, want) in cases {
            assert_eq!(hub_reason(*ct, body).as_deref(), *want, "{body:?}");
        }
        let long = "x".repeat(500);
        assert_eq!(hub_reason(None, long.as_bytes()).unwrap(), "x".repeat(200));
        // The cut never splits a character.
        let wide = "é".repeat(150);
        assert_eq!(hub_reason(None, wide.as_bytes()).unwrap(), "é".repeat(100));
    }

    #[test]
    fn descriptions_and_hints() {
        let bad = at(Outcome::Http4xx(400), 400);
        let r = Some("Missing form argument: hub.mode");
        assert_eq!(
            explain(Dialect::Ballerina, &bad, r),
            "HTTP 400 (Missing form argument: hub.mode); does this hub speak the websub dialect? try --dialect websub"
        );
        assert_eq!(
            explain(Dialect::Websub, &bad, r),
            "HTTP 400 (Missing form argument: hub.mode)"
        );
        let denied = at(Outcome::Denied, 404);
        assert_eq!(
            explain(Dialect::Websub, &denied, Some("Topic [x] is not registered with the Hub")),
            "denied (HTTP 404: Topic [x] is not registered with the Hub); does this hub speak the ballerina dialect? try --dialect ballerina, or --register always"
        );
        assert_eq!(
            explain(Dialect::Ballerina, &at(Outcome::Http503, 503), None),
            "HTTP 503"
        );
        assert_eq!(
            explain(
                Dialect::Ballerina,
                &at(Outcome::ConnError(ConnErrorKind::Refused), 0),
                None
            ),
            "connection refused"
        );
        assert_eq!(
            describe(&at(Outcome::Timeout(TimeoutKind::Response), 0), Some("x")),
            "response timeout"
        );
        use crate::result::ProtocolReason;
        assert_eq!(
            describe(
                &at(Outcome::ProtocolError(ProtocolReason::PingFlood), 0),
                None
            ),
            "protocol_error.ping_flood"
        );
        assert_eq!(
            describe(&at(Outcome::ProtocolError(ProtocolReason::NotH2), 0), None),
            "the server does not speak HTTP/2 (protocol_error.not_h2: it answered in HTTP/1.x); \
             use --http-version 1.1"
        );
        assert_eq!(
            describe(&at(Outcome::ProxyRefused(407), 407), None),
            "the HTTP proxy refused the tunnel to the hub: answered 407 (conn_refused.proxy); \
             give the proxy's credentials in its URL (http://user:password@host:port)"
        );
        assert_eq!(
            describe(&at(Outcome::ProxyRefused(400), 400), None),
            "the HTTP proxy refused the tunnel to the hub: answered 400 (conn_refused.proxy)"
        );
    }
}
