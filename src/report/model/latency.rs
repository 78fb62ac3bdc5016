//! A latency summary in µs (`LatencyUs`) and how it is read off an HdrHistogram.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::stats::Histogram;

/// Latency summary in µs, from the HdrHistogram (percentiles) and exact counters (min, max, mean).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LatencyUs {
    pub mean: f64,
    pub min: u64,
    pub p50: u64,
    pub p90: u64,
    pub p95: u64,
    pub p99: u64,
    pub p999: u64,
    /// 99.99th percentile (absent from summaries written before it existed: 0).
    #[serde(default)]
    pub p9999: u64,
    pub max: u64,
}

/// Percentiles from a histogram; min, max and mean from the exact counters when given.
pub fn latency(h: &Histogram, exact: Option<(u64, u64, u64)>) -> LatencyUs {
    if h.is_empty() {
        return LatencyUs::default();
    }
    let (min, max, mean) = match exact {
        Some((min, max, sum)) => (min, max, sum as f64 / h.len() as f64),
        None => (h.min(), h.max(), h.mean()),
    };
    // Nearest-rank, like JMeter; hdrhistogram reports the bucket's highest equivalent value,
    // clamped here to the exact max so a percentile never exceeds it.
    let q = |p: f64| h.value_at_quantile(p).min(max);
    LatencyUs {
        mean,
        min,
        p50: q(0.50),
        p90: q(0.90),
        p95: q(0.95),
        p99: q(0.99),
        p999: q(0.999),
        p9999: q(0.9999),
        max,
    }
}
