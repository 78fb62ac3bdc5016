//! A level's per-second histograms as plain data: the encoded list the reports, the shard
//! artifacts and the merge of shards use (`+=` adds second by second).

use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

use super::{from_base64, to_base64};

/// A level's per-second histograms, encoded: plain, mergeable data (`+=` adds second by second).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SecondHistograms {
    /// Start of second 0 (the level's measured start), µs since the Unix epoch; for merged
    /// shards the earliest shard's.
    pub origin_us: Option<u64>,
    /// Per second: the raw latency histogram, V2+DEFLATE base64 (`""` for a second without
    /// attempts).
    pub latency: Vec<String>,
    /// Per second: the latency from the intended start (open model; empty in the closed model).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub corrected: Vec<String>,
}

/// Add the encoded histogram `b` into the encoded `a` (either may be `""`).
pub(super) fn add_encoded(a: &mut String, b: &str) {
    if b.is_empty() {
        return;
    }
    if a.is_empty() {
        *a = b.to_string();
        return;
    }
    // Both were encoded by hubload or checked by `validate`: they decode, in one layout.
    let mut h = from_base64(a).expect("a checked per-second histogram");
    h.add(from_base64(b).expect("a checked per-second histogram"))
        .expect("same histogram layout");
    *a = to_base64(&h).expect("hubload histograms serialize");
}

fn add_list(a: &mut Vec<String>, b: &[String]) {
    if a.len() < b.len() {
        a.resize(b.len(), String::new());
    }
    for (x, y) in a.iter_mut().zip(b) {
        add_encoded(x, y);
    }
}

impl SecondHistograms {
    /// True when no second was recorded.
    pub fn is_empty(&self) -> bool {
        self.latency.is_empty()
    }

    /// Add one second's encoded histograms (`""`: an empty one).
    pub(super) fn put_encoded(&mut self, sec: usize, latency: String, corrected: Option<String>) {
        let one = |b64: String| {
            let mut v = vec![String::new(); sec + 1];
            v[sec] = b64;
            v
        };
        add_list(&mut self.latency, &one(latency));
        if let Some(c) = corrected {
            add_list(&mut self.corrected, &one(c));
        }
    }

    /// Check that every entry decodes to hubload's layout; the error names the second.
    pub fn validate(&self) -> Result<(), String> {
        for (name, list) in [("latency", &self.latency), ("corrected", &self.corrected)] {
            for (s, b64) in list.iter().enumerate() {
                if !b64.is_empty() {
                    from_base64(b64).map_err(|e| format!("{name} second {s}: {e}"))?;
                }
            }
        }
        Ok(())
    }
}

impl AddAssign<&SecondHistograms> for SecondHistograms {
    fn add_assign(&mut self, rhs: &SecondHistograms) {
        self.origin_us = match (self.origin_us, rhs.origin_us) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        add_list(&mut self.latency, &rhs.latency);
        add_list(&mut self.corrected, &rhs.corrected);
    }
}
