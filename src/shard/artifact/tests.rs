//! Tests of the shard artifact: exact round trips of every section, and errors that name the bad field.

use super::*;
use crate::shard::testutil::{assert_level_eq, empty_artifact, random_level};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;

fn spec() -> ShardSpec {
    ShardSpec {
        index: 1,
        count: 3,
        run_id: "run-7".into(),
        start_at: None,
    }
}

#[test]
fn level_round_trip_is_exact() {
    let stats = random_level(42, 5_000);
    assert_eq!(stats.events, 5_000);
    assert!(stats.latency.len() == stats.attempts() && stats.retries > 0);
    let a = encode_level("50", Load::Concurrency(17), &stats).unwrap();
    for h in [
        &a.histograms.latency,
        &a.histograms.corrected,
        &a.histograms.accepted_latency,
        &a.histograms.event_latency,
    ] {
        assert!(h.starts_with("HISTF"), "{}", &h[..10]);
    }
    let back = decode_level(&a).unwrap();
    assert_level_eq(&back, &stats);
    assert!(back.latency.is_auto_resize());
}

#[test]
fn per_topic_statistics_round_trip_and_older_artifacts_without_them_still_read() {
    let stats = random_level(9, 2_000);
    assert!(stats.topics.iter().filter(|t| !t.is_empty()).count() > 1);
    let a = encode_level("50", Load::Concurrency(4), &stats).unwrap();
    let mut json = serde_json::to_value(&a).unwrap();
    let back: LevelArtifact = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(decode_level(&back).unwrap().topics, stats.topics);
    // An artifact written before per-topic statistics: no `topics` key.
    json.as_object_mut().unwrap().remove("topics");
    let old: LevelArtifact = serde_json::from_value(json).unwrap();
    let decoded = decode_level(&old).unwrap();
    assert!(decoded.topics.is_empty());
    assert_eq!(decoded.topic_attempts, stats.topic_attempts);
    // A bucket beyond the layout is refused with the level named.
    let mut bad = a.clone();
    bad.topics[0].buckets.push((TOPIC_BUCKETS, 1));
    let e = decode_level(&bad).unwrap_err().to_string();
    assert_eq!(
        e,
        format!("level \"50\": topics: bucket {TOPIC_BUCKETS} is beyond the {TOPIC_BUCKETS}-bucket layout")
    );
}

#[test]
fn empty_level_round_trips() {
    let stats = LevelStats::default();
    let back = decode_level(&encode_level("1", Load::Rate(2.5), &stats).unwrap()).unwrap();
    assert_level_eq(&back, &stats);
}

#[test]
fn document_round_trips_through_json() {
    let stats = random_level(7, 300);
    let mut phase = PhaseResult {
        topics: 40,
        already_registered: 2,
        duration_s: 0.25,
        first_error: Some("503 from hub".into()),
        ..Default::default()
    };
    phase.counts.0[Class::Accepted.index()] = 37;
    phase.counts.0[Class::Http503.index()] = 1;
    let doc = ShardArtifact {
        partial: false,
        config: serde_json::json!({"tenants": 100}),
        topics: vec!["a".into(), "b".into()],
        registration: Some(PhaseArtifact::from(&phase)),
        levels: vec![encode_level("20", Load::Concurrency(7), &stats).unwrap()],
        ..empty_artifact(&spec(), "http://hub:9000/hub")
    };
    let text = doc.to_json();
    assert!(text.contains("\"format\": \"hubload-shard\""));
    assert!(text.contains("\"http_503\": 1"));
    let back = ShardArtifact::from_json(&text).unwrap();
    assert_eq!(back, doc);
    let p = back.registration.unwrap().to_phase_result().unwrap();
    assert_eq!(p.counts, phase.counts);
    assert_eq!(p.ok(), 39);
    assert_level_eq(&decode_level(&back.levels[0]).unwrap(), &stats);
    assert_eq!(doc.file_name(), "shard-1-of-3.json");
}

#[test]
fn envelope_errors_name_the_field() {
    let doc = empty_artifact(&spec(), "u");
    let text = doc.to_json();
    let v2 = text.replace("\"format_version\": 1", "\"format_version\": 2");
    let e = ShardArtifact::from_json(&v2).unwrap_err().to_string();
    assert!(e.contains("format_version 2"), "{e}");
    let other = text.replace("hubload-shard", "k6-summary");
    let e = ShardArtifact::from_json(&other).unwrap_err().to_string();
    assert!(e.contains("meta.format"), "{e}");
    let bad_index = text.replace("\"shard_index\": 1", "\"shard_index\": 3");
    let e = ShardArtifact::from_json(&bad_index)
        .unwrap_err()
        .to_string();
    assert!(e.contains("shard_index 3"), "{e}");
    let e = ShardArtifact::from_json("{\"meta\": 1}")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("not a hubload shard artifact"), "{e}");
}

#[test]
fn level_errors_name_the_histogram_or_class() {
    let stats = random_level(3, 50);
    let good = encode_level("5", Load::Concurrency(5), &stats).unwrap();

    let mut a = good.clone();
    a.histograms.corrected = "!!!".into();
    let e = decode_level(&a).unwrap_err().to_string();
    assert!(e.contains("corrected") && e.contains("base64"), "{e}");

    let mut a = good.clone();
    a.histograms.latency = B64.encode(b"not a histogram");
    let e = decode_level(&a).unwrap_err().to_string();
    assert!(e.contains("latency") && e.contains("V2"), "{e}");

    let mut other = Histogram::new_with_bounds(1, 2, 2).unwrap();
    other.auto(true);
    other.record(100).unwrap();
    let mut a = good.clone();
    a.histograms.event_latency = encode_histogram("event_latency", &other).unwrap();
    let e = decode_level(&a).unwrap_err().to_string();
    assert!(e.contains("event_latency") && e.contains("2 digits"), "{e}");

    let mut a = good;
    a.counts.insert("teapot".into(), 1);
    let e = decode_level(&a).unwrap_err().to_string();
    assert!(e.contains("\"teapot\"") && e.contains("level \"5\""), "{e}");
}
