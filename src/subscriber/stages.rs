//! A delivery's `Hub-Timing` stages (the publish's `hub` and `broker`, its `queue` at the
//! hub or broker, and the `rest` of the end-to-end latency): recorded per delivery, and
//! serialized exactly for shard artifacts (docs/server-timing.md).

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::result::ServerTimings;
use crate::stats::{from_base64, to_base64, ServerTimingStats};

/// The stage hubload adds: end-to-end less the hub's declared stages (network both ways, the
/// client's and the subscriber's own time), 0 when the declared stages exceed it.
pub const REST: &str = "rest";

/// Record the stages of one delivery counted delivered, whose end-to-end latency was
/// `e2e_us`. A delivery without the header records nothing; one whose metrics could not be
/// read is counted (`malformed`) and only what could be read is recorded.
pub fn record_stages(stats: &mut ServerTimingStats, t: &ServerTimings, e2e_us: u64) {
    if t.is_empty() {
        return;
    }
    stats.record(t);
    let declared: u64 = t.metrics().map(|(_, us)| us).sum();
    if t.metrics().next().is_some() {
        stats.record_us(REST, e2e_us.saturating_sub(declared));
    }
}

/// [`ServerTimingStats`] as a shard artifact holds it: per name the histogram's interchange
/// string, and the counts.
#[derive(Serialize, Deserialize, Default)]
struct Encoded {
    #[serde(default)]
    by_name: BTreeMap<String, String>,
    #[serde(default)]
    malformed: u64,
    #[serde(default)]
    unnamed: u64,
}

/// `#[serde(with = "stages")]`: the histograms as interchange strings.
pub fn serialize<S: Serializer>(st: &ServerTimingStats, s: S) -> Result<S::Ok, S::Error> {
    let by_name = st
        .by_name
        .iter()
        .map(|(n, h)| Ok((n.clone(), to_base64(h)?)))
        .collect::<Result<_, String>>()
        .map_err(serde::ser::Error::custom)?;
    Encoded {
        by_name,
        malformed: st.malformed,
        unnamed: st.unnamed,
    }
    .serialize(s)
}

/// Read them back, in hubload's layout only; anything else is an error naming the stage.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ServerTimingStats, D::Error> {
    let e = Encoded::deserialize(d)?;
    let by_name = e
        .by_name
        .into_iter()
        .map(|(n, b64)| {
            let h = from_base64(&b64).map_err(|err| format!("stage {n}: {err}"))?;
            Ok((n, h))
        })
        .collect::<Result<_, String>>()
        .map_err(serde::de::Error::custom)?;
    Ok(ServerTimingStats {
        by_name,
        malformed: e.malformed,
        unnamed: e.unnamed,
    })
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
    fn stages_and_the_rest_of_the_end_to_end() {
        let mut s = ServerTimingStats::default();
        record_stages(&mut s, &ServerTimings::NONE, 9_000);
        assert!(s.is_empty());
        let t = timings("hub;dur=0.1, broker;dur=0.2, queue;dur=0.3, accepted;t=1764892800123456");
        record_stages(&mut s, &t, 2_000);
        let got: Vec<(&str, u64, u64)> = s
            .by_name
            .iter()
            .map(|(n, h)| (n.as_str(), h.len(), h.max()))
            .collect();
        assert_eq!(
            got,
            [
                ("broker", 1, 200),
                ("hub", 1, 100),
                ("queue", 1, 300),
                ("rest", 1, 1_400)
            ]
        );
        // Declared stages longer than the end-to-end (another host's clock): rest 0 (the
        // histograms' floor is 1 µs).
        record_stages(&mut s, &timings("queue;dur=20"), 10_000);
        assert_eq!(s.by_name["rest"].min(), 1);
        // Malformed: counted, nothing recorded, no rest.
        record_stages(&mut s, &timings("queue;dur=oops"), 10_000);
        assert_eq!((s.malformed, s.by_name["rest"].len()), (1, 2));
        // Exactly back from what a shard artifact holds.
        #[derive(Serialize, Deserialize)]
        struct W(#[serde(with = "super")] ServerTimingStats);
        let json = serde_json::to_string(&W(s.clone())).unwrap();
        let back: W = serde_json::from_str(&json).unwrap();
        assert_eq!(back.0, s);
    }
}
