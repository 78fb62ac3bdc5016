//! Pure classification of an HTTP response (status, content type, body) into an [`Outcome`].
//!
//! The hub dialect (docs/protocol.md §2) can answer `200` with `hub.mode=denied&hub.reason=…`,
//! so the status alone never decides: a denial in the body wins over any status.

use super::{OtherReason, Outcome};

/// Classify a complete HTTP response to a publish or register request.
///
/// - any status with a body saying `hub.mode=denied` → [`Outcome::Denied`];
/// - 2xx → accepted, unless the body is form-encoded and does not say `hub.mode=accepted`
///   (then [`Outcome::Other`]: the hub said something we do not understand);
/// - 429 → [`Outcome::Throttled`]: the client was throttled (a per-tenant or per-client
///   admission limit), retried like Service Bus throttling, not a plain 4xx;
/// - 4xx, 502, 503, 504, other 5xx by status; anything else → [`Outcome::Other`].
pub fn classify_http(status: u16, content_type: Option<&[u8]>, body: &[u8]) -> Outcome {
    let mode = hub_mode(body);
    if mode == Some(b"denied".as_slice()) {
        return Outcome::Denied;
    }
    match status {
        200..=299 => {
            let form = content_type.is_some_and(is_form_encoded);
            if !form || mode == Some(b"accepted".as_slice()) {
                Outcome::Accepted
            } else {
                Outcome::Other(OtherReason::UnexpectedBody)
            }
        }
        429 => Outcome::Throttled,
        400..=499 => Outcome::Http4xx(status),
        502 => Outcome::Http502,
        503 => Outcome::Http503,
        504 => Outcome::Http504,
        500..=599 => Outcome::Http5xx(status),
        100..=199 => Outcome::Other(OtherReason::Unexpected1xx),
        300..=399 => Outcome::Other(OtherReason::Unexpected3xx),
        _ => Outcome::Other(OtherReason::MalformedStatusLine),
    }
}

/// Classify the answer to a websub-dialect thin ping (docs/protocol.md §7): any 2xx is
/// accepted unless the body says `hub.mode=denied`, since WebSub hubs answer a publish with
/// whatever body they like (flask-websub: `202 text/html` "Request received: publish").
pub fn classify_thin_ping(status: u16, content_type: Option<&[u8]>, body: &[u8]) -> Outcome {
    match classify_http(status, content_type, body) {
        Outcome::Other(_) if (200..=299).contains(&status) => Outcome::Accepted,
        o => o,
    }
}

/// Whether a `Content-Type` value is `application/x-www-form-urlencoded` (any case, any parameters).
pub fn is_form_encoded(content_type: &[u8]) -> bool {
    // The exact lowercase form first (what hubs send): one memcmp instead of a case fold.
    content_type.starts_with(FORM_ENCODED) || is_form_encoded_folded(content_type)
}

/// [`is_form_encoded`] without the exact-match shortcut.
fn is_form_encoded_folded(content_type: &[u8]) -> bool {
    let ct = content_type.trim_ascii_start();
    ct.len() >= FORM_ENCODED.len() && ct[..FORM_ENCODED.len()].eq_ignore_ascii_case(FORM_ENCODED)
}

const FORM_ENCODED: &[u8] = b"application/x-www-form-urlencoded";

/// The value of `hub.mode` in a form-encoded body, if the body is one. Cheap: no allocation,
/// and bodies that are not short form replies are skipped at once.
fn hub_mode(body: &[u8]) -> Option<&[u8]> {
    // The reply of nearly every publish, as the general scan reads it.
    if body == b"hub.mode=accepted" {
        return Some(b"accepted");
    }
    hub_mode_scan(body)
}

