//! The `Server-Timing` metrics one response declared (W3C Server Timing), read from header values.
//!
//! Only metrics with a `dur` (ms) are kept; one that cannot be read is counted as malformed and
//! skipped, so a bad header never fails an attempt. The metrics ride inside the `Copy`
//! [`Attempt`](super::Attempt), so they are kept inline: at most [`MOST`] per response, names
//! interned process-wide (at most [`MOST_NAMES`]; later ones counted in `unnamed`).

use std::sync::Mutex;

/// Most metrics kept from one response; more are skipped and counted in `unnamed`.
pub const MOST: usize = 4;

/// Most distinct metric names in one process.
pub const MOST_NAMES: usize = 32;

/// The longest duration kept, µs (about 71 minutes); longer is malformed.
const MOST_US: f64 = u32::MAX as f64;

/// The metrics one response declared, inline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerTimings {
    len: u8,
    /// Metrics that could not be read.
    pub malformed: u8,
    /// Metrics read but not kept: past [`MOST`] in one response, or past [`MOST_NAMES`] names.
    pub unnamed: u8,
    ids: [u8; MOST],
    us: [u32; MOST],
}

impl ServerTimings {
    /// No header: what most attempts carry.
    pub const NONE: ServerTimings = ServerTimings {
        len: 0,
        malformed: 0,
        unnamed: 0,
        ids: [0; MOST],
        us: [0; MOST],
    };

    /// Whether there is anything to record (metrics, or ones that could not be read).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0 && self.malformed == 0 && self.unnamed == 0
    }

    /// The kept metrics: name and duration, µs.
    pub fn metrics(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        (0..usize::from(self.len)).map(|k| (name(self.ids[k]), u64::from(self.us[k])))
    }

    /// Read one header value into this set (after any metrics already read).
    pub fn add_header(&mut self, value: &[u8]) {
        for metric in split_outside_quotes(value, b',') {
            if metric.trim_ascii().is_empty() {
                // `a, , b`: an empty list member, which the grammar's `#` rule allows.
                continue;
            }
            match read_metric(metric) {
                Err(()) => self.malformed = self.malformed.saturating_add(1),
                Ok(None) => {}
                Ok(Some((n, us))) => match intern(n) {
                    Some(id) if usize::from(self.len) < MOST => {
                        self.ids[usize::from(self.len)] = id;
                        self.us[usize::from(self.len)] = us;
                        self.len += 1;
                    }
                    _ => self.unnamed = self.unnamed.saturating_add(1),
                },
            }
        }
    }
}

/// One metric: `Ok(None)` for a well-formed metric without `dur`.
fn read_metric(metric: &[u8]) -> Result<Option<(&str, u32)>, ()> {
    let mut parts = split_outside_quotes(metric, b';');
    let name = parts.next().unwrap_or_default().trim_ascii();
    if name.is_empty() || !name.iter().all(|&b| is_token(b)) {
        return Err(());
    }
    let name = std::str::from_utf8(name).map_err(|_| ())?;
    let mut dur = None;
    for param in parts {
        let param = param.trim_ascii();
        let (key, value) =
            param.split_at(param.iter().position(|&b| b == b'=').unwrap_or(param.len()));
        if !key.trim_ascii().eq_ignore_ascii_case(b"dur") || dur.is_some() {
            // Unknown parameters are ignored; the first `dur` wins, as the spec reads it.
            continue;
        }
        let value = value.strip_prefix(b"=").ok_or(())?.trim_ascii();
        let value = match value {
            [b'"', inner @ .., b'"'] => inner,
            v => v,
        };
        let ms: f64 = std::str::from_utf8(value)
            .map_err(|_| ())?
            .parse()
            .map_err(|_| ())?;
        let us = (ms * 1000.0).round();
        if !(0.0..=MOST_US).contains(&us) {
            return Err(());
        }
        dur = Some(us as u32);
    }
    Ok(dur.map(|us| (name, us)))
}

