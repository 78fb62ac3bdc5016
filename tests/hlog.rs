//! latency.hlog read by a decoder we did not write: the HdrHistogram Python library
//! (`pip install hdrhistogram`) via scripts/read-hlog.py. Counts, p50 and p99 per level equal
//! summary.json's, and `hubload report` rewrites the same log.

use std::path::Path;
use std::process::Command;

use hubload_hub::FaultConfig;

use crate::util::{bin, hub_with, run};

/// The Python decoder's view of an hlog, or `None` (test skipped, loudly) when Python or the
/// package is missing outside CI. Under `CI` a missing decoder fails the test.
fn python_read(hlog: &Path) -> Option<serde_json::Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/read-hlog.py");
    let out = Command::new("python3").arg(&script).arg(hlog).output();
    let missing = match &out {
        Err(e) => Some(format!("python3 not runnable: {e}")),
        Ok(o) if !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("hdrh") => {
            Some(String::from_utf8_lossy(&o.stderr).into_owned())
        }
        Ok(_) => None,
    };
    if let Some(why) = missing {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs python3 with `pip install hdrhistogram`: {why}"
        );
        eprintln!("SKIPPED hlog decoder check: {why} (pip install hdrhistogram)");
        return None;
    }
    let o = out.unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    Some(serde_json::from_slice(&o.stdout).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_hdrhistogram_reads_the_log_with_summary_counts_and_percentiles() {
    let hub = hub_with(FaultConfig::default()).await;
    let out = tempfile::tempdir().unwrap();
    // 400 attempts a level: q × N is a whole number for p50 and p99, where HdrHistogram
    // Python's rank (q × N rounded half up) and ours (nearest rank, q × N rounded up) agree.
    run(&[
        "--hub-url",
        &hub.url,
        "--tenants",
        "2",
        "--concurrency",
        "1,4",
        "--requests",
        "400",
        "--out",
        out.path().to_str().unwrap(),
    ])
    .await;
    let hlog = out.path().join("latency.hlog");
    let text = std::fs::read_to_string(&hlog).unwrap();
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("summary.json")).unwrap())
            .unwrap();
    let levels = summary["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 2);
    let Some(py) = python_read(&hlog) else {
        return;
    };
    assert_eq!(py.as_object().unwrap().len(), 2, "{py}");
    for (tag, l) in ["c1", "c4"].iter().zip(levels) {
        let p = &py[tag];
        assert_eq!(p["count"], l["samples"], "{tag}");
        assert_eq!(l["samples"], 400, "{tag}");
        let lat = &l["latency_us"];
        let max = lat["max"].as_u64().unwrap();
        // Ours are clamped to the exact max; the library reports the bucket's highest value.
        for q in ["p50", "p99"] {
            assert_eq!(
                p[q].as_u64().unwrap().min(max),
                lat[q].as_u64().unwrap(),
                "{tag} {q}: python {p} summary {lat}"
            );
        }
        assert!(p["max"].as_u64().unwrap() >= max, "{tag}");
    }
    // `hubload report` regenerates the same log from summary.json alone.
    std::fs::remove_file(&hlog).unwrap();
    let o = bin(&["report", "summary.json"], out.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read_to_string(&hlog).unwrap(), text);
}
