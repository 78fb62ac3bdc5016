//! The `hub.*` parameters of a request (query string or form body) and the hub's replies.
//!
//! Replies follow the Ballerina/WSO2 dialect (docs/hub.md): form-encoded
//! `hub.mode=accepted` or `hub.mode=denied&hub.reason=…`; errors that are not denials
//! (409, 404 on deregister) carry only `hub.reason=…` so a client can tell them apart;
//! 400/401/413 are text/plain; injected 502/503 are small HTML pages, as a proxy sends.

use std::borrow::Cow;

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;

/// The `hub.*` fields of one query string or form body; unknown fields are ignored.
/// Values borrow from the input unless they were percent-encoded.
#[derive(Debug, Default)]
pub(crate) struct HubParams<'a> {
    pub mode: Option<Cow<'a, str>>,
    pub topic: Option<Cow<'a, str>>,
    pub callback: Option<Cow<'a, str>>,
    pub lease_seconds: Option<Cow<'a, str>>,
    pub secret: Option<Cow<'a, str>>,
}

impl<'a> HubParams<'a> {
    /// Parse `application/x-www-form-urlencoded` bytes (a query string or a form body).
    /// The first occurrence of a field wins.
    pub fn parse(input: &'a [u8]) -> HubParams<'a> {
        let mut p = HubParams::default();
        for (k, v) in url::form_urlencoded::parse(input) {
            let slot = match k.as_ref() {
                "hub.mode" => &mut p.mode,
                "hub.topic" => &mut p.topic,
                "hub.callback" => &mut p.callback,
                "hub.lease_seconds" => &mut p.lease_seconds,
                "hub.secret" => &mut p.secret,
                _ => continue,
            };
            if slot.is_none() {
                *slot = Some(v);
            }
        }
        p
    }

    /// Fill the fields this one lacks from `other` (query string first, then body).
    pub fn or(self, other: HubParams<'a>) -> HubParams<'a> {
        HubParams {
            mode: self.mode.or(other.mode),
            topic: self.topic.or(other.topic),
            callback: self.callback.or(other.callback),
            lease_seconds: self.lease_seconds.or(other.lease_seconds),
            secret: self.secret.or(other.secret),
        }
    }
}

/// True for `application/x-www-form-urlencoded` (any case, with or without parameters).
pub(crate) fn is_form(content_type: Option<&HeaderValue>) -> bool {
    content_type.is_some_and(|ct| {
        let ct = ct.as_bytes().trim_ascii_start();
        ct.len() >= 33 && ct[..33].eq_ignore_ascii_case(b"application/x-www-form-urlencoded")
    })
}

const FORM: HeaderValue = HeaderValue::from_static("application/x-www-form-urlencoded");
const TEXT: HeaderValue = HeaderValue::from_static("text/plain; charset=utf-8");
const HTML: HeaderValue = HeaderValue::from_static("text/html");

fn reply(status: StatusCode, content_type: HeaderValue, body: impl Into<Body>) -> Response {
    let mut r = Response::new(body.into());
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, content_type);
    r
}

/// 200 `hub.mode=accepted`.
pub(crate) fn accepted() -> Response {
    reply(StatusCode::OK, FORM, "hub.mode=accepted")
}

/// 202 with an empty body: a subscription request that will be verified.
pub(crate) fn accepted_for_verification() -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::ACCEPTED;
    r
}

/// `status` with `hub.mode=denied&hub.reason=<reason>`.
pub(crate) fn denied(status: StatusCode, reason: &str) -> Response {
    let body = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("hub.mode", "denied")
        .append_pair("hub.reason", reason)
        .finish();
    reply(status, FORM, body)
}

/// `status` with only `hub.reason=<reason>`: a refusal that is not a denial (409, 404).
pub(crate) fn refused(status: StatusCode, reason: &str) -> Response {
    let body = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("hub.reason", reason)
        .finish();
    reply(status, FORM, body)
}

/// `status` with a one-line text/plain reason (400, 401, 413, 405).
pub(crate) fn plain(status: StatusCode, reason: impl Into<String>) -> Response {
    let mut text = reason.into();
    text.push('\n');
    reply(status, TEXT, text)
}

/// A proxy-style 502 or 503 page.
pub(crate) fn proxy_error(status: StatusCode) -> Response {
    let page = match status {
        StatusCode::BAD_GATEWAY => "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center></body></html>\n",
        _ => "<html><head><title>503 Service Temporarily Unavailable</title></head><body><center><h1>503 Service Temporarily Unavailable</h1></center></body></html>\n",
    };
    reply(status, HTML, page)
}

/// The reason given for a publish to an unregistered topic (the WSO2 hub's wording).
pub(crate) fn not_registered(topic: &str) -> String {
    format!("Topic [{topic}] is not registered with the Hub")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_decodes_and_ignores_unknown() {
        let p = HubParams::parse(
            b"hub.mode=subscribe&foo=bar&hub.topic=a%20b&hub.callback=http%3A%2F%2Fx%2Fc&hub.mode=publish",
        );
        assert_eq!(p.mode.as_deref(), Some("subscribe"));
        assert_eq!(p.topic.as_deref(), Some("a b"));
        assert_eq!(p.callback.as_deref(), Some("http://x/c"));
        assert!(p.secret.is_none() && p.lease_seconds.is_none());
        assert!(matches!(p.mode, Some(Cow::Borrowed(_))));
    }

    #[test]
    fn query_wins_over_body() {
        let q = HubParams::parse(b"hub.mode=publish");
        let b = HubParams::parse(b"hub.mode=register&hub.topic=t");
        let p = q.or(b);
        assert_eq!(p.mode.as_deref(), Some("publish"));
        assert_eq!(p.topic.as_deref(), Some("t"));
    }

    #[test]
    fn form_content_type() {
        let v = HeaderValue::from_static("Application/X-WWW-Form-Urlencoded; charset=UTF-8");
        assert!(is_form(Some(&v)));
        assert!(!is_form(Some(&HeaderValue::from_static(
            "application/json"
        ))));
        assert!(!is_form(None));
    }

    #[tokio::test]
    async fn denied_reply_is_form_encoded() {
        let r = denied(StatusCode::NOT_FOUND, &not_registered("t.x"));
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        let body = axum::body::to_bytes(r.into_body(), 1024).await.unwrap();
        assert_eq!(
            &body[..],
            b"hub.mode=denied&hub.reason=Topic+%5Bt.x%5D+is+not+registered+with+the+Hub"
        );
    }
}
