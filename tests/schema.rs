//! summary.json is described by schema/summary.schema.json: the committed schema matches the
//! Report model, and real output validates against it.

use hubload::report::document::Report;
use hubload_hub::FaultConfig;

use crate::util::{line, Scenario};

fn committed_schema() -> serde_json::Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/summary.schema.json");
    let generated = serde_json::to_value(schemars::schema_for!(Report)).unwrap();
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::write(
            &path,
            serde_json::to_string_pretty(&generated).unwrap() + "\n",
        )
        .unwrap();
    }
    let committed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("schema/summary.schema.json"))
            .unwrap();
    assert_eq!(
        committed, generated,
        "the Report model changed: regenerate with UPDATE_SCHEMA=1 cargo test schema"
    );
    committed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_summary_json_validates_against_the_committed_schema() {
    let schema = committed_schema();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let sc = Scenario::start(FaultConfig {
        fail_503_every: Some(4),
        ..FaultConfig::default()
    })
    .await;
    let (hub, out) = (&sc.hub, &sc.dir);
    sc.run(&line(
        "--tenants 3 --concurrency 2,4 --requests 40 --retries 1 --threshold p99<5s --deregister",
    ))
    .await;
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("summary.json")).unwrap())
            .unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&summary)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // And the schema is not vacuous: a summary missing a required field is rejected.
    let mut broken = summary.clone();
    broken.as_object_mut().unwrap().remove("levels");
    assert!(!validator.is_valid(&broken));
    assert_eq!(summary["levels"].as_array().unwrap().len(), 2);
    // Faults hit every mode: deregistration reconciles with the hub's own count.
    let s = hub.stats().await;
    assert_eq!(summary["deregistration"]["topics"], 12);
    assert_eq!(summary["deregistration"]["accepted"], s.deregister.accepted);
    assert_eq!(summary["registration"]["accepted"], s.register.accepted);
}

/// Summaries written before `model` and `target` became enums still validate and still load;
/// a word outside the enums is now rejected.
#[test]
fn committed_summaries_validate_and_the_kinds_are_closed_sets() {
    let schema = committed_schema();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reports");
    for name in [
        "sample-summary.json",
        "compare-baseline.json",
        "compare-candidate.json",
    ] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&summary)
            .map(|e| format!("{e} at {}", e.instance_path))
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}");
        let report: Report = serde_json::from_str(&text).unwrap();
        assert_eq!(
            (report.model.as_str(), report.target.as_str()),
            ("closed", "websub"),
            "{name}"
        );
        for (field, word) in [("model", "bursty"), ("target", "amqp")] {
            let mut bad = summary.clone();
            bad[field] = word.into();
            assert!(!validator.is_valid(&bad), "{name}: {field}={word}");
            assert!(serde_json::from_value::<Report>(bad).is_err());
        }
    }
}
