//! Response heads a client reads: a fast scan for the common form, else `httparse`; the verdict is
//! the same however the input is split across reads.
//!
//! Pure functions on byte slices; each client's socket loop does the I/O.

/// A response head that cannot be taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseError {
    /// Not an HTTP/1.x status line.
    NotHttp,
    /// A status line without a valid three-digit code.
    MalformedStatusLine,
    /// A malformed header line, or an invalid or conflicting `Content-Length`.
    MalformedHead,
    /// More than 64 header fields.
    TooManyHeaders,
}

pub mod memo;
mod scan;

use scan::{known_name, text_to_cr, token_end, trim_space_tab, Name, Pattern};

/// Most headers a response may carry; more is a protocol error.
pub const MAX_HEADERS: usize = 64;

/// How the body of a response is delimited (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body: 1xx, 204, 304, or the answer to a HEAD request.
    Empty,
    /// `Content-Length: n`.
    Length(u64),
    /// `Transfer-Encoding: …, chunked`.
    Chunked,
    /// Neither: the body ends when the server closes the connection.
    UntilClose,
}

/// The parts of a response head the client acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// Status code.
    pub status: u16,
    /// Bytes of the head, status line through the blank line.
    pub len: usize,
    /// How the body is delimited.
    pub framing: Framing,
    /// Whether the connection may carry another request afterwards.
    pub keep_alive: bool,
    /// Whether the head carries a `Server-Timing` header: only then are its values read
    /// (hubload's `targets/http/head_server_timing.rs`), so a response without one costs a length compare per header.
    pub server_timing: bool,
}

/// Parse a response head at the start of `buf`.
///
/// `Ok(None)` means the head is not complete yet. For a final (non-1xx) response the
/// `Content-Type` value is copied into `content_type`, reusing its allocation.
///
/// The verdict depends on the bytes only: an error is found in a prefix of the head, so any
/// longer input gives the same error (the caller bounds the input to the head limit).
///
/// A complete head in the common form (see [`fast_head`]) is read by a scan of our own;
/// anything else goes to `httparse`. Both give the same answer for every input the scan
/// accepts (checked on the corpus and on random heads: hubload's `src/targets/http/determinism_tests.rs`).
pub fn parse_head(
    buf: &[u8],
    head_request: bool,
    content_type: &mut Option<Vec<u8>>,
) -> Result<Option<Head>, ResponseError> {
    match fast_head(buf, head_request, content_type) {
        Some(head) => Ok(Some(head)),
        None => parse_head_full(buf, head_request, content_type),
    }
}
/// [`parse_head`] through `httparse` alone: the reference the fast scan is checked against.
pub fn parse_head_full(
    buf: &[u8],
    head_request: bool,
    content_type: &mut Option<Vec<u8>>,
) -> Result<Option<Head>, ResponseError> {
    // Left uninitialised: initialising 64 headers on every call cost more than the parse.
    let mut headers = [const { std::mem::MaybeUninit::uninit() }; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut []);
    let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut resp,
        buf,
        &mut headers,
    );
    let len = match parsed {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(ResponseError::TooManyHeaders),
        Err(httparse::Error::Version) => return Err(ResponseError::NotHttp),
        Err(httparse::Error::Status) => return Err(ResponseError::MalformedStatusLine),
        Err(_) => return Err(ResponseError::MalformedHead),
    };
    let mut facts = Facts::new(resp.version == Some(1));
    for h in resp.headers.iter() {
        facts.header(h.name.as_bytes(), h.value)?;
    }
    Ok(Some(facts.finish(
        resp.code.unwrap_or(0),
        len,
        head_request,
        content_type,
    )))
}

