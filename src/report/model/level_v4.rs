//! Reading a level row written before `schema_version` 5, which held copies of some of its
//! statistics (`counts`, `timeline`, `histograms`, …) instead of the statistics themselves.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::derived::Derived;
use crate::stats::{from_base64, Counts, LevelStats, Reasons, SecondHistograms, TimelineBucket};

/// A level's HdrHistograms as rows before `schema_version` 5 held them: the HdrHistogram
/// interchange encoding (V2, DEFLATE, base64), µs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReportHistograms {
    /// Latency of every attempt, actual start → end.
    pub latency: String,
    /// Latency from the intended start (open model only).
    #[serde(default)]
    pub corrected: Option<String>,
    /// The same histograms per second of the level.
    #[serde(default)]
    pub per_second: SecondHistograms,
}

/// The statistics a row before `schema_version` 5 held beside its derived figures: read,
/// never written (every field is skipped when serializing, so flattened it writes nothing).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LevelV4 {
    #[serde(default, skip_serializing)]
    counts: Option<Counts>,
    #[serde(default, skip_serializing)]
    reasons: Option<Reasons>,
    #[serde(default, skip_serializing)]
    dropped: Option<u64>,
    #[serde(default, skip_serializing)]
    first_start_us: Option<u64>,
    #[serde(default, skip_serializing)]
    bytes_sent: Option<u64>,
    #[serde(default, skip_serializing)]
    bytes_received: Option<u64>,
    #[serde(default, skip_serializing)]
    timeline: Option<Vec<TimelineBucket>>,
    #[serde(default, skip_serializing)]
    histograms: Option<ReportHistograms>,
    #[serde(default, skip_serializing)]
    server_timing_malformed: Option<u64>,
}

impl LevelV4 {
    /// Whether the row was written before `schema_version` 5: every such row has `counts`,
    /// none after.
    pub fn is_present(&self) -> bool {
        self.counts.is_some()
    }

    /// Rebuild `s` from what the row held: its counters, its histograms and timeline, and
    /// what its derived figures `d` give back exactly (events, status codes, the exact sum,
    /// min and max, the last end). It held no accepted or event histograms, late sends or
    /// `Server-Timing` histograms; its derived figures stay as written, so every format
    /// renders it as before.
    pub fn into_stats(self, d: &Derived, s: &mut LevelStats) -> Result<(), String> {
        let v4 = self;
        s.counts = v4.counts.unwrap_or_default();
        s.reasons = v4.reasons.unwrap_or_default();
        s.dropped = v4.dropped.unwrap_or(0);
        s.bytes_sent = v4.bytes_sent.unwrap_or(0);
        s.bytes_received = v4.bytes_received.unwrap_or(0);
        s.timeline = v4.timeline.unwrap_or_default();
        s.server_timing.malformed = v4.server_timing_malformed.unwrap_or(0);
        s.status_codes = d
            .status_codes
            .iter()
            .filter_map(|(k, v)| Some((k.parse().ok()?, *v)))
            .collect();
        s.events = d.events.total;
        s.events_failed = d.events.failed;
        s.retries = d.events.retries;
        if d.samples > 0 {
            s.sum_us = (d.latency_us.mean * d.samples as f64).round() as u64;
            s.min_us = Some(d.latency_us.min);
            s.max_us = Some(d.latency_us.max);
        }
        s.first_start_us = v4.first_start_us;
        s.last_end_us = v4
            .first_start_us
            .map(|f| f + (d.span_s * 1e6).round() as u64);
        if let Some(h) = v4.histograms {
            s.latency = from_base64(&h.latency)?;
            if let Some(c) = &h.corrected {
                s.corrected = from_base64(c)?;
            }
            h.per_second.validate()?;
            s.seconds = h.per_second;
        }
        Ok(())
    }
}
