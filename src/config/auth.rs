//! Credentials and gateway headers (`--hub-token`, `--hub-token-file`, the hub URL's
//! user-info, `--header`) → the validated extra headers of every hub request.
//!
//! Every name and value is checked here, once, so that no input can add a line to a request:
//! a name is an RFC 7230 token, a value has no control character. Errors name the flag and
//! never repeat the value.

use base64::Engine as _;
use percent_encoding::percent_decode_str;

use super::error::ConfigError;
use crate::cli::RunArgs;
use crate::secret::Secret;
use crate::targets::request::{ExtraHeader, ExtraHeaders};

/// Headers hubload writes itself (framing, routing, its own content): a `--header` with one of
/// these names would make a request with two of them, or a different body framing.
const RESERVED: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "content-type",
    "user-agent",
    "accept",
    "activityid",
];

fn secret_error(field: &str, message: impl std::fmt::Display) -> ConfigError {
    ConfigError::Secret {
        field: field.to_string(),
        message: message.to_string(),
    }
}

/// An RFC 7230 `token`: one or more tchar.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// A header value hubload will send: no control character (CR, LF, NUL, TAB, DEL, …).
fn check_value(field: &str, v: &str) -> Result<(), ConfigError> {
    if v.chars().any(char::is_control) {
        return Err(secret_error(
            field,
            "contains a control character (CR, LF, tab, …); a header value must be one line of text",
        ));
    }
    if v.is_empty() {
        return Err(secret_error(field, "is empty"));
    }
    Ok(())
}

/// The token file's content with exactly one trailing newline (`\n` or `\r\n`) removed.
fn token_from_file(path: &std::path::Path) -> Result<String, ConfigError> {
    let field = "hub-token-file";
    let bytes = std::fs::read(path).map_err(|e| {
        secret_error(
            field,
            format!("cannot read {}: {}", path.display(), e.kind()),
        )
    })?;
    let s = String::from_utf8(bytes)
        .map_err(|_| secret_error(field, format!("{} is not UTF-8 text", path.display())))?;
    let s = s
        .strip_suffix("\r\n")
        .or_else(|| s.strip_suffix('\n'))
        .unwrap_or(&s);
    Ok(s.to_string())
}

/// `Bearer TOKEN` from `--hub-token` or `--hub-token-file` (not both).
fn bearer(a: &RunArgs) -> Result<Option<ExtraHeader>, ConfigError> {
    let (field, token) = match (&a.hub_token, &a.hub_token_file) {
        (Some(_), Some(_)) => {
            return Err(ConfigError::Conflict(
                "--hub-token and --hub-token-file exclude each other".into(),
            ))
        }
        (Some(t), None) => ("hub-token", t.clone()),
        (None, Some(p)) => ("hub-token-file", token_from_file(p)?),
        (None, None) => return Ok(None),
    };
    check_value(field, &token)?;
    Ok(Some(ExtraHeader {
        name: "Authorization".into(),
        value: Secret::new(format!("Bearer {token}")),
    }))
}

/// `Basic base64(user:password)` from the URL's user-info (percent-decoded, RFC 3986 §3.2.1),
/// which is removed from `url`: the URL on the wire and in every report carries none.
fn basic(url: Option<&mut url::Url>) -> Result<Option<ExtraHeader>, ConfigError> {
    let Some(url) = url else { return Ok(None) };
    if url.username().is_empty() && url.password().is_none() {
        return Ok(None);
    }
    let decode = |s: &str| {
        percent_decode_str(s)
            .decode_utf8()
            .map(|c| c.into_owned())
            .map_err(|_| secret_error("hub-url", "user-info is not UTF-8 once percent-decoded"))
    };
    let user = decode(url.username())?;
    let password = decode(url.password().unwrap_or(""))?;
    if user.contains(':') {
        return Err(secret_error(
            "hub-url",
            "the user name contains `:`, which Basic authentication cannot carry (RFC 7617)",
        ));
    }
    // Cannot fail: http(s) URLs with a host can carry user-info, and so lose it.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    let pair = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    Ok(Some(ExtraHeader {
        name: "Authorization".into(),
        value: Secret::new(format!("Basic {pair}")),
    }))
}