/// The common head, read without `httparse`: `HTTP/1.1` or `HTTP/1.0`, one space, three
/// digits, an optional reason of visible ASCII, spaces and tabs, then at most
/// [`MAX_HEADERS`] lines `name:value` (name of token characters, value of visible ASCII,
/// spaces and tabs, leading and trailing spaces and tabs dropped as `httparse` drops them),
/// every line ended by CRLF, and the blank line. `None` for anything else — an incomplete
/// head, a bare LF, obs-text, a control byte, leading blank lines, too many headers, a
/// header whose value is not valid for us (a bad `Content-Length`): the full parser then
/// decides, so errors and partial heads always come from `httparse`.
pub fn fast_head(
    buf: &[u8],
    head_request: bool,
    content_type: &mut Option<Vec<u8>>,
) -> Option<Head> {
    // The status line at fixed offsets: the version, a space, three digits, then a space
    // and the reason, or the CR at once.
    let (start, after) = buf.split_first_chunk::<13>()?;
    let http11 = match u64::from_le_bytes(*start.first_chunk()?) {
        HTTP_11 => true,
        HTTP_10 => false,
        _ => return None,
    };
    let digits = [start[9], start[10], start[11]].map(|b| b.wrapping_sub(b'0'));
    if start[8] != b' ' || digits.iter().any(|&d| d > 9) {
        return None;
    }
    let status = u16::from(digits[0]) * 100 + u16::from(digits[1]) * 10 + u16::from(digits[2]);
    // `rest` starts at the CR ending the line before.
    let mut rest = match start[12] {
        b' ' => &after[text_to_cr(after)?..],
        b'\r' => &buf[12..],
        _ => return None,
    };
    let mut facts = Facts::new(http11);
    let mut count = 0;
    loop {
        let line = match rest {
            [_, b'\n', b'\r', b'\n', ..] => {
                let len = buf.len() - rest.len() + 4;
                return Some(facts.finish(status, len, head_request, content_type));
            }
            [_, b'\n', line @ ..] => line,
            _ => return None,
        };
        if count == MAX_HEADERS {
            return None;
        }
        count += 1;
        let value;
        if let Some((name, after_colon)) = known_name(line) {
            // One of the four headers the client reads, told from its first 24 bytes.
            value = &line[after_colon..];
            let cr = text_to_cr(value)?;
            facts.apply(name, trim_space_tab(&value[..cr])).ok()?;
            rest = &value[cr..];
        } else {
            let colon = token_end(line)?;
            if colon == 0 || line[colon] != b':' {
                return None;
            }
            value = &line[colon + 1..];
            let cr = text_to_cr(value)?;
            if colon == SERVER_TIMING.len() && is_name(&line[..colon], SERVER_TIMING) {
                facts.server_timing = true;
            }
            // With 24 bytes in view `known_name` has ruled the four names out already.
            if line.len() < 24 {
                facts.header(&line[..colon], &value[..cr]).ok()?;
            }
            rest = &value[cr..];
        }
    }
}

/// The first eight bytes of the two versions, read as one little-endian word.
const HTTP_11: u64 = u64::from_le_bytes(*b"HTTP/1.1");
const HTTP_10: u64 = u64::from_le_bytes(*b"HTTP/1.0");

/// The one header noted but not acted on, lowercase.
pub const SERVER_TIMING: &[u8] = b"server-timing";

/// What the headers say, gathered one header at a time (by either parser).
struct Facts<'a> {
    server_timing: bool,
    http11: bool,
    keep_alive: bool,
    length: Option<u64>,
    chunked: bool,
    transfer_encoding: bool,
    content_type: Option<&'a [u8]>,
}

impl<'a> Facts<'a> {
    fn new(http11: bool) -> Self {
        Self {
            http11,
            keep_alive: http11,
            length: None,
            chunked: false,
            transfer_encoding: false,
            content_type: None,
            server_timing: false,
        }
    }

    /// One header by name (any case); `value` trimmed here, as `httparse` trims it (a value
    /// it trimmed already is left as it is).
    fn header(&mut self, name: &[u8], value: &'a [u8]) -> Result<(), ResponseError> {
        // The length first: most headers (Date, Server, …) are then skipped without comparing
        // a byte of their names.
        if !matches!(name.len(), 10 | 12 | 13 | 14 | 17) {
            return Ok(());
        }
        if name.len() == SERVER_TIMING.len() {
            self.server_timing |= is_name(name, SERVER_TIMING);
            return Ok(());
        }
        let name = if is_name(name, b"content-length") {
            Name::ContentLength
        } else if is_name(name, b"transfer-encoding") {
            Name::TransferEncoding
        } else if is_name(name, b"connection") {
            Name::Connection
        } else if is_name(name, b"content-type") {
            Name::ContentType
        } else {
            return Ok(());
        };
        self.apply(name, trim_space_tab(value))
    }

