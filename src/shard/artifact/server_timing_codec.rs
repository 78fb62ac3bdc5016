//! A level's `Server-Timing` histograms in a shard artifact: encoded exactly, so shards merge.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::stats::{from_base64, to_base64, ServerTimingStats};

/// [`ServerTimingStats`] as an artifact holds it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerTimingArtifact {
    /// Metric name → its histogram (µs), in the HdrHistogram interchange encoding.
    #[serde(default)]
    pub by_name: BTreeMap<String, String>,
    /// Metrics that could not be read.
    #[serde(default)]
    pub malformed: u64,
    /// Metrics read but not kept.
    #[serde(default)]
    pub unnamed: u64,
}

impl ServerTimingArtifact {
    /// Whether it holds nothing (then it is left out of the artifact).
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty() && self.malformed == 0 && self.unnamed == 0
    }

    /// Encode `s` exactly; `Err` is the reason a histogram did not encode.
    pub fn encode(s: &ServerTimingStats) -> Result<Self, String> {
        let by_name = s
            .by_name
            .iter()
            .map(|(n, h)| Ok((n.clone(), to_base64(h)?)))
            .collect::<Result<_, String>>()?;
        Ok(Self {
            by_name,
            malformed: s.malformed,
            unnamed: s.unnamed,
        })
    }

    /// Decode back, checking every histogram's layout; `Err` names the metric and the reason.
    pub fn decode(&self) -> Result<ServerTimingStats, String> {
        let by_name = self
            .by_name
            .iter()
            .map(|(n, b64)| {
                Ok((
                    n.clone(),
                    from_base64(b64).map_err(|e| format!("{n}: {e}"))?,
                ))
            })
            .collect::<Result<_, String>>()?;
        Ok(ServerTimingStats {
            by_name,
            malformed: self.malformed,
            unnamed: self.unnamed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::ServerTimings;

    #[test]
    fn round_trip_is_exact() {
        let mut s = ServerTimingStats::default();
        for v in ["hub;dur=0.25, broker;dur=1.5", "hub;dur=12", "hub;dur=?"] {
            let mut t = ServerTimings::NONE;
            t.add_header(v.as_bytes());
            s.record(&t);
        }
        let a = ServerTimingArtifact::encode(&s).unwrap();
        let json = serde_json::to_string(&a).unwrap();
        let back: ServerTimingArtifact = serde_json::from_str(&json).unwrap();
        assert_eq!(back.decode().unwrap(), s);
        assert_eq!(s.malformed, 1);
        assert!(ServerTimingArtifact::default().is_empty());
    }
}
