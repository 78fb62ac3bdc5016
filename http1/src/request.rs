//! Request heads a server reads: one head from the start of a buffer, with its body's framing
//! and every limit. Pure functions over bytes; the servers' connection loop does the I/O.
//!
//! Taken (docs/http1-codec.md): HTTP/1.1 and 1.0, keep-alive (1.1 unless `Connection: close`,
//! 1.0 only with `Connection: keep-alive`), `Content-Length` or chunked bodies, `Expect:
//! 100-continue`, pipelined requests. Refused: a head past [`MAX_HEAD`] or [`MAX_HEADERS`]
//! fields (431), a malformed head, conflicting or invalid lengths, both framings at once
//! (400), a transfer coding other than `chunked` (501).

use std::mem::MaybeUninit;
use std::ops::Range;

/// The longest request head taken, bytes.
pub const MAX_HEAD: usize = 64 * 1024;
/// The most header fields taken in one head.
pub const MAX_HEADERS: usize = 64;

/// The request methods the callback answers (any other is answered 405).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Intent verification.
    Get,
    /// A delivery.
    Post,
    /// Anything else.
    Other,
}

/// How the request's body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `Content-Length: n` (no length and no coding: 0).
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// One parsed request head; ranges index the buffer it was parsed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// Bytes of the head, its blank line included: the body starts here.
    pub len: usize,
    /// The method.
    pub method: Method,
    /// The request target (`/cb/3/0?hub.mode=...`).
    pub target: Range<usize>,
    /// The `X-Hub-Signature` value, if any.
    pub signature: Option<Range<usize>>,
    /// The first `Hub-Timing` value (the publish's stages a hub carries), if any.
    pub hub_timing: Option<Range<usize>>,
    /// The body's framing.
    pub framing: Framing,
    /// Whether the connection stays open after the answer.
    pub keep_alive: bool,
    /// `Expect: 100-continue` on an HTTP/1.1 request: the client may wait for `100 Continue`.
    pub expect_continue: bool,
    /// An HTTP/1.0 request.
    pub http10: bool,
}

/// A head that cannot be taken; the connection is answered [`HeadError::status`] and closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadError {
    /// Not HTTP/1.x, a bad line or field, an invalid or conflicting length: 400.
    Malformed,
    /// Past [`MAX_HEAD`] bytes or [`MAX_HEADERS`] fields: 431.
    TooLarge,
    /// A transfer coding other than `chunked`: 501.
    UnknownCoding,
}

impl HeadError {
    /// The status it is answered with.
    pub fn status(self) -> u16 {
        match self {
            HeadError::Malformed => 400,
            HeadError::TooLarge => 431,
            HeadError::UnknownCoding => 501,
        }
    }
}

/// The comma-separated tokens of a field value, trimmed, empty ones skipped.
fn tokens(v: &[u8]) -> impl Iterator<Item = &[u8]> {
    v.split(|b| *b == b',')
        .map(<[u8]>::trim_ascii)
        .filter(|t| !t.is_empty())
}

/// A `Content-Length` value: digits (a list of equal values allowed, RFC 9110 §8.6).
fn content_length(v: &[u8]) -> Option<u64> {
    let mut found = None;
    for t in v.split(|b| *b == b',').map(<[u8]>::trim_ascii) {
        if t.is_empty() || t.len() > 19 || !t.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let n = t.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
        if found.is_some_and(|f| f != n) {
            return None;
        }
        found = Some(n);
    }
    found
}