/// The pieces of `s` between `sep` bytes that are not inside a quoted string.
fn split_outside_quotes(s: &[u8], sep: u8) -> impl Iterator<Item = &[u8]> {
    let mut rest = Some(s);
    std::iter::from_fn(move || {
        let s = rest?;
        let (mut quoted, mut escaped) = (false, false);
        for (i, &b) in s.iter().enumerate() {
            match b {
                _ if escaped => escaped = false,
                b'\\' if quoted => escaped = true,
                b'"' => quoted = !quoted,
                _ if b == sep && !quoted => {
                    rest = Some(&s[i + 1..]);
                    return Some(&s[..i]);
                }
                _ => {}
            }
        }
        rest = None;
        Some(s)
    })
}

/// An RFC 9110 token character.
fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Interned metric names: a name's id is its index. Names are leaked, at most [`MOST_NAMES`].
static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

/// The id of `name`, interning it; `None` once [`MOST_NAMES`] names are known.
fn intern(name: &str) -> Option<u8> {
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(id) = names.iter().position(|n| *n == name) {
        return u8::try_from(id).ok();
    }
    if names.len() >= MOST_NAMES {
        return None;
    }
    names.push(Box::leak(name.to_owned().into_boxed_str()));
    u8::try_from(names.len() - 1).ok()
}

/// The name interned as `id`.
fn name(id: u8) -> &'static str {
    let names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    names.get(usize::from(id)).copied().unwrap_or("?")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(values: &[&str]) -> (Vec<(&'static str, u64)>, u8, u8) {
        let mut t = ServerTimings::NONE;
        for v in values {
            t.add_header(v.as_bytes());
        }
        (t.metrics().collect(), t.malformed, t.unnamed)
    }

    #[test]
    fn metrics_table() {
        type Case<'a> = (&'a [&'a str], &'a [(&'a str, u64)], u8);
        let cases: &[Case] = &[
            (&["hub;dur=0.4"], &[("hub", 400)], 0),
            (
                &["broker;dur=1.23, hub;dur=0.4;desc=\"accept\""],
                &[("broker", 1230), ("hub", 400)],
                0,
            ),
            // Several headers concatenate.
            (
                &["broker;dur=2", "hub;dur=3"],
                &[("broker", 2000), ("hub", 3000)],
                0,
            ),
            // Quoted dur, spaces, case of the parameter, unknown parameters.
            (&[" db ; DUR = \"0.5\" ; x=y"], &[("db", 500)], 0),
            // A comma and a semicolon inside a quoted desc do not split.
            (&["cache;desc=\"a, b; c\";dur=7"], &[("cache", 7000)], 0),
            // No dur: well formed, nothing kept.
            (&["miss", "cdn;desc=x"], &[], 0),
            // The first dur wins.
            (&["hub;dur=1;dur=2"], &[("hub", 1000)], 0),
            // Malformed: no name, a bad name, a bad or negative dur; the good ones are kept.
            (
                &[";dur=1, hub;dur=x, h@b;dur=1, hub;dur=-1, ok;dur=0.001"],
                &[("ok", 1)],
                4,
            ),
            (&["hub;dur="], &[], 1),
            (&["hub;dur=1e12"], &[], 1),
            (&["hub;dur=NaN"], &[], 1),
            (&[", ,"], &[], 0),
        ];
        for (values, want, malformed) in cases {
            let (got, m, u) = read(values);
            assert_eq!(got, want.to_vec(), "{values:?}");
            assert_eq!(m, *malformed, "{values:?}");
            assert_eq!(u, 0, "{values:?}");
        }
    }

    #[test]
    fn more_than_four_metrics_are_counted_not_kept() {
        let (got, m, u) = read(&["a;dur=1, b;dur=1, c;dur=1, d;dur=1, e;dur=1, f;dur=1"]);
        assert_eq!(got.len(), MOST);
        assert_eq!((m, u), (0, 2));
    }

    #[test]
    fn none_is_empty() {
        assert!(ServerTimings::NONE.is_empty());
        let mut t = ServerTimings::NONE;
        t.add_header(b";dur=1");
        assert!(!t.is_empty());
    }
}
