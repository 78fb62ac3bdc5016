//! latency.hlog read by a decoder we did not write: the HdrHistogram Python library
//! (`pip install hdrhistogram`) via scripts/read-hlog.py. Counts, p50 and p99 per level equal
//! summary.json's, and `hubload report` rewrites the same log.

use std::path::Path;
use std::process::Command;

use hubload_hub::FaultConfig;

use crate::util::{bin, hub_with, run};

/// The `<tag>-per-second` intervals of level `l`, as the Python library read them: one per
/// second with attempts, counting exactly that second's attempts (`timeline`, recorded apart),
/// starting at the level's origin + s; added together, the level itself (count, p50, p99).
fn per_second_intervals_add_up_to_the_level(
    py: &serde_json::Value,
    tag: &str,
    l: &serde_json::Value,
) {
    let ps = &py[format!("{tag}-per-second")];
    let whole = &py[tag];
    for k in ["count", "p50", "p99", "max"] {
        assert_eq!(ps[k], whole[k], "{tag}-per-second {k}: {ps} vs {whole}");
    }
    assert_eq!(ps["count"], l["samples"], "{tag}");
    let origin = l["stats"]["seconds"]["origin_us"].as_u64().unwrap();
    let first = l["stats"]["first_start_us"].as_u64().unwrap();
    let seconds: Vec<(u64, u64)> = l["stats"]["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(_, b)| b["count"].as_u64().unwrap() > 0)
        .map(|(s, b)| (s as u64, b["count"].as_u64().unwrap()))
        .collect();
    let intervals = ps["intervals"].as_array().unwrap();
    assert_eq!(intervals.len(), seconds.len(), "{tag}: {intervals:?}");
    for (iv, (s, count)) in intervals.iter().zip(&seconds) {
        assert_eq!(iv["count"].as_u64().unwrap(), *count, "{tag} second {s}");
        let want_us = (origin + s * 1_000_000).max(first) as f64;
        let got_us = iv["start_s"].as_f64().unwrap() * 1e6;
        // The log keeps ms (3 decimals).
        assert!(
            (got_us - want_us).abs() <= 1000.0,
            "{tag} second {s}: {got_us} vs {want_us}"
        );
        let length = iv["end_s"].as_f64().unwrap() - iv["start_s"].as_f64().unwrap();
        assert!(
            (0.0..=1.0005).contains(&length),
            "{tag} second {s}: {length}"
        );
    }
}

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

/// A run of `load` against the embedded hub with 2 tenants: its directory and summary.json.
async fn run_against_hub(load: &[&str]) -> (tempfile::TempDir, serde_json::Value) {
    let hub = hub_with(FaultConfig::default()).await;
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap();
    let mut args = vec!["--hub-url", &hub.url, "--tenants", "2", "--out", dir];
    args.extend(load);
    run(&args).await;
    let text = std::fs::read_to_string(out.path().join("summary.json")).unwrap();
    (out, serde_json::from_str(&text).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_hdrhistogram_reads_the_log_with_summary_counts_and_percentiles() {
    // 400 attempts a level: q × N is a whole number for p50 and p99, where HdrHistogram
    // Python's rank (q × N rounded half up) and ours (nearest rank, q × N rounded up) agree.
    let (out, summary) = run_against_hub(&["--concurrency", "1,4", "--requests", "400"]).await;
    let hlog = out.path().join("latency.hlog");
    let text = std::fs::read_to_string(&hlog).unwrap();
    let levels = summary["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 2);
    let Some(py) = python_read(&hlog) else {
        return;
    };
    assert_eq!(py.as_object().unwrap().len(), 4, "{py}");
    for (tag, l) in ["c1", "c4"].iter().zip(levels) {
        assert_eq!(py[tag]["intervals"].as_array().unwrap().len(), 1, "{tag}");
        per_second_intervals_add_up_to_the_level(&py, tag, l);
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

/// The open model over about two seconds: per-second intervals for raw and corrected latency,
/// each series adding up to its level interval, read by the Python library.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_model_per_second_intervals_of_raw_and_corrected_latency() {
    let (out, summary) = run_against_hub(&["--rate", "200", "--requests", "300"]).await;
    let l = &summary["levels"][0];
    assert_eq!(l["samples"], 300);
    let Some(py) = python_read(&out.path().join("latency.hlog")) else {
        return;
    };
    let tags: Vec<&String> = py.as_object().unwrap().keys().collect();
    assert_eq!(
        tags,
        [
            "r200",
            "r200-corrected",
            "r200-corrected-per-second",
            "r200-per-second"
        ],
        "{py}"
    );
    per_second_intervals_add_up_to_the_level(&py, "r200", l);
    let c = &py["r200-corrected-per-second"];
    assert!(c["intervals"].as_array().unwrap().len() >= 2, "{c}");
    for k in ["count", "p50", "p99", "max"] {
        assert_eq!(c[k], py["r200-corrected"][k], "corrected {k}");
    }
    assert_eq!(c["count"], 300);
}
