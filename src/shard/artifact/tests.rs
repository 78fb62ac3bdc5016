//! Tests of the shard artifact: exact round trips of every section, and errors that name the bad field.

use super::*;
use crate::result::{Class, Reason};
use crate::shard::fixtures::{assert_level_eq, empty_artifact, random_level};
use crate::stats::{to_base64, Histogram, TOPIC_BUCKETS};
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

/// A one-level artifact of `stats`, written and read back.
fn through_json(stats: &LevelStats) -> Result<ShardArtifact, ArtifactError> {
    ShardArtifact::from_json(&with_level(stats).to_json())
}

fn with_level(stats: &LevelStats) -> ShardArtifact {
    ShardArtifact {
        levels: vec![ShardLevel::new("50", Load::Concurrency(17), stats.clone())],
        ..empty_artifact(&spec(), "http://hub:9000/hub")
    }
}

#[test]
fn level_round_trip_is_exact() {
    let stats = random_level(42, 5_000);
    assert_eq!(stats.events, 5_000);
    assert!(stats.latency.len() == stats.attempts() && stats.retries > 0);
    let json = serde_json::to_value(with_level(&stats)).unwrap();
    let written = &json["levels"][0]["stats"];
    for h in ["latency", "corrected", "accepted_latency", "event_latency"] {
        let h = written[h].as_str().unwrap();
        assert!(h.starts_with("HISTF"), "{}", &h[..10]);
    }
    let back = through_json(&stats).unwrap();
    assert_level_eq(&back.levels[0].stats, &stats);
    assert!(back.levels[0].stats.latency.is_auto_resize());
}

#[test]
fn per_topic_statistics_round_trip_and_older_artifacts_without_them_still_read() {
    let stats = random_level(9, 2_000);
    assert!(stats.topics.iter().filter(|t| !t.is_empty()).count() > 1);
    let mut json = serde_json::to_value(with_level(&stats)).unwrap();
    let back = through_json(&stats).unwrap();
    assert_eq!(back.levels[0].stats.topics, stats.topics);
    // Sparse: `bucket:count` pairs and the non-zero classes only.
    let t0 = &json["levels"][0]["stats"]["topics"][0];
    let pairs = t0["buckets"].as_str().unwrap().split(' ');
    assert!(pairs.clone().count() > 0, "{t0}");
    assert!(pairs.clone().all(|p| p.split(':').count() == 2), "{t0}");
    assert!(t0["counts"].as_object().unwrap().values().all(|v| v != 0));
    // An artifact written before per-topic statistics: no `topics` key.
    let topics = json["levels"][0]["stats"]
        .as_object_mut()
        .unwrap()
        .remove("topics")
        .unwrap();
    let old = ShardArtifact::from_json(&json.to_string()).unwrap();
    assert!(old.levels[0].stats.topics.is_empty());
    assert_eq!(old.levels[0].stats.topic_attempts, stats.topic_attempts);
    // A bucket beyond the layout is refused with the field named.
    let mut topics = topics;
    let beyond = format!(
        "{} {TOPIC_BUCKETS}:1",
        topics[0]["buckets"].as_str().unwrap()
    );
    topics[0]["buckets"] = beyond.into();
    json["levels"][0]["stats"]["topics"] = topics;
    let e = ShardArtifact::from_json(&json.to_string())
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        format!("levels[0].stats.topics[0]: bucket {TOPIC_BUCKETS} is beyond the {TOPIC_BUCKETS}-bucket layout")
    );
}

#[test]
fn empty_level_round_trips() {
    let stats = LevelStats::default();
    let back = through_json(&stats).unwrap();
    assert_level_eq(&back.levels[0].stats, &stats);
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
    phase.reasons.add(Reason::ALL[0], 1);
    let doc = ShardArtifact {
        partial: false,
        config: serde_json::json!({"tenants": 100}),
        topics: vec!["a".into(), "b".into()],
        registration: Some(phase.clone()),
        levels: vec![ShardLevel::new("20", Load::Concurrency(7), stats.clone())],
        ..empty_artifact(&spec(), "http://hub:9000/hub")
    };
    let text = doc.to_json();
    assert!(text.contains("\"format\": \"hubload-shard\""));
    assert!(text.contains("\"http_503\": 1"));
    let back = ShardArtifact::from_json(&text).unwrap();
    assert_eq!(back.to_json(), text);
    let p = back.registration.unwrap();
    assert_eq!((p.counts, p.reasons), (phase.counts, phase.reasons));
    assert_eq!(p.ok(), 39);
    assert_level_eq(&back.levels[0].stats, &stats);
    assert_eq!(doc.file_name(), "shard-1-of-3.json");
}

#[test]
fn envelope_errors_name_the_field() {
    let doc = empty_artifact(&spec(), "u");
    let text = doc.to_json();
    let v3 = text.replace("\"format_version\": 2", "\"format_version\": 3");
    let e = ShardArtifact::from_json(&v3).unwrap_err().to_string();
    assert!(e.contains("format_version 3"), "{e}");
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
    let good = serde_json::to_value(with_level(&random_level(3, 50))).unwrap();
    let error_with = |field: &str, value: serde_json::Value| {
        let mut a = good.clone();
        a["levels"][0]["stats"][field] = value;
        ShardArtifact::from_json(&a.to_string())
            .unwrap_err()
            .to_string()
    };

    let e = error_with("corrected", "!!!".into());
    assert!(
        e.starts_with("levels[0].stats.corrected: not base64"),
        "{e}"
    );

    let e = error_with("latency", B64.encode(b"not a histogram").into());
    assert!(
        e.starts_with("levels[0].stats.latency: ") && e.contains("V2"),
        "{e}"
    );

    let mut other = Histogram::new_with_bounds(1, 2, 2).unwrap();
    other.auto(true);
    other.record(100).unwrap();
    let e = error_with("event_latency", to_base64(&other).unwrap().into());
    assert!(
        e.starts_with("levels[0].stats.event_latency: ") && e.contains("2 digits"),
        "{e}"
    );

    let mut counts = good["levels"][0]["stats"]["counts"].clone();
    counts["teapot"] = 1.into();
    let e = error_with("counts", counts);
    assert_eq!(
        e,
        "levels[0].stats.counts: unknown outcome class \"teapot\""
    );

    let e = error_with("reasons", serde_json::json!({"other.teapot": 1}));
    assert_eq!(
        e,
        "levels[0].stats.reasons: unknown outcome reason \"other.teapot\""
    );
}