/// One `--header 'Name: value'` (optional whitespace around the value is dropped).
fn header(raw: &str) -> Result<ExtraHeader, ConfigError> {
    let field = "header";
    let Some((name, value)) = raw.split_once(':') else {
        return Err(secret_error(field, "must be `Name: value`"));
    };
    let value = value.trim_matches([' ', '\t']);
    // The name is not secret, but it is echoed only once known harmless.
    if !is_token(name) {
        return Err(secret_error(
            field,
            "has a header name that is not an RFC 7230 token (letters, digits, !#$%&'*+-.^_`|~)",
        ));
    }
    if RESERVED.contains(&name.to_ascii_lowercase().as_str()) {
        return Err(secret_error(
            field,
            format!("sets `{name}`, which hubload writes itself"),
        ));
    }
    check_value(field, value)?;
    Ok(ExtraHeader {
        name: name.to_string(),
        value: Secret::new(value),
    })
}

/// The extra headers of every hub request: `Authorization` (Bearer from a token, or Basic
/// from the URL's user-info, which is removed from `url`), then each `--header` in order.
pub(super) fn resolve(
    a: &RunArgs,
    url: Option<&mut url::Url>,
) -> Result<ExtraHeaders, ConfigError> {
    let bearer = bearer(a)?;
    let basic = basic(url)?;
    if bearer.is_some() && basic.is_some() {
        return Err(ConfigError::Conflict(
            "a token (--hub-token, --hub-token-file) and user-info in --hub-url are two Authorization headers; give one".into(),
        ));
    }
    let mut out = ExtraHeaders(bearer.into_iter().chain(basic).collect());
    for raw in &a.header {
        let h = header(raw)?;
        if out.has(&h.name) {
            return Err(secret_error(
                "header",
                format!(
                    "sets `{}` twice (a token or URL user-info sets Authorization)",
                    h.name
                ),
            ));
        }
        out.0.push(h);
    }
    Ok(out)
}

