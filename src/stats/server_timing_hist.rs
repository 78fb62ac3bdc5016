//! The `Server-Timing` durations of one level: a histogram per metric name, merged with `+=`.

use std::collections::BTreeMap;
use std::ops::AddAssign;

use super::{new_histogram, record, Histogram};
use crate::result::ServerTimings;

/// What the responses of a level declared in `Server-Timing`. Empty (and cheap) when no
/// response carried the header.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ServerTimingStats {
    /// Durations per metric name, µs.
    #[serde(default, with = "super::hist_serde::by_name")]
    pub by_name: BTreeMap<String, Histogram>,
    /// Metrics that could not be read (counted and skipped).
    #[serde(default)]
    pub malformed: u64,
    /// Metrics read but not kept (past 4 in one response, or past 32 names in the run).
    #[serde(default)]
    pub unnamed: u64,
}

impl ServerTimingStats {
    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty() && self.malformed == 0 && self.unnamed == 0
    }

    /// Record one response's metrics.
    pub fn record(&mut self, t: &ServerTimings) {
        self.malformed += u64::from(t.malformed);
        self.unnamed += u64::from(t.unnamed);
        for (name, us) in t.metrics() {
            self.record_us(name, us);
        }
    }

    /// Record one duration (µs) of metric `name`.
    pub fn record_us(&mut self, name: &str, us: u64) {
        // A lookup by `&str` first: the name's `String` is made once per stats.
        match self.by_name.get_mut(name) {
            Some(h) => record(h, us),
            None => {
                let mut h = new_histogram();
                record(&mut h, us);
                self.by_name.insert(name.to_owned(), h);
            }
        }
    }
}

impl AddAssign<&ServerTimingStats> for ServerTimingStats {
    fn add_assign(&mut self, rhs: &ServerTimingStats) {
        self.malformed += rhs.malformed;
        self.unnamed += rhs.unnamed;
        for (name, h) in &rhs.by_name {
            match self.by_name.get_mut(name) {
                Some(mine) => mine.add(h).expect("same histogram layout"),
                None => {
                    self.by_name.insert(name.clone(), h.clone());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timings(v: &str) -> ServerTimings {
        let mut t = ServerTimings::NONE;
        t.add_header(v.as_bytes());
        t
    }

    #[test]
    fn merge_equals_one_recorder() {
        let values = [
            "hub;dur=0.2",
            "broker;dur=3, hub;dur=0.1",
            "hub;dur=x",
            "stage-one;dur=1",
            "hub;dur=9",
        ];
        let mut one = ServerTimingStats::default();
        let (mut a, mut b) = (ServerTimingStats::default(), ServerTimingStats::default());
        for (i, v) in values.iter().enumerate() {
            one.record(&timings(v));
            if i % 2 == 0 { &mut a } else { &mut b }.record(&timings(v));
        }
        a += &b;
        assert_eq!(a, one);
        assert_eq!(one.by_name["hub"].len(), 3);
        // Three significant digits: 9,000 µs lies in a bucket 8 µs wide.
        assert!(one.by_name["hub"].equivalent(one.by_name["hub"].max(), 9000));
        assert_eq!(one.by_name["broker"].len(), 1);
        assert_eq!(one.malformed, 1);
    }

    #[test]
    fn serialized_round_trip_is_exact() {
        let mut s = ServerTimingStats::default();
        for v in ["hub;dur=0.25, broker;dur=1.5", "hub;dur=12", "hub;dur=?"] {
            s.record(&timings(v));
        }
        let json = serde_json::to_string(&s).unwrap();
        let back: ServerTimingStats = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        assert_eq!(s.malformed, 1);
        let bad = json.replace("HISTF", "HISTX");
        let e = serde_json::from_str::<ServerTimingStats>(&bad).unwrap_err();
        assert!(e.to_string().starts_with("broker: "), "{e}");
    }
}
