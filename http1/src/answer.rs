//! Answers a server writes: the status line, `content-length`, `date`, an optional body and its type, extra fields, and whether the connection stays open.

use std::cell::Cell;
use std::time::{SystemTime, UNIX_EPOCH};

/// The interim answer to `Expect: 100-continue`.
pub const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

thread_local! {
    /// The `Date` value, rendered once per second per thread: (Unix second, IMF-fixdate).
    static DATE: Cell<(u64, [u8; 29])> = const { Cell::new((u64::MAX, [0; 29])) };
}

/// Now as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
fn date() -> [u8; 29] {
    let now = SystemTime::now();
    let second = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    DATE.with(|d| {
        let (at, text) = d.get();
        if at == second {
            return text;
        }
        let mut text = [b' '; 29];
        let s = httpdate::fmt_http_date(now);
        let n = s.len().min(29);
        text[..n].copy_from_slice(&s.as_bytes()[..n]);
        d.set((second, text));
        text
    })
}

/// What the connection does after an answer, as its `connection` field says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Persist {
    /// HTTP/1.1's default: no field.
    KeepAlive,
    /// `connection: close`: the server closes after this answer.
    Close,
    /// `connection: keep-alive`: an HTTP/1.0 client's keep-alive granted.
    KeepAlive10,
}

impl Persist {
    /// The answer to a request that asked `keep_alive` over HTTP/1.0 or not, when the server
    /// itself wants to `close` or not.
    pub fn of(keep_alive: bool, http10: bool, close: bool) -> Persist {
        match (keep_alive && !close, http10) {
            (false, _) => Persist::Close,
            (true, true) => Persist::KeepAlive10,
            (true, false) => Persist::KeepAlive,
        }
    }
}

/// One answer: status, body, the body's type, further fields (names and values written as
/// given: the caller's own constants, never peer input).
#[derive(Debug, Clone, Copy)]
pub struct Answer<'a> {
    /// The status code.
    pub status: u16,
    /// The `content-type` of a body, if any.
    pub content_type: Option<&'a str>,
    /// Further fields, written in order after the standard ones.
    pub fields: &'a [(&'a str, &'a [u8])],
    /// The body (`content-length` says its size).
    pub body: &'a [u8],
}

impl Answer<'_> {
    /// `status` with no body.
    pub const fn empty(status: u16) -> Answer<'static> {
        Answer {
            status,
            content_type: None,
            fields: &[],
            body: b"",
        }
    }
}

/// Append the answer `status` (with `text` as a `text/plain` body) to `out`; `close` says the
/// connection ends after it, `http10_keep` that an HTTP/1.0 client's keep-alive is granted.
pub fn write_answer(
    out: &mut Vec<u8>,
    status: u16,
    text: Option<&str>,
    close: bool,
    http10_keep: bool,
) {
    write_answer_dated(out, status, text, close, http10_keep, &date());
}

/// Append `answer` to `out`, dated now.
pub fn write_full(out: &mut Vec<u8>, answer: &Answer<'_>, persist: Persist) {
    write(out, answer, persist, &date());
}

fn write(out: &mut Vec<u8>, a: &Answer<'_>, persist: Persist, date: &[u8; 29]) {
    let reason = http::StatusCode::from_u16(a.status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(itoa::Buffer::new().format(a.status).as_bytes());
    out.push(b' ');
    out.extend_from_slice(reason.as_bytes());
    out.extend_from_slice(b"\r\ncontent-length: ");
    out.extend_from_slice(itoa::Buffer::new().format(a.body.len()).as_bytes());
    out.extend_from_slice(b"\r\ndate: ");
    out.extend_from_slice(date);
    if let Some(t) = a.content_type {
        out.extend_from_slice(b"\r\ncontent-type: ");
        out.extend_from_slice(t.as_bytes());
    }
    for (name, value) in a.fields {
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
    }
    match persist {
        Persist::Close => out.extend_from_slice(b"\r\nconnection: close"),
        Persist::KeepAlive10 => out.extend_from_slice(b"\r\nconnection: keep-alive"),
        Persist::KeepAlive => {}
    }
    out.extend_from_slice(b"\r\n\r\n");
    out.extend_from_slice(a.body);
}

/// [`write_answer`] with a given date (the tests give a fixed one).
fn write_answer_dated(
    out: &mut Vec<u8>,
    status: u16,
    text: Option<&str>,
    close: bool,
    http10_keep: bool,
    date: &[u8; 29],
) {
    let persist = match (close, http10_keep) {
        (true, _) => Persist::Close,
        (false, true) => Persist::KeepAlive10,
        (false, false) => Persist::KeepAlive,
    };
    let answer = Answer {
        status,
        content_type: text.map(|_| "text/plain"),
        fields: &[],
        body: text.unwrap_or("").as_bytes(),
    };
    write(out, &answer, persist, date);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers() {
        let mut out = Vec::new();
        let d = b"Sun, 06 Nov 1994 08:49:37 GMT";
        write_answer_dated(&mut out, 200, None, false, false, d);
        write_answer_dated(&mut out, 200, Some("abc"), true, false, d);
        write_answer_dated(&mut out, 410, None, false, true, d);
        let d = "date: Sun, 06 Nov 1994 08:49:37 GMT\r\n";
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!(
                "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n{d}\r\n\
                 HTTP/1.1 200 OK\r\ncontent-length: 3\r\n{d}content-type: text/plain\r\nconnection: close\r\n\r\nabc\
                 HTTP/1.1 410 Gone\r\ncontent-length: 0\r\n{d}connection: keep-alive\r\n\r\n"
            )
        );
        // The live date is now, to the second.
        let now = httpdate::parse_http_date(std::str::from_utf8(&date()).unwrap()).unwrap();
        let age = SystemTime::now().duration_since(now).unwrap();
        assert!(age.as_secs() < 2, "{age:?}");
    }
}
