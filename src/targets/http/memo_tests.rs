//! Tests of the codec's head memo (`hubload-http1`, `response::memo`), on this crate's corpus: the memo gives what `parse_head` gives a fresh parse, verdict and content type, on
//! the corpus, on nginx-like heads and on random changes to them; and it answers a repeat
//! whose `Date` value alone changed without parsing.

use hubload_rng::SplitMix64;

use hubload_http1::response::memo::HeadMemo;
use hubload_http1::response::{parse_head, Head, ResponseError};

use super::determinism_tests::seed_corpus;

type Got = (Result<Option<Head>, ResponseError>, Option<Vec<u8>>);

/// The reference: a parse with nothing remembered.
fn fresh(q: &[u8], head_request: bool, ct: &Option<Vec<u8>>) -> Got {
    let mut ct = ct.clone();
    (parse_head(q, head_request, &mut ct), ct)
}

fn memoed(memo: &mut HeadMemo, q: &[u8], head_request: bool, ct: &Option<Vec<u8>>) -> Got {
    let mut ct = ct.clone();
    (memo.parse(q, head_request, &mut ct), ct)
}

const DATE: &[u8] = b"Tue, 01 Dec 2026 19:32:05 GMT";

/// Heads as servers send them, with the `Date` line in different places and forms.
fn heads() -> Vec<Vec<u8>> {
    let date = String::from_utf8(DATE.to_vec()).unwrap();
    let mut v: Vec<Vec<u8>> = [
        format!("HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: {date}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 17\r\nConnection: keep-alive\r\n\r\nhub.mode=accepted"),
        format!("HTTP/1.1 202 Accepted\r\nDate: {date}\r\nContent-Length: 0\r\n\r\n"),
        format!("HTTP/1.1 503 Service Unavailable\r\ndate:{date}\r\nconnection: close\r\ncontent-type: text/html\r\ncontent-length: 5\r\n\r\nbusy!"),
        format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nDATE:   {date}  \r\n\r\n5\r\nhello\r\n0\r\n\r\n"),
        format!("HTTP/1.0 200 OK\r\nDate: {date}\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok"),
        format!("HTTP/1.1 100 Continue\r\nDate: {date}\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
        format!("HTTP/1.1 204 No Content\r\nDate: {date}\r\nDate: {date}\r\n\r\n"),
        format!("HTTP/1.1 200 OK\r\nDate: {date}\nContent-Length: 3\r\n\r\nabc"),
        format!("HTTP/1.1 200 OK\r\nX-Date: {date}\r\nContent-Length: 1\r\n\r\nx"),
        "HTTP/1.1 200 OK\r\nDate:\r\nContent-Length: 1\r\n\r\nx".to_string(),
        "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnone".to_string(),
    ]
    .map(String::into_bytes)
    .to_vec();
    v.extend(seed_corpus());
    v
}

/// A byte that is often one a head treats specially.
fn byte(rng: &mut SplitMix64) -> u8 {
    const SPECIAL: &[u8] = b"\r\n\t :\0\x7f\x80\xff0aA";
    match rng.below(3) {
        0 => SPECIAL[rng.below(SPECIAL.len() as u64) as usize],
        1 => b' ' + rng.below(95) as u8,
        _ => rng.next_u64() as u8,
    }
}

/// Where `Date:`'s value lies in `p`, found the plain way, when its line ends in CR LF.
fn date_span(p: &[u8]) -> Option<(usize, usize)> {
    let at = p
        .windows(6)
        .position(|w| w[0] == b'\n' && w[1..].eq_ignore_ascii_case(b"date:"))?
        + 6;
    let end = at + p[at..].iter().position(|&b| b == b'\r' || b == b'\n')?;
    (p[end] == b'\r').then_some((at, end))
}

/// A variant of `p`: its `Date` value rewritten, a byte changed, cut, or more bytes after.
fn variant(p: &[u8], rng: &mut SplitMix64) -> Vec<u8> {
    let mut q = p.to_vec();
    match (rng.below(6), date_span(p)) {
        (0 | 1, Some((from, to))) => {
            for b in &mut q[from..to] {
                *b = if rng.below(2) == 0 {
                    b' ' + rng.below(95) as u8
                } else {
                    byte(rng)
                };
            }
        }
        (2, Some((from, to))) => {
            let len = rng.below(40) as usize;
            let value: Vec<u8> = (0..len).map(|_| b' ' + rng.below(95) as u8).collect();
            q.splice(from..to, value);
        }
        (3, _) if !q.is_empty() => {
            let at = rng.below(q.len() as u64) as usize;
            q[at] = byte(rng);
        }
        (4, _) => q.truncate(rng.below(q.len() as u64 + 1) as usize),
        _ => q.extend((0..rng.below(20)).map(|_| byte(rng))),
    }
    q
}

#[test]
fn the_memo_gives_the_parsers_verdict_on_changed_heads() {
    let mut rng = SplitMix64::for_event(7, 0);
    let stale = [None, Some(b"text/stale".to_vec())];
    let mut compared = 0;
    for p in heads() {
        for head_request in [false, true] {
            for _ in 0..400 {
                let mut memo = HeadMemo::default();
                let ct = &stale[rng.below(2) as usize];
                assert_eq!(
                    memoed(&mut memo, &p, head_request, ct),
                    fresh(&p, head_request, ct)
                );
                let q = variant(&p, &mut rng);
                let hr = head_request ^ (rng.below(8) == 0);
                let ct = &stale[rng.below(2) as usize];
                assert_eq!(
                    memoed(&mut memo, &q, hr, ct),
                    fresh(&q, hr, ct),
                    "after {:?}: {:?}",
                    String::from_utf8_lossy(&p),
                    String::from_utf8_lossy(&q)
                );
                compared += 1;
            }
        }
    }
    assert!(compared > 10_000);
}

/// One memo through a long random sequence of heads and their variants, as a connection's
/// thread sees them: each answer equals a fresh parse.
#[test]
fn one_memo_through_a_random_sequence_stays_exact() {
    let bases = heads();
    let mut rng = SplitMix64::for_event(11, 0);
    let mut memo = HeadMemo::default();
    let mut p = &bases[0];
    for _ in 0..40_000 {
        // Runs of one server's heads, as a thread sees them, with now and then another.
        if rng.below(20) == 0 {
            p = &bases[rng.below(bases.len() as u64) as usize];
        }
        let q = if rng.below(2) == 0 {
            p.clone()
        } else {
            variant(p, &mut rng)
        };
        let hr = rng.below(10) == 0;
        let ct = if rng.below(2) == 0 {
            None
        } else {
            Some(b"x/y".to_vec())
        };
        assert_eq!(
            memoed(&mut memo, &q, hr, &ct),
            fresh(&q, hr, &ct),
            "{:?}",
            String::from_utf8_lossy(&q)
        );
    }
    // Repeats were answered from the memo, and so were some variants.
    assert!(memo.hits > 10_000 && memo.parsed > 10_000, "{memo:?}");
}

/// A repeat whose `Date` value alone changed (any visible text of the same length) is
/// answered without parsing; one whose value holds a control byte, or whose other bytes
/// changed, is parsed.
#[test]
fn only_a_date_change_is_recalled() {
    let p = &heads()[0];
    let (from, to) = date_span(p).unwrap();
    assert_eq!(&p[from..to], [b" ", DATE].concat());
    let mut memo = HeadMemo::default();
    let mut ct = None;
    memo.parse(p, false, &mut ct).unwrap();
    assert_eq!((memo.hits, memo.parsed), (0, 1));
    let mut rng = SplitMix64::for_event(3, 0);
    for i in 0..200u64 {
        let mut q = p.clone();
        for b in &mut q[from..to] {
            *b = b' ' + rng.below(95) as u8;
        }
        memo.parse(&q, false, &mut ct).unwrap();
        assert_eq!((memo.hits, memo.parsed), (i + 1, 1));
    }
    for bad in [b'\r', b'\n', 0, 0x7f, 0x80] {
        let mut q = p.clone();
        q[from + 3] = bad;
        let hits = memo.hits;
        let _ = memo.parse(&q, false, &mut ct);
        assert_eq!(memo.hits, hits, "byte {bad:#x} in the Date value");
        // Back to the original head.
        memo.parse(p, false, &mut ct).unwrap();
    }
    let mut q = p.clone();
    let at = p.windows(3).position(|w| w == b"17\r").unwrap();
    q[at + 1] = b'6';
    let parsed = memo.parsed;
    memo.parse(&q, false, &mut ct).unwrap();
    assert_eq!(
        memo.parsed,
        parsed + 1,
        "a changed Content-Length is parsed"
    );
}
