//! The word-at-a-time scans of the fast head parser: where a value's line ends (checking every
//! byte on the way), where a header name ends, and which of the four headers the client reads
//! a line starts with. Each agrees with a byte-by-byte reading (tests below).

/// Up to eight bytes to find at the start of a word, as `(word | case) & keep == want`:
/// `want` holds the bytes (lowercase), `case` sets bit 0x20 at the letters only (so a letter
/// matches in either case, and every other byte, `-` and `:`, only itself), `keep` covers the
/// bytes compared.
#[derive(Clone, Copy)]
pub(super) struct Pattern {
    want: u64,
    case: u64,
    keep: u64,
}

impl Pattern {
    pub(super) const fn new(s: &[u8]) -> Self {
        let (mut want, mut case, mut keep) = (0, 0, 0);
        let mut k = 0;
        while k < s.len() {
            want |= (s[k] as u64) << (8 * k);
            if s[k].is_ascii_lowercase() {
                case |= 0x20 << (8 * k);
            }
            keep |= 0xff << (8 * k);
            k += 1;
        }
        Self { want, case, keep }
    }

    /// Exact: for a letter `c`, `b | 0x20 == c` holds only for `c` and its uppercase form.
    pub(super) fn is_at(self, word: u64) -> bool {
        (word | self.case) & self.keep == self.want
    }
}

const CONTENT_: Pattern = Pattern::new(b"content-");
const LENGTH_COLON: Pattern = Pattern::new(b"length:");
const TYPE_COLON: Pattern = Pattern::new(b"type:");
const CONNECTI: Pattern = Pattern::new(b"connecti");
const ON_COLON: Pattern = Pattern::new(b"on:");
const TRANSFER: Pattern = Pattern::new(b"transfer");
const DASH_ENCODIN: Pattern = Pattern::new(b"-encodin");
const G_COLON: Pattern = Pattern::new(b"g:");

/// The headers the client acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Name {
    ContentLength,
    TransferEncoding,
    Connection,
    ContentType,
}

/// Whether `line` starts with one of the four names, in any case, and a colon: the name and
/// the offset just past the colon. `None` when it does not, or when fewer than 24 bytes
/// follow (then the byte-by-byte scan decides). A match is exactly what that scan finds: the
/// name's bytes are token characters and the colon ends it.
pub(super) fn known_name(line: &[u8]) -> Option<(Name, usize)> {
    let words = line.first_chunk::<24>()?;
    let word = |k: usize| {
        let mut w = [0; 8];
        w.copy_from_slice(&words[8 * k..8 * k + 8]);
        u64::from_le_bytes(w)
    };
    // Most other names are told apart by their first byte alone.
    if !matches!(words[0] | 0x20, b'c' | b't') {
        return None;
    }
    let (a, b) = (word(0), word(1));
    if CONTENT_.is_at(a) {
        if LENGTH_COLON.is_at(b) {
            return Some((Name::ContentLength, 15));
        }
        if TYPE_COLON.is_at(b) {
            return Some((Name::ContentType, 13));
        }
    } else if CONNECTI.is_at(a) {
        if ON_COLON.is_at(b) {
            return Some((Name::Connection, 11));
        }
    } else if TRANSFER.is_at(a) && DASH_ENCODIN.is_at(b) && G_COLON.is_at(word(2)) {
        return Some((Name::TransferEncoding, 18));
    }
    None
}

/// The index of the first CR at or after `from`, if every byte before it is a tab, a space
/// or visible ASCII (no other control byte, DEL or obs-text); `None` otherwise, or when no
/// CR follows. Eight bytes at a time: a word with none of those bytes needs no per-byte test.
#[inline(always)]
pub(super) fn text_to_cr(text: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut i = 0;
    while let Some(word) = text.get(i..).and_then(<[u8]>::first_chunk::<8>) {
        let x = u64::from_le_bytes(*word);
        // The high bit of each byte that is >= 0x80 (`x`), < 0x20 (`x - 0x20` borrows) or
        // 0x7f (`x + 1` reaches 0x80). A borrow or carry leaves a byte only when that byte is
        // one of them, and runs upwards: the lowest flagged byte is exact, and it is the
        // first byte that is not visible ASCII or a space.
        let odd = (x | x.wrapping_sub(ONES * 0x20) | x.wrapping_add(ONES)) & HIGH;
        if odd == 0 {
            i += 8;
            continue;
        }
        let k = odd.trailing_zeros() / 8;
        i += k as usize;
        match (x >> (8 * k)) as u8 {
            b'\r' => return Some(i),
            b'\t' => i += 1,
            _ => return None,
        }
    }
    // The last 7 bytes or fewer, byte by byte.
    loop {
        match *text.get(i)? {
            b'\r' => return Some(i),
            b'\t' | b' '..=b'~' => i += 1,
            _ => return None,
        }
    }
}