/// `s` (a URL as given) with the password of its user-info replaced by `redacted`, for error
/// messages about a URL that may not even parse.
pub(super) fn redact_url_text(s: &str) -> String {
    let Some(start) = s.find("://").map(|i| i + 3) else {
        return s.to_string();
    };
    let authority_end = s[start..]
        .find(['/', '?', '#'])
        .map_or(s.len(), |i| start + i);
    let Some(at) = s[start..authority_end].rfind('@').map(|i| start + i) else {
        return s.to_string();
    };
    match s[start..at].find(':') {
        Some(colon) => format!("{}:redacted{}", &s[..start + colon], &s[at..]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_flags::{args, err};
    use super::*;

    fn shown(h: &ExtraHeaders) -> Vec<(String, String)> {
        h.0.iter()
            .map(|h| (h.name.clone(), h.value.expose().to_string()))
            .collect()
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn headers_in_order() {
        let h = resolve(
            &args(&[
                "--hub-token",
                "abc",
                "--header",
                "X-Api-Key:  k1 ",
                "--header",
                "X-B:2",
            ]),
            None,
        )
        .unwrap();
        assert_eq!(
            shown(&h),
            pairs(&[
                ("Authorization", "Bearer abc"),
                ("X-Api-Key", "k1"),
                ("X-B", "2")
            ])
        );
    }

    #[test]
    fn token_file_loses_one_newline() {
        let dir = tempfile::tempdir().unwrap();
        for (content, want) in [
            ("abc\n", Some("Bearer abc")),
            ("abc\r\n", Some("Bearer abc")),
            ("abc", Some("Bearer abc")),
            // Only one newline is the mount's; a second is in the secret, and refused.
            ("abc\n\n", None),
        ] {
            let p = dir.path().join("token");
            std::fs::write(&p, content).unwrap();
            let r = resolve(&args(&["--hub-token-file", p.to_str().unwrap()]), None);
            match want {
                Some(w) => assert_eq!(shown(&r.unwrap()), pairs(&[("Authorization", w)])),
                None => err(r, "invalid --hub-token-file: contains a control character"),
            }
        }
        let missing = dir.path().join("nope");
        err(
            resolve(
                &args(&["--hub-token-file", missing.to_str().unwrap()]),
                None,
            ),
            &format!(
                "invalid --hub-token-file: cannot read {}: entity not found",
                missing.display()
            ),
        );
    }

    #[test]
    fn user_info_becomes_basic_and_leaves_the_url() {
        let mut u = url::Url::parse("http://al%69ce:p%40ss%3Aw%20rd@h:9/hub?x=1").unwrap();
        let h = resolve(&args(&[]), Some(&mut u)).unwrap();
        // base64("alice:p@ss:w rd")
        let want = base64::engine::general_purpose::STANDARD.encode("alice:p@ss:w rd");
        assert_eq!(want, "YWxpY2U6cEBzczp3IHJk");
        assert_eq!(
            shown(&h),
            pairs(&[("Authorization", &format!("Basic {want}"))])
        );
        assert_eq!(u.as_str(), "http://h:9/hub?x=1");
        let mut plain = url::Url::parse("http://h/hub").unwrap();
        assert_eq!(
            resolve(&args(&[]), Some(&mut plain)).unwrap(),
            ExtraHeaders::default()
        );
    }

    #[test]
    fn rules_and_messages_never_echo_values() {
        let cases: &[(&[&str], &str)] = &[
            (
                &["--hub-token", "x\r\nX-Injected: 1"],
                "invalid --hub-token: contains a control character",
            ),
            (
                &["--hub-token", "abc\n"],
                "invalid --hub-token: contains a control character",
            ),
            (
                &["--hub-token", "a\tb"],
                "invalid --hub-token: contains a control character",
            ),
            (&["--hub-token", ""], "invalid --hub-token: is empty"),
            (
                &["--header", "A: b\r\nX: y"],
                "invalid --header: contains a control character",
            ),
            (
                &["--header", "A: b\x00"],
                "invalid --header: contains a control character",
            ),
            (
                &["--header", "Bad Name: v"],
                "invalid --header: has a header name that is not an RFC 7230 token",
            ),
            (
                &["--header", "X-Key\r\nX-Injected: 1"],
                "invalid --header: has a header name that is not an RFC 7230 token",
            ),
            (
                &["--header", ": v"],
                "invalid --header: has a header name that is not",
            ),
            (
                &["--header", "novalue"],
                "invalid --header: must be `Name: value`",
            ),
            (&["--header", "X-Key:"], "invalid --header: is empty"),
            (
                &["--header", "Host: evil"],
                "invalid --header: sets `Host`, which hubload writes itself",
            ),
            (
                &["--header", "content-length: 5"],
                "invalid --header: sets `content-length`",
            ),
            (
                &["--header", "Transfer-Encoding: chunked"],
                "invalid --header: sets `Transfer-Encoding`",
            ),
            (
                &["--header", "Connection: close"],
                "invalid --header: sets `Connection`",
            ),
            (
                &["--hub-token", "t", "--header", "authorization: Basic x"],
                "invalid --header: sets `authorization` twice",
            ),
            (
                &["--header", "X-A: 1", "--header", "x-a: 2"],
                "invalid --header: sets `x-a` twice",
            ),
            (
                &["--hub-token", "t", "--hub-token-file", "f"],
                "--hub-token and --hub-token-file exclude each other",
            ),
        ];
        for (argv, want) in cases {
            let r = resolve(&args(argv), None);
            let e = r.as_ref().expect_err(want).to_string();
            for secret in ["X-Injected", "evil", "\r", "\n", "Basic x", "b\r"] {
                assert!(!e.contains(secret), "{argv:?}: `{e}` shows `{secret}`");
            }
            err(r, want);
        }
        let mut u = url::Url::parse("http://a:s3cret@h/hub").unwrap();
        let e = resolve(&args(&["--hub-token", "t"]), Some(&mut u))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("a token (--hub-token, --hub-token-file) and user-info"),
            "{e}"
        );
        let mut u = url::Url::parse("http://a%3Ab:x@h/hub").unwrap();
        err(
            resolve(&args(&[]), Some(&mut u)),
            "invalid --hub-url: the user name contains `:`",
        );
    }

    #[test]
    fn url_text_redaction() {
        for (given, want) in [
            ("http://alice:pw@h/hub", "http://alice:redacted@h/hub"),
            ("http://alice:p@w@h:1?x=@", "http://alice:redacted@h:1?x=@"),
            ("http://alice@h/hub", "http://alice@h/hub"),
            ("http://h/a:b@c", "http://h/a:b@c"),
            ("not a url:pw@x", "not a url:pw@x"),
            ("ftp://u:pw@h", "ftp://u:redacted@h"),
        ] {
            assert_eq!(redact_url_text(given), want, "{given}");
        }
    }
}
