//! Event identity: a `jti` that encodes (run tag, sequence number), and reading it back from a body.
//!
//! A delivery carries only the body, so the body must say which event it is. The `jti` is a
//! UUID (version 8, "custom") whose first 8 bytes are the run tag (a hash of the seed) and
//! whose last 8 bytes are the sequence number; 4 bits of the tag and the top 2 bits of the
//! sequence number give way to the version and variant bits. The send time rides in the
//! `sent_us` claim right after `iat`, so a subscriber in another process can regenerate the
//! exact body from (seq, sent_us) and measure end-to-end latency (docs/delivery.md).

use super::rng::SplitMix64;

/// Sequence numbers up to 2^62 − 1 survive the variant bits.
pub const MAX_SEQ: u64 = (1 << 62) - 1;

/// The bits of the tag that survive in the `jti` (byte 6's high nibble is the version).
const TAG_MASK: u64 = !(0xf0 << 8);

/// The run tag of a seed: every event of a run (and of all its shards) carries it.
pub fn run_tag(seed: u64) -> u64 {
    SplitMix64::for_event(seed ^ 0x7a67_0000_0000_0000, 0).next_u64() & TAG_MASK
}

/// The `jti` of event `seq` of the run tagged `tag`.
pub fn jti(tag: u64, seq: u64) -> uuid::Uuid {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&tag.to_be_bytes());
    b[8..].copy_from_slice(&(seq & MAX_SEQ).to_be_bytes());
    uuid::Builder::from_custom_bytes(b).into_uuid()
}

/// The (tag, seq) a `jti` encodes, if it is one of ours (version 8).
pub fn decode_jti(id: &uuid::Uuid) -> Option<(u64, u64)> {
    if id.get_version_num() != 8 {
        return None;
    }
    let b = id.as_bytes();
    let tag = u64::from_be_bytes(b[..8].try_into().ok()?) & TAG_MASK;
    let seq = u64::from_be_bytes(b[8..].try_into().ok()?) & MAX_SEQ;
    Some((tag, seq))
}

/// Parse the decimal digits at the start of `s`; returns the value and the rest.
fn digits(s: &[u8]) -> Option<(u64, &[u8])> {
    let n = s.iter().take_while(|c| c.is_ascii_digit()).count();
    if n == 0 || n > 19 {
        return None;
    }
    let v = std::str::from_utf8(&s[..n]).ok()?.parse().ok()?;
    Some((v, &s[n..]))
}

/// (tag, seq, sent_us) from a body rendered by `body::render_into`; `None` for anything else.
/// Reads only the first ~130 bytes: `jti`, `iat` and `sent_us` come right after `iss`.
pub fn parse(body: &[u8]) -> Option<(u64, u64, u64)> {
    const JTI: &[u8] = br#""jti":""#;
    let at = body.windows(JTI.len()).take(200).position(|w| w == JTI)? + JTI.len();
    let id = uuid::Uuid::try_parse_ascii(body.get(at..at + 36)?).ok()?;
    let (tag, seq) = decode_jti(&id)?;
    let rest = body.get(at + 36..)?.strip_prefix(br#"","iat":"#)?;
    let (iat_ms, rest) = digits(rest)?;
    let rest = rest.strip_prefix(br#","sent_us":"#)?;
    let (sent_us, _) = digits(rest)?;
    (iat_ms == sent_us / 1000).then_some((tag, seq, sent_us))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jti_round_trips_tag_and_seq() {
        let tag = run_tag(42);
        for seq in [0, 1, 12_345, MAX_SEQ] {
            let id = jti(tag, seq);
            assert_eq!(id.get_version_num(), 8);
            assert_eq!(decode_jti(&id), Some((tag, seq)));
        }
        assert_ne!(run_tag(42), run_tag(43));
        assert_eq!(decode_jti(&uuid::Uuid::from_u128(7)), None);
    }

    #[test]
    fn parse_reads_identity_and_refuses_the_rest() {
        let id = jti(run_tag(1), 77);
        let body = format!(
            r#"{{"iss":"x","jti":"{id}","iat":1764460800000,"sent_us":1764460800000123,"e":1}}"#
        );
        assert_eq!(
            parse(body.as_bytes()),
            Some((run_tag(1), 77, 1_764_460_800_000_123))
        );
        // iat disagreeing with sent_us, a missing claim, a random jti: not ours.
        let bad_iat = body.replace("1764460800000,", "1764460800001,");
        let no_sent = body.replace(r#","sent_us":1764460800000123"#, "");
        let v4 = body.replace(&id.to_string(), &uuid::Uuid::from_u128(5).to_string());
        for b in [bad_iat, no_sent, v4, "{}".into(), String::new()] {
            assert_eq!(parse(b.as_bytes()), None, "{b}");
        }
    }
}