/// The index of the first byte of `line` that is no token character (`None` if all are):
/// where a header name ends. Eight bytes at a time while they are letters, digits and `-`,
/// the bytes of nearly every name; any other byte is looked up in [`TOKEN`].
pub(super) fn token_end(line: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = ONES * 0x80;
    let mut i = 0;
    while let Some(word) = line.get(i..).and_then(<[u8]>::first_chunk::<8>) {
        let x = u64::from_le_bytes(*word);
        // Per byte, with no carry between bytes (every sum stays below 0x100): `y` the low
        // seven bits, `l` that with the case bit set. A letter is `l` in 0x61..=0x7a, a digit
        // `y` in 0x30..=0x39, `-` is `y ^ 0x2d == 0`; bytes >= 0x80 are none of them.
        let y = x & !HIGH;
        let l = y | (ONES * 0x20);
        let letter = (l + ONES * (0x80 - 0x61)) & !(l + ONES * (0x80 - 0x7b));
        let digit = (y + ONES * (0x80 - 0x30)) & !(y + ONES * (0x80 - 0x3a));
        let dash = !((y ^ (ONES * 0x2d)) + ONES * 0x7f);
        let other = !((letter | digit | dash) & !x) & HIGH;
        if other == 0 {
            i += 8;
            continue;
        }
        i += (other.trailing_zeros() / 8) as usize;
        if !is_token(line[i]) {
            return Some(i);
        }
        i += 1;
    }
    Some(i + line.get(i..)?.iter().position(|&b| !is_token(b))?)
}

/// An RFC 9110 token character (`tchar`): the bytes `httparse` accepts in a header name.
pub(super) fn is_token(b: u8) -> bool {
    TOKEN[usize::from(b)]
}

static TOKEN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric()
            || matches!(c, b'!' | b'#'..=b'\'' | b'*' | b'+' | b'-' | b'.' | b'^'..=b'`' | b'|' | b'~');
        b += 1;
    }
    t
};

/// `v` without leading and trailing spaces and tabs, as `httparse` trims a header value.
#[inline(always)]
pub(super) fn trim_space_tab(v: &[u8]) -> &[u8] {
    // The usual value has one leading space and no trailing one: two tests.
    let v = match v {
        [b' ', rest @ ..] => rest,
        _ => v,
    };
    match v {
        [b' ' | b'\t', ..] | [.., b' ' | b'\t'] => trim_more(v),
        _ => v,
    }
}

