//! The last response head a thread parsed, and its verdict: a head that repeats it (the
//! `Date` value aside) is known without parsing it again.
//!
//! A server under load answers every request with the same head but for its `Date` header,
//! which changes once a second. Comparing bytes costs a tenth of parsing them, and the verdict
//! is the parser's own: [`HeadMemo::parse`] gives exactly what [`parse_head`] gives, for every
//! input (checked against it on the corpus and on random heads, `memo/tests.rs`).

use super::ResponseError;
use super::{parse_head, scan::text_to_cr, set_content_type, Head};

/// The longest head kept: longer ones are parsed every time (comparing costs as much).
const MOST_KEPT: usize = 1024;

/// One head parsed whole, and what parsing it gave.
#[derive(Debug, Default)]
pub struct HeadMemo {
    /// The head's bytes, status line through the blank line; empty when nothing is kept.
    bytes: Vec<u8>,
    /// Where the value of its first `Date` header lies (after the colon, to the CR), or an
    /// empty range: the only bytes a repeat may differ in.
    hole: (usize, usize),
    head_request: bool,
    head: Option<Head>,
    /// The `Content-Type` value the parse set (for a final head).
    content_type: Option<Vec<u8>>,
    /// Heads answered from the memo, and parsed (for the tests).
    #[cfg(any(test, feature = "testing"))]
    pub hits: u64,
    #[cfg(any(test, feature = "testing"))]
    pub parsed: u64,
}

impl HeadMemo {
    /// [`parse_head`] of `buf`: from the memo when `buf` starts with the kept head, its
    /// `Date` value aside, else parsed (and kept, when it is whole and short).
    ///
    /// Why a repeat has the kept head's verdict: its bytes differ from the kept head's only
    /// inside the `Date` value, which it holds as visible ASCII, spaces and tabs up to a CR
    /// at the same place. So its lines are the same lines but for that value, it has no CR or
    /// LF the kept head lacks (it ends where the kept head ends), and both parsers read such a
    /// `Date` line as a valid header whose value they ignore.
    // Inlined into the caller's read loop, as it was before it moved to this crate: the
    // publish path's instruction count (bench/README.md, "The codec crate").
    #[inline]
    pub fn parse(
        &mut self,
        buf: &[u8],
        head_request: bool,
        content_type: &mut Option<Vec<u8>>,
    ) -> Result<Option<Head>, ResponseError> {
        if let Some(head) = self.recall(buf, head_request) {
            #[cfg(any(test, feature = "testing"))]
            {
                self.hits += 1;
            }
            // As the parse sets it: for a final head only.
            if !(100..200).contains(&head.status) {
                set_content_type(content_type, self.content_type.as_deref());
            }
            return Ok(Some(head));
        }
        #[cfg(any(test, feature = "testing"))]
        {
            self.parsed += 1;
        }
        let parsed = parse_head(buf, head_request, content_type);
        if let Ok(Some(head)) = parsed {
            self.keep(&buf[..head.len], head_request, head, content_type);
        }
        parsed
    }

    /// The kept verdict, when `buf` repeats the kept head.
    #[inline(always)]
    fn recall(&self, buf: &[u8], head_request: bool) -> Option<Head> {
        let head = self.head?;
        let kept = &self.bytes[..];
        let new = buf.get(..kept.len())?;
        let (from, to) = self.hole;
        let same = head_request == self.head_request
            && new[..from] == kept[..from]
            && new[to..] == kept[to..]
            && (from == to || text_to_cr(&new[from..]) == Some(to - from));
        same.then_some(head)
    }

    fn keep(&mut self, bytes: &[u8], head_request: bool, head: Head, ct: &Option<Vec<u8>>) {
        if bytes.len() > MOST_KEPT {
            self.head = None;
            return;
        }
        self.bytes.clear();
        self.bytes.extend_from_slice(bytes);
        self.hole = date_value(bytes);
        self.head_request = head_request;
        self.head = Some(head);
        if !(100..200).contains(&head.status) {
            set_content_type(&mut self.content_type, ct.as_deref());
        }
    }
}

/// Where the value of the first header named `Date` (any case) lies in a whole head: from
/// after its colon to the CR ending its line. `(0, 0)` when there is none, or when its line
/// does not end in CR LF.
fn date_value(head: &[u8]) -> (usize, usize) {
    let mut at = 0;
    while let Some(lf) = head[at..].iter().position(|&b| b == b'\n') {
        let line = at + lf + 1;
        if head
            .get(line..line + 5)
            .is_some_and(|n| n.eq_ignore_ascii_case(b"date:"))
        {
            // The line must end in a CR: a line ended by a bare LF (which `httparse` takes)
            // gets no hole, or the hole would run on into the next line.
            let from = line + 5;
            return match head[from..].iter().position(|&b| b == b'\r' || b == b'\n') {
                Some(end) if head[from + end] == b'\r' => (from, from + end),
                _ => (0, 0),
            };
        }
        at = line;
    }
    (0, 0)
}
