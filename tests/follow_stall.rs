//! `hubload merge --follow` of a shard that never ends (its record file without the end, as a
//! killed shard leaves it): SIGTERM ends the follow as Ctrl-C does, and `--stall-timeout`
//! bounds the wait.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use hubload_hub::FaultConfig;

use crate::shard_follow::{spawn_lines, wait_exit};
use crate::util::{assert_exit, hub_with, hubload_command, read_summary};

/// A shard's record file without its end, as a killed shard leaves it: one real shard's
/// `.jsonl` (one level) with its last line, the end, cut off.
async fn killed_shard_file(dir: &Path, hub: &str) -> std::path::PathBuf {
    let out = dir.join("shard0");
    let ran = hubload_command()
        .args(["--tenants", "2", "--concurrency", "2", "--duration", "1s"])
        .args(["--quiet", "--hub-url", hub, "--out"])
        .arg(&out)
        .env("JOB_COMPLETION_INDEX", "0")
        .env("HUBLOAD_SHARD_COUNT", "1")
        .env("HUBLOAD_RUN_ID", "killed")
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert_exit(&ran, 0);
    let text = std::fs::read_to_string(out.join("shard-0-of-1.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.last().unwrap().starts_with("{\"end\""));
    let cut = dir.join("killed.jsonl");
    std::fs::write(&cut, format!("{}\n", lines[..lines.len() - 1].join("\n"))).unwrap();
    cut
}

/// `merge --follow` on a file whose shard never ends: SIGTERM ends it as Ctrl-C does (what
/// came written, marked partial, exit 130); and with `--stall-timeout` it gives up once no
/// input has grown for that long, names the shard, writes what came and exits 4.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_of_a_shard_that_never_ends_stops_on_sigterm_or_its_stall_bound() {
    let hub = hub_with(FaultConfig::default()).await;
    let _turn = crate::util::SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let cut = killed_shard_file(dir.path(), &hub.url).await;

    let termed = dir.path().join("termed");
    let (mut merge, rows, errs, readers) = spawn_lines(
        hubload_command()
            .args(["merge", "--follow"])
            .arg(&cut)
            .arg("--out")
            .arg(&termed),
    );
    // The level is merged (its row printed): the merge is following, waiting for the end.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !rows
        .lock()
        .unwrap()
        .iter()
        .any(|l| l.starts_with("merged level 2 (1 shards): "))
    {
        assert!(
            Instant::now() < deadline,
            "no merged row: {:?}",
            errs.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(merge.try_wait().unwrap().is_none(), "it waits for the end");
    let ok = std::process::Command::new("kill")
        .args(["-TERM", &merge.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    assert_eq!(wait_exit(&mut merge, Duration::from_secs(20)), 130);
    for r in readers {
        r.join().unwrap();
    }
    let t = read_summary(&termed);
    assert!(t.partial);
    assert_eq!(t.levels.len(), 1);
    let own = read_summary(&dir.path().join("shard0"));
    assert_eq!(t.levels[0].stats.counts, own.levels[0].stats.counts);

    let stalled = dir.path().join("stalled");
    let started = Instant::now();
    let out = hubload_command()
        .args(["merge", "--follow", "--stall-timeout", "1s"])
        .arg(&cut)
        .arg("--out")
        .arg(&stalled)
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_exit(&out, 4);
    assert!(took >= Duration::from_secs(1), "gave up after {took:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("hubload: error: no input has grown for 1s (--stall-timeout)\n"),
        "{err}"
    );
    assert!(
        err.contains("hubload: error: shard 0/1: incomplete, its stream stopped after 1 level(s) without its end record\n"),
        "{err}"
    );
    let s = read_summary(&stalled);
    assert!(s.partial);
    assert_eq!(s.levels.len(), 1);
    assert_eq!(s.levels[0].stats.counts, own.levels[0].stats.counts);
}
