//! The `Retry-After` field of a response (RFC 9110 §10.2.3), read as delta-seconds.
//!
//! Only the delta-seconds form counts; an HTTP-date, a negative or fractional number,
//! garbage, or several fields that disagree (it is a singleton field) count as no field: the
//! retry then goes at once, as without one. A number too large for `u32` is read as
//! `u32::MAX` seconds; the engine caps every wait anyway (`engine/retry_wait.rs`).

/// The field's value as read so far from a response's `Retry-After` fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetryAfter {
    state: State,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum State {
    #[default]
    Absent,
    Secs(u32),
    Invalid,
}

impl RetryAfter {
    /// No field (or none that counts).
    pub const NONE: RetryAfter = RetryAfter {
        state: State::Absent,
    };

    /// Add one `Retry-After` field's value.
    pub fn add_header(&mut self, value: &[u8]) {
        self.state = match (self.state, delta_seconds(value)) {
            (State::Invalid, _) | (_, None) => State::Invalid,
            (State::Absent, Some(s)) => State::Secs(s),
            (State::Secs(a), Some(b)) if a == b => State::Secs(a),
            (State::Secs(_), Some(_)) => State::Invalid,
        };
    }

    /// The seconds the server asked the client to wait, if it asked in a form that counts.
    pub fn secs(self) -> Option<u32> {
        match self.state {
            State::Secs(s) => Some(s),
            _ => None,
        }
    }

    /// The value of one field read alone.
    pub fn parse(value: &[u8]) -> Option<u32> {
        let mut r = RetryAfter::NONE;
        r.add_header(value);
        r.secs()
    }
}

/// `1*DIGIT` between optional spaces or tabs, saturating at `u32::MAX`.
fn delta_seconds(value: &[u8]) -> Option<u32> {
    let digits = value.trim_ascii();
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // Every digit is looked at once; past u32 the value stays at the top.
    Some(digits.iter().fold(0u32, |n, d| {
        n.saturating_mul(10).saturating_add(u32::from(d - b'0'))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_seconds_and_hostile_values() {
        let cases: &[(&[u8], Option<u32>)] = &[
            (b"1", Some(1)),
            (b"0", Some(0)),
            (b" 120\t", Some(120)),
            (b"007", Some(7)),
            (b"4294967295", Some(u32::MAX)),
            (b"4294967296", Some(u32::MAX)),
            (b"99999999999999999999999999999999999999", Some(u32::MAX)),
            (b"-1", None),
            (b"+1", None),
            (b"1.5", None),
            (b"1 2", None),
            (b"", None),
            (b"   ", None),
            (b"soon", None),
            (b"0x10", None),
            (b"\xff\xfe", None),
            // An HTTP-date is not taken: counted as no field.
            (b"Fri, 31 Dec 1999 23:59:59 GMT", None),
        ];
        for (value, want) in cases {
            assert_eq!(
                RetryAfter::parse(value),
                *want,
                "{:?}",
                String::from_utf8_lossy(value)
            );
        }
        // A long run of digits costs one pass and stays at the top.
        assert_eq!(RetryAfter::parse(&[b'9'; 100_000]), Some(u32::MAX));
    }

    #[test]
    fn several_fields_count_only_when_they_agree() {
        let read = |values: &[&[u8]]| {
            let mut r = RetryAfter::NONE;
            for v in values {
                r.add_header(v);
            }
            r.secs()
        };
        assert_eq!(read(&[]), None);
        assert_eq!(read(&[b"3", b"3"]), Some(3));
        assert_eq!(read(&[b"3", b"4"]), None);
        assert_eq!(read(&[b"3", b"x"]), None);
        assert_eq!(read(&[b"x", b"3"]), None);
        // Many fields: bounded by the head parser's header count; all equal still counts.
        let same: Vec<&[u8]> = vec![b"2"; 1000];
        assert_eq!(read(&same), Some(2));
        let mut mixed: Vec<&[u8]> = vec![b"2"; 999];
        mixed.push(b"5");
        assert_eq!(read(&mixed), None);
    }
}