    /// One of the headers the client acts on, with its trimmed value.
    #[inline(always)]
    fn apply(&mut self, name: Name, value: &'a [u8]) -> Result<(), ResponseError> {
        match name {
            Name::ContentLength => {
                let n = parse_length(value).ok_or(ResponseError::MalformedHead)?;
                if self.length.is_some_and(|old| old != n) {
                    return Err(ResponseError::MalformedHead);
                }
                self.length = Some(n);
            }
            Name::TransferEncoding => {
                self.transfer_encoding = true;
                // Only the last coding decides: `gzip, chunked` is chunked, `chunked, gzip`
                // is not.
                self.chunked = last_token_is(value, b"chunked");
            }
            Name::Connection => {
                // The two usual values first, as `has_token` would read them.
                if is_keep_alive(value) {
                    self.keep_alive |= !self.http11;
                } else if value.eq_ignore_ascii_case(b"close") || has_token(value, b"close") {
                    self.keep_alive = false;
                } else if !self.http11 && has_token(value, b"keep-alive") {
                    self.keep_alive = true;
                }
            }
            Name::ContentType => self.content_type = Some(value),
        }
        Ok(())
    }
    #[inline(always)]
    fn finish(
        self,
        status: u16,
        len: usize,
        head_request: bool,
        content_type: &mut Option<Vec<u8>>,
    ) -> Head {
        let mut keep_alive = self.keep_alive;
        let framing =
            if (100..200).contains(&status) || status == 204 || status == 304 || head_request {
                Framing::Empty
            } else if self.transfer_encoding {
                if self.length.is_some() {
                    // RFC 9112 §6.3: both present is a smuggling risk; honour TE, then close.
                    keep_alive = false;
                }
                if self.chunked {
                    Framing::Chunked
                } else {
                    Framing::UntilClose
                }
            } else if let Some(n) = self.length {
                Framing::Length(n)
            } else {
                Framing::UntilClose
            };
        if framing == Framing::UntilClose {
            keep_alive = false;
        }
        if !(100..200).contains(&status) {
            set_content_type(content_type, self.content_type);
        }
        Head {
            status,
            len,
            framing,
            keep_alive,
            server_timing: self.server_timing,
        }
    }
}

/// `*to = from`, reusing `to`'s allocation: what a final head does to the caller's content type.
#[inline]
pub(crate) fn set_content_type(to: &mut Option<Vec<u8>>, from: Option<&[u8]>) {
    match (from, to.as_mut()) {
        (Some(value), Some(v)) => {
            v.clear();
            v.extend_from_slice(value);
        }
        (Some(value), None) => *to = Some(value.to_vec()),
        (None, _) => *to = None,
    }
}

/// Whether the header name `name` is `lower` (lowercase letters and `-`, at least 8 bytes) in
/// any case, eight bytes at a time. Exact for names of token characters, which both parsers
/// guarantee: the only token bytes that OR 0x20 maps onto a lowercase letter are that letter
/// in either case, and onto `-` only `-` itself (the other, CR, is no token byte).
fn is_name(name: &[u8], lower: &[u8]) -> bool {
    const CASE: u64 = 0x2020_2020_2020_2020;
    let word = |s: &[u8], at: usize| {
        s.get(at..)
            .and_then(<[u8]>::first_chunk::<8>)
            .map(|w| u64::from_le_bytes(*w))
    };
    if name.len() != lower.len() || name.len() < 8 {
        return name.eq_ignore_ascii_case(lower);
    }
    let mut at = 0;
    loop {
        // The last word may overlap the one before it.
        let from = at.min(name.len() - 8);
        if word(name, from).map(|w| w | CASE) != word(lower, from) {
            return false;
        }
        if from + 8 == name.len() {
            return true;
        }
        at += 8;
    }
}

/// Whether `value` is `keep-alive` in any case, as two word compares.
fn is_keep_alive(value: &[u8]) -> bool {
    const KEEP_ALI: Pattern = Pattern::new(b"keep-ali");
    const VE: Pattern = Pattern::new(b"ve");
    let Some((head, tail)) = value.split_first_chunk::<8>() else {
        return false;
    };
    let &[v, e] = tail else {
        return false;
    };
    KEEP_ALI.is_at(u64::from_le_bytes(*head)) && VE.is_at(u64::from(v) | u64::from(e) << 8)
}

fn parse_length(value: &[u8]) -> Option<u64> {
    let v = value.trim_ascii();
    if v.is_empty() || v.len() > 19 {
        return None;
    }
    let mut n = 0u64;
    for &b in v {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        n = n * 10 + u64::from(d);
    }
    Some(n)
}

fn has_token(value: &[u8], token: &[u8]) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

