//! Scale-out: N shard processes with the Indexed Job environment contract against one hub,
//! merged, equal the hub's own counts and a single-process run of the same workload.

use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use hubload_hub::FaultConfig;

use crate::util::{count, run, TestHub};

const ARGS: &[&str] = &[
    "--tenants",
    "9",
    "--sps",
    "2",
    "--users",
    "4",
    "--seed",
    "7",
    "--concurrency",
    "3,7",
    "--requests",
    "240",
    "--quiet",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_shards_merge_to_the_hubs_counts_and_to_a_single_run() {
    let hub = TestHub::start(FaultConfig {
        fail_503_every: Some(6),
        ..FaultConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let start_at =
        humantime::format_rfc3339_millis(SystemTime::now() + Duration::from_secs(4)).to_string();
    let shards = 3;
    let children: Vec<_> = (0..shards)
        .map(|i| {
            let out = dir.path().join(format!("shard{i}"));
            Command::new(env!("CARGO_BIN_EXE_hubload"))
                .args(ARGS)
                .args(["--hub-url", &hub.url, "--out", out.to_str().unwrap()])
                .env("JOB_COMPLETION_INDEX", i.to_string())
                .env("HUBLOAD_SHARD_COUNT", shards.to_string())
                .env("HUBLOAD_RUN_ID", "shard-test")
                .env("HUBLOAD_START_AT", &start_at)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut logs = String::new();
    for c in children {
        let out = tokio::task::spawn_blocking(move || c.wait_with_output().unwrap())
            .await
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        logs += &String::from_utf8_lossy(&out.stdout);
    }
    // Collect from stdout, as `kubectl logs` would, and merge.
    let dump = dir.path().join("shards.log");
    std::fs::write(&dump, &logs).unwrap();
    let merged_dir = dir.path().join("merged");
    let m = Command::new(env!("CARGO_BIN_EXE_hubload"))
        .args([
            "merge",
            dump.to_str().unwrap(),
            "--out",
            merged_dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        m.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&m.stderr)
    );
    let merged: hubload::report::Report =
        serde_json::from_str(&std::fs::read_to_string(merged_dir.join("summary.json")).unwrap())
            .unwrap();

    // 1. The merge equals the hub's own counts.
    let s = hub.stats().await;
    let t = merged.total.as_ref().unwrap();
    assert_eq!(t.samples, 480);
    assert_eq!(s.publish.total(), 480);
    assert_eq!(count(t, "accepted"), s.publish.accepted);
    assert_eq!(count(t, "http_503"), s.publish.fault_503);
    assert_eq!(
        merged.registration.as_ref().unwrap().topics,
        36,
        "every topic registered once, by its owner"
    );
    assert_eq!(s.register.total(), 36);
    assert_eq!(
        merged
            .levels
            .iter()
            .map(|l| l.label.as_str())
            .collect::<Vec<_>>(),
        ["3", "7"]
    );

    // 2. The merge equals one process running the same workload: the same events, so the same
    //    counts per topic (the per-class split depends on the hub's fault schedule order).
    let single_hub = TestHub::start(FaultConfig::default()).await;
    let out = tempfile::tempdir().unwrap();
    let mut args: Vec<&str> = ARGS.to_vec();
    args.retain(|a| *a != "--quiet");
    args.extend([
        "--hub-url",
        &single_hub.url,
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let single = run(&args).await.report;
    let st = single.total.as_ref().unwrap();
    assert_eq!(st.samples, t.samples);
    assert_eq!(
        st.topic_attempts, t.topic_attempts,
        "per-topic counts differ"
    );
    for (a, b) in single.levels.iter().zip(&merged.levels) {
        assert_eq!(a.samples, b.samples);
        assert_eq!(a.topic_attempts, b.topic_attempts, "level {}", a.label);
        assert_eq!(
            a.bytes_sent, b.bytes_sent,
            "level {}: the same events, byte for byte",
            a.label
        );
    }
    let single_hub_stats = single_hub.stats().await;
    for (i, name) in single.topics.iter().enumerate() {
        assert_eq!(
            st.topic_attempts[i], single_hub_stats.topics[name].published,
            "{name}"
        );
    }

    // 3. A dump missing shard 1 is refused with exit code 4, naming the shard.
    let partial: String = logs
        .lines()
        .filter(|l| !l.contains(" 1/3 "))
        .map(|l| format!("{l}\n"))
        .collect();
    let dump = dir.path().join("partial.log");
    std::fs::write(&dump, partial).unwrap();
    let m = Command::new(env!("CARGO_BIN_EXE_hubload"))
        .args(["merge", dump.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&m.stderr);
    assert_eq!(m.status.code(), Some(4), "{err}");
    assert!(err.contains("missing shard") && err.contains('1'), "{err}");
}

#[test]
fn merging_nothing_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = crate::util::bin(&["merge", "nothing-here"], dir.path());
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
