//! Prometheus remote write 1.0: the protobuf messages (declared with prost's derive, no
//! protoc), one request's body (snappy block format), and the headers it goes with.

use super::own_series::OwnSeries;

/// `prometheus.WriteRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

/// `prometheus.TimeSeries`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    /// Sorted by name, `__name__` first.
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
}

/// `prometheus.Label`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `prometheus.Sample`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    #[prost(double, tag = "1")]
    pub value: f64,
    /// Milliseconds since the Unix epoch.
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// The headers of a remote-write request.
pub const HEADERS: [(&str, &str); 3] = [
    ("content-encoding", "snappy"),
    ("content-type", "application/x-protobuf"),
    ("x-prometheus-remote-write-version", "0.1.0"),
];

/// The body that writes `series` at `timestamp_ms`: a `WriteRequest`, snappy-compressed.
pub fn body(series: &[OwnSeries], timestamp_ms: i64) -> Vec<u8> {
    let req = WriteRequest {
        timeseries: series
            .iter()
            .map(|s| TimeSeries {
                // `__name__` sorts before every lower-case label name.
                labels: std::iter::once(Label {
                    name: "__name__".into(),
                    value: s.name.into(),
                })
                .chain(s.labels.iter().map(|(k, v)| Label {
                    name: k.clone(),
                    value: v.clone(),
                }))
                .collect(),
                samples: vec![Sample {
                    value: s.value,
                    timestamp: timestamp_ms,
                }],
            })
            .collect(),
    };
    let raw = prost::Message::encode_to_vec(&req);
    // Block format, not framed: what the protocol names "snappy".
    snap::raw::Encoder::new()
        .compress_vec(&raw)
        .expect("snappy compresses any input of this size")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_decodes_back_to_the_series() {
        let series = vec![OwnSeries {
            name: "hubload_level",
            labels: vec![("run_id".into(), "r".into())],
            value: 50.0,
        }];
        let packed = body(&series, 1_700_000_000_123);
        let raw = snap::raw::Decoder::new().decompress_vec(&packed).unwrap();
        let back: WriteRequest = prost::Message::decode(raw.as_slice()).unwrap();
        let ts = &back.timeseries[0];
        assert_eq!(
            ts.labels
                .iter()
                .map(|l| (l.name.as_str(), l.value.as_str()))
                .collect::<Vec<_>>(),
            [("__name__", "hubload_level"), ("run_id", "r")]
        );
        assert_eq!(
            ts.samples,
            vec![Sample {
                value: 50.0,
                timestamp: 1_700_000_000_123
            }]
        );
    }
}