/// [`hub_mode`] without the shortcut for the common reply.
fn hub_mode_scan(body: &[u8]) -> Option<&[u8]> {
    // Hub replies are short; a JSON or HTML error page is not a form reply.
    if body.len() > 4096 || body.first() == Some(&b'{') || body.first() == Some(&b'<') {
        return None;
    }
    body.split(|&b| b == b'&').find_map(|pair| {
        let pair = pair.trim_ascii();
        pair.strip_prefix(b"hub.mode=")
            .or_else(|| pair.strip_prefix(b"hub%2Emode="))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    const FORM: Option<&[u8]> = Some(b"application/x-www-form-urlencoded");
    const JSON: Option<&[u8]> = Some(b"application/json");

    /// (status, content type, body, expected outcome)
    type Case<'a> = (u16, Option<&'a [u8]>, &'a [u8], Outcome);

    #[test]
    fn shortcuts_agree_with_the_general_reading() {
        for body in [
            &b"hub.mode=accepted"[..],
            b"hub.mode=accepted ",
            b"hub.mode=accepted&x=1",
            b"hub.mode=acceptedX",
            b"HUB.MODE=accepted",
            b"hub.mode=denied",
            b"",
        ] {
            assert_eq!(hub_mode(body), hub_mode_scan(body), "{body:?}");
        }
        assert_eq!(hub_mode(b"hub.mode=accepted"), Some(&b"accepted"[..]));
        for ct in [
            &b"application/x-www-form-urlencoded"[..],
            b"application/x-www-form-urlencoded; charset=utf-8",
            b"Application/X-WWW-Form-Urlencoded",
            b" application/x-www-form-urlencoded",
            b"application/x-www-form-urlencode",
            b"application/json",
        ] {
            assert_eq!(is_form_encoded(ct), is_form_encoded_folded(ct), "{ct:?}");
        }
    }

    #[test]
    fn table() {
        let cases: &[Case] = &[
            (200, FORM, b"hub.mode=accepted", Outcome::Accepted),
            (202, FORM, b"hub.mode=accepted", Outcome::Accepted),
            (200, None, b"", Outcome::Accepted),
            (200, JSON, b"{\"ok\":true}", Outcome::Accepted),
            (204, None, b"", Outcome::Accepted),
            // The Ballerina default error status is 200: a denial is never a success.
            (
                200,
                FORM,
                b"hub.mode=denied&hub.reason=Topic+%5Bt%5D+is+not+registered",
                Outcome::Denied,
            ),
            (
                404,
                FORM,
                b"hub.mode=denied&hub.reason=Topic [t] is not registered with the Hub",
                Outcome::Denied,
            ),
            (403, FORM, b"hub.reason=x&hub.mode=denied", Outcome::Denied),
            (
                500,
                FORM,
                b"hub.mode=denied&hub.reason=broker",
                Outcome::Denied,
            ),
            (
                200,
                FORM,
                b"hub.mode=weird",
                Outcome::Other(OtherReason::UnexpectedBody),
            ),
            (200, FORM, b"", Outcome::Other(OtherReason::UnexpectedBody)),
            (
                400,
                Some(b"text/plain"),
                b"bad hub.mode",
                Outcome::Http4xx(400),
            ),
            (
                409,
                FORM,
                b"hub.reason=already registered",
                Outcome::Http4xx(409),
            ),
            (413, None, b"", Outcome::Http4xx(413)),
            (429, Some(b"text/plain"), b"slow down", Outcome::Throttled),
            (428, None, b"", Outcome::Http4xx(428)),
            (500, None, b"", Outcome::Http5xx(500)),
            (501, None, b"", Outcome::Http5xx(501)),
            (
                502,
                Some(b"text/html"),
                b"<html>Bad Gateway</html>",
                Outcome::Http502,
            ),
            (503, None, b"", Outcome::Http503),
            (504, None, b"", Outcome::Http504),
            (599, None, b"", Outcome::Http5xx(599)),
            (301, None, b"", Outcome::Other(OtherReason::Unexpected3xx)),
            (101, None, b"", Outcome::Other(OtherReason::Unexpected1xx)),
        ];
        for (status, ct, body, want) in cases {
            assert_eq!(
                classify_http(*status, *ct, body),
                *want,
                "status {status} body {:?}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn thin_ping_answers() {
        let html: Option<&[u8]> = Some(b"text/html; charset=utf-8");
        let cases: &[Case] = &[
            (202, html, b"Request received: publish", Outcome::Accepted),
            (202, FORM, b"", Outcome::Accepted),
            (200, FORM, b"hub.mode=weird", Outcome::Accepted),
            (200, FORM, b"hub.mode=denied&hub.reason=no", Outcome::Denied),
            (
                400,
                html,
                b"Missing form argument: hub.url",
                Outcome::Http4xx(400),
            ),
            (503, None, b"", Outcome::Http503),
            (301, None, b"", Outcome::Other(OtherReason::Unexpected3xx)),
        ];
        for (status, ct, body, want) in cases {
            assert_eq!(
                classify_thin_ping(*status, *ct, body),
                *want,
                "{status} {body:?}"
            );
        }
    }

    #[test]
    fn content_type_parameters_and_case() {
        let ct: &[u8] = b"Application/X-WWW-Form-Urlencoded; charset=utf-8";
        assert_eq!(
            classify_http(200, Some(ct), b"hub.mode=accepted"),
            Outcome::Accepted
        );
        assert_eq!(
            classify_http(200, Some(ct), b"nope"),
            Outcome::Other(OtherReason::UnexpectedBody)
        );
    }
}