/// [`trim_space_tab`] for the rare value with more spaces or tabs around it.
#[cold]
#[inline(never)]
fn trim_more(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte-by-byte readings the word scans must agree with.
    fn token_end_ref(line: &[u8]) -> Option<usize> {
        line.iter().position(|&b| !is_token(b))
    }

    fn text_to_cr_ref(text: &[u8]) -> Option<usize> {
        for (i, &b) in text.iter().enumerate() {
            match b {
                b'\r' => return Some(i),
                b'\t' | b' '..=b'~' => {}
                _ => return None,
            }
        }
        None
    }

    /// Every byte value at every offset of lines of 1 to 40 bytes (so the word boundary falls
    /// everywhere), in a background of name bytes or of text with tabs, and then a second
    /// byte of every value after it: the word scans agree with the byte-by-byte reading.
    #[test]
    fn word_scans_match_byte_by_byte() {
        let name_bg = b"Content-Length0123456789-abcXYZ_Date-Server-x";
        let text_bg = b"nginx/1.22.1 Tue, 01\tDec 2026 12:00:00 GMT; q=1";
        for len in 1..=40 {
            for at in 0..len {
                for b in 0..=255u8 {
                    for bg in [&name_bg[..len], &text_bg[..len]] {
                        let mut line = bg.to_vec();
                        line[at] = b;
                        assert_eq!(token_end(&line), token_end_ref(&line), "{line:?}");
                        assert_eq!(text_to_cr(&line), text_to_cr_ref(&line), "{line:?}");
                        for (next, c) in [(at + 1, b'\r'), (at + 1, 0x80), (at + 3, b'(')] {
                            if next < len {
                                let mut two = line.clone();
                                two[next] = c;
                                assert_eq!(token_end(&two), token_end_ref(&two), "{two:?}");
                                assert_eq!(text_to_cr(&two), text_to_cr_ref(&two), "{two:?}");
                            }
                        }
                    }
                }
            }
        }
    }

    /// Random lines of bytes drawn mostly from the classes the scans tell apart.
    #[test]
    fn word_scans_match_byte_by_byte_on_random_lines() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let classes: &[&[u8]] = &[
            b"abcxyzABCXYZ0123456789-",
            b"!#$%&'*+.^_`|~",
            b" \t:;\"(),/<=>?@[\\]{}",
            b"\r\n\x00\x1f\x7f\x80\xff\x0b",
        ];
        for _ in 0..200_000 {
            let len = rng.gen_range(0..48);
            let line: Vec<u8> = (0..len)
                .map(|_| {
                    let c = classes[[0, 0, 0, 0, 0, 1, 2, 3][rng.gen_range(0..8)]];
                    c[rng.gen_range(0..c.len())]
                })
                .collect();
            assert_eq!(token_end(&line), token_end_ref(&line), "{line:?}");
            assert_eq!(text_to_cr(&line), text_to_cr_ref(&line), "{line:?}");
        }
    }

    /// `known_name` says what the byte-by-byte name scan would: when it names a header, the
    /// token name before the colon it points past is that header's name in some case; when
    /// it does not and 24 bytes were in view, the line's name is none of the four. Lines are
    /// the four names in random case, one byte off, or cut short, then a colon and filler.
    #[test]
    fn known_names_match_the_byte_scan() {
        use rand::{Rng, SeedableRng};
        let four: [(&[u8], Name); 4] = [
            (b"content-length", Name::ContentLength),
            (b"transfer-encoding", Name::TransferEncoding),
            (b"connection", Name::Connection),
            (b"content-type", Name::ContentType),
        ];
        let mut rng = rand::rngs::SmallRng::seed_from_u64(8);
        let mut hits = 0;
        for _ in 0..200_000 {
            let mut line: Vec<u8> = four[rng.gen_range(0..4)]
                .0
                .iter()
                .map(|&b| if rng.gen() { b.to_ascii_uppercase() } else { b })
                .collect();
            let at = rng.gen_range(0..=line.len());
            match rng.gen_range(0..5) {
                0 if at < line.len() => line[at] = rng.gen(),
                1 if at < line.len() => {
                    line.remove(at);
                }
                2 => line.insert(at, rng.gen()),
                3 => line.truncate(at),
                _ => {}
            }
            line.push(if rng.gen_ratio(7, 8) { b':' } else { rng.gen() });
            for _ in 0..rng.gen_range(0..16) {
                line.push(b"x \t\r\n:"[rng.gen_range(0..6)]);
            }
            let colon = token_end_ref(&line).filter(|&c| c > 0 && line[c] == b':');
            let named = colon.and_then(|c| {
                four.iter()
                    .find(|(n, _)| line[..c].eq_ignore_ascii_case(n))
                    .map(|&(_, name)| (name, c + 1))
            });
            match known_name(&line) {
                Some(got) => {
                    hits += 1;
                    assert_eq!(Some(got), named, "{line:?}");
                }
                None if line.len() >= 24 => assert_eq!(named, None, "{line:?}"),
                None => {}
            }
        }
        assert!(hits > 10_000, "{hits} lines named");
    }
}