fn last_token_is(value: &[u8], token: &[u8]) -> bool {
    value
        .rsplit(|&b| b == b',')
        .next()
        .is_some_and(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

/// Call `f` with the value of every header named `name` (any case) in `head`, a complete
/// head (status line through the blank line) that [`parse_head`] took; a head it did not
/// take calls nothing. Off the hot path: for the rare header read whole (`Server-Timing`).
pub fn header_values(head: &[u8], name: &[u8], mut f: impl FnMut(&[u8])) {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    if !matches!(resp.parse(head), Ok(httparse::Status::Complete(_))) {
        return;
    }
    for h in resp.headers.iter() {
        if h.name.as_bytes().eq_ignore_ascii_case(name) {
            f(h.value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::scan::is_token;
    use super::*;

    fn head(bytes: &[u8], head_request: bool) -> Result<Option<Head>, ResponseError> {
        parse_head(bytes, head_request, &mut None)
    }

    fn framing(bytes: &[u8]) -> (Framing, bool) {
        let h = head(bytes, false).unwrap().unwrap();
        (h.framing, h.keep_alive)
    }

    #[test]
    fn framing_table() {
        let cases: &[(&[u8], Framing, bool)] = &[
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
                Framing::Length(5),
                true,
            ),
            (
                b"HTTP/1.1 200 OK\r\ncontent-length:  7 \r\n\r\n",
                Framing::Length(7),
                true,
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
                Framing::Length(5),
                true,
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n",
                Framing::Chunked,
                true,
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
                Framing::UntilClose,
                false,
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
                Framing::Chunked,
                false,
            ),
            (b"HTTP/1.1 200 OK\r\n\r\n", Framing::UntilClose, false),
            (
                b"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n",
                Framing::Length(0),
                false,
            ),
            (b"HTTP/1.1 204 No Content\r\n\r\n", Framing::Empty, true),
            (
                b"HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n",
                Framing::Empty,
                true,
            ),
            (b"HTTP/1.1 100 Continue\r\n\r\n", Framing::Empty, true),
            (
                b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n",
                Framing::Length(2),
                false,
            ),
            (
                b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n",
                Framing::Length(2),
                true,
            ),
            (b"HTTP/1.0 200 OK\r\n\r\n", Framing::UntilClose, false),
        ];
        for (bytes, want, keep) in cases {
            assert_eq!(
                framing(bytes),
                (*want, *keep),
                "{}",
                String::from_utf8_lossy(bytes)
            );
        }
    }

    /// `is_name` agrees with `eq_ignore_ascii_case` on token names: every case of the four
    /// names, and each with one byte replaced by every token byte.
    #[test]
    fn header_names_match_by_word_exactly() {
        for target in [
            &b"content-length"[..],
            b"transfer-encoding",
            b"connection",
            b"content-type",
        ] {
            for flips in 0..1u32 << target.len().min(17) {
                let name: Vec<u8> = target
                    .iter()
                    .enumerate()
                    .map(|(i, &b)| {
                        if flips >> i & 1 == 1 {
                            b.to_ascii_uppercase()
                        } else {
                            b
                        }
                    })
                    .collect();
                assert!(is_name(&name, target), "{name:?}");
            }
            for at in 0..target.len() {
                for b in (0..=255u8).filter(|&b| is_token(b)) {
                    let mut name = target.to_vec();
                    name[at] = b;
                    assert_eq!(
                        is_name(&name, target),
                        name.eq_ignore_ascii_case(target),
                        "{name:?}"
                    );
                }
            }
            assert!(!is_name(&target[1..], target));
        }
    }

    #[test]
    fn head_request_has_no_body() {
        let h = head(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", true)
            .unwrap()
            .unwrap();
        assert_eq!(h.framing, Framing::Empty);
    }

    #[test]
    fn head_errors_and_partial() {
        assert_eq!(head(b"HTTP/1.1 200 OK\r\nContent-Len", false), Ok(None));
        assert_eq!(head(b"", false), Ok(None));
        assert!(head(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
            false
        )
        .is_err());
        assert!(head(b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", false).is_err());
        assert!(head(
            b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
            false
        )
        .is_err());
        assert!(head(b"garbage\r\n\r\n", false).is_err());
        let many: Vec<u8> = [
            &b"HTTP/1.1 200 OK\r\n"[..],
            &b"X: y\r\n".repeat(65),
            b"\r\n",
        ]
        .concat();
        assert_eq!(head(&many, false), Err(ResponseError::TooManyHeaders));
        assert_eq!(
            head(b"SSH-2.0-OpenSSH\r\n\r\n", false),
            Err(ResponseError::NotHttp)
        );
        assert_eq!(
            head(b"HTTP/1.1 2x0 OK\r\n\r\n", false),
            Err(ResponseError::MalformedStatusLine)
        );
    }

    #[test]
    fn content_type_is_kept_for_final_responses_only() {
        let mut ct = Some(b"old".to_vec());
        parse_head(
            b"HTTP/1.1 100 Continue\r\nContent-Type: x\r\n\r\n",
            false,
            &mut ct,
        )
        .unwrap();
        assert_eq!(ct.as_deref(), Some(&b"old"[..]));
        parse_head(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n",
            false,
            &mut ct,
        )
        .unwrap();
        assert_eq!(ct.as_deref(), Some(&b"text/plain"[..]));
        parse_head(b"HTTP/1.1 200 OK\r\n\r\n", false, &mut ct).unwrap();
        assert_eq!(ct, None);
    }
}