/// The head at the start of `buf`: `Ok(None)` while it is incomplete (and within limits).
pub fn parse_head(buf: &[u8]) -> Result<Option<Head>, HeadError> {
    // Left uninitialised: httparse writes the fields it finds (no 2 KiB of zeros per head).
    let mut fields = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let len = match req.parse_with_uninit_headers(buf, &mut fields) {
        Ok(httparse::Status::Complete(n)) if n <= MAX_HEAD => n,
        Ok(httparse::Status::Partial) if buf.len() <= MAX_HEAD => return Ok(None),
        Ok(_) | Err(httparse::Error::TooManyHeaders) => return Err(HeadError::TooLarge),
        Err(_) => return Err(HeadError::Malformed),
    };
    let at = |s: &[u8]| {
        let start = s.as_ptr() as usize - buf.as_ptr() as usize;
        start..start + s.len()
    };
    let (Some(method), Some(path), Some(minor)) = (req.method, req.path, req.version) else {
        return Err(HeadError::Malformed);
    };
    let http10 = minor == 0;
    let (mut length, mut chunked, mut codings) = (None, false, 0);
    let (mut close, mut keep, mut expect, mut signature) = (false, false, false, None);
    let mut hub_timing = None;
    for f in req.headers.iter() {
        let name = f.name.as_bytes();
        let eq = |n: &str| name.eq_ignore_ascii_case(n.as_bytes());
        if eq("content-length") {
            let n = content_length(f.value).ok_or(HeadError::Malformed)?;
            if length.is_some_and(|l| l != n) {
                return Err(HeadError::Malformed);
            }
            length = Some(n);
        } else if eq("transfer-encoding") {
            for t in tokens(f.value) {
                codings += 1;
                chunked = t.eq_ignore_ascii_case(b"chunked");
            }
        } else if eq("connection") {
            for t in tokens(f.value) {
                close |= t.eq_ignore_ascii_case(b"close");
                keep |= t.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if eq("expect") {
            expect |= f.value.trim_ascii().eq_ignore_ascii_case(b"100-continue");
        } else if eq("x-hub-signature") {
            signature = Some(at(f.value));
        } else if hub_timing.is_none() && eq("hub-timing") {
            hub_timing = Some(at(f.value));
        }
    }
    let framing = match (codings, length) {
        (0, l) => Framing::Length(l.unwrap_or(0)),
        // Both framings (a smuggling vector) or chunked on HTTP/1.0: refused.
        (_, Some(_)) => return Err(HeadError::Malformed),
        _ if http10 => return Err(HeadError::Malformed),
        (1, None) if chunked => Framing::Chunked,
        _ => return Err(HeadError::UnknownCoding),
    };
    Ok(Some(Head {
        len,
        method: match method {
            "GET" => Method::Get,
            "POST" => Method::Post,
            _ => Method::Other,
        },
        target: at(path.as_bytes()),
        signature,
        hub_timing,
        framing,
        keep_alive: !close && (!http10 || keep),
        expect_continue: expect && !http10,
        http10,
    }))
}

/// A whole request head field by field, for a caller that needs every field (converting a
/// rendered request to HTTP/2): `f` is called with each field's name and value, and the
/// method, the target and the head's length are returned; `None` if `buf` does not start
/// with a whole head within [`MAX_HEADERS`] fields.
pub fn read_fields<'a>(
    buf: &'a [u8],
    mut f: impl FnMut(&'a str, &'a [u8]),
) -> Option<(&'a str, &'a str, usize)> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut fields);
    let httparse::Status::Complete(len) = req.parse(buf).ok()? else {
        return None;
    };
    for field in req.headers.iter() {
        f(field.name, field.value);
    }
    Some((req.method?, req.path?, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    const POST: &[u8] = b"POST /cb/1/2 HTTP/1.1\r\nHost: x\r\nX-Hub-Signature: sha256=ab\r\nContent-Length: 5\r\n\r\nhello";

    fn head(s: &str) -> Result<Option<Head>, HeadError> {
        parse_head(s.as_bytes())
    }

    #[test]
    fn a_head_is_incomplete_at_every_split_and_whole_at_its_end() {
        let whole = parse_head(POST).unwrap().unwrap();
        let end = POST.len() - 5;
        assert_eq!(whole.len, end);
        assert_eq!(&POST[whole.target.clone()], b"/cb/1/2");
        assert_eq!(&POST[whole.signature.clone().unwrap()], b"sha256=ab");
        assert_eq!(whole.hub_timing, None);
        // The first `Hub-Timing`, any case.
        let timed = "POST /cb/1/2 HTTP/1.1\r\nhub-timing: hub;dur=1\r\nHub-Timing: x\r\n\r\n";
        let h = head(timed).unwrap().unwrap();
        assert_eq!(&timed[h.hub_timing.unwrap()], "hub;dur=1");
        assert_eq!(
            (whole.method, whole.framing, whole.keep_alive),
            (Method::Post, Framing::Length(5), true)
        );
        assert!(!whole.expect_continue && !whole.http10);
        for i in 0..end {
            assert_eq!(parse_head(&POST[..i]), Ok(None), "split at {i}");
        }
        for i in end..=POST.len() {
            assert_eq!(
                parse_head(&POST[..i]).unwrap().as_ref(),
                Some(&whole),
                "{i}"
            );
        }
    }

    #[test]
    fn framing_and_keep_alive() {
        let h = |s: &str| head(s).unwrap().unwrap();
        let c = h("POST / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\nExpect: 100-Continue\r\n\r\n");
        assert_eq!((c.framing, c.expect_continue), (Framing::Chunked, true));
        assert_eq!(h("GET / HTTP/1.1\r\n\r\n").framing, Framing::Length(0));
        assert_eq!(
            h("POST / HTTP/1.1\r\nContent-Length: 7, 7\r\ncontent-length: 7\r\n\r\n").framing,
            Framing::Length(7)
        );
        assert!(!h("GET / HTTP/1.1\r\nConnection: foo, Close\r\n\r\n").keep_alive);
        let old = h("GET / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n");
        assert!(old.http10 && !old.keep_alive && !old.expect_continue);
        assert!(h("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").keep_alive);
        assert_eq!(h("PUT / HTTP/1.1\r\n\r\n").method, Method::Other);
    }

    #[test]
    fn bad_heads_are_refused() {
        let m = Err(HeadError::Malformed);
        assert_eq!(
            head("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"),
            m
        );
        assert_eq!(head("POST / HTTP/1.1\r\nContent-Length: 5, 6\r\n\r\n"), m);
        assert_eq!(head("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"), m);
        assert_eq!(
            head("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n"),
            m
        );
        assert_eq!(
            head("POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"),
            m
        );
        assert_eq!(
            head("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"),
            m
        );
        assert_eq!(head("NOT HTTP\r\n\r\n"), m);
        assert_eq!(head("GET / HTTP/2.0\r\n\r\n"), m);
        let u = Err(HeadError::UnknownCoding);
        assert_eq!(
            head("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"),
            u
        );
        assert_eq!(
            head("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"),
            u
        );
        assert_eq!(
            head("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"),
            u
        );
        let many = format!(
            "GET / HTTP/1.1\r\n{}\r\n",
            "A: b\r\n".repeat(MAX_HEADERS + 1)
        );
        assert_eq!(head(&many), Err(HeadError::TooLarge));
        let huge = format!("GET / HTTP/1.1\r\nA: {}", "b".repeat(MAX_HEAD));
        assert_eq!(head(&huge), Err(HeadError::TooLarge));
        assert_eq!(head(&huge[..MAX_HEAD]), Ok(None));
    }
}
