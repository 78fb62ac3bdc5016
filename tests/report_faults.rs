//! Nothing is lost or half-written when the final reports meet a fault: a SIGTERM (and the
//! second one that exits at once) while they are being written leaves every report file
//! complete and parseable, and a full or read-only `--out` is one clear error before any load
//! (no request reaches the hub), never a panic or a half-written file.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{bin, Scenario, SERIAL};

/// Every file a reporter may write, and how each is checked for completeness.
fn assert_complete(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // Temporary files (`.NAME.PID.N.tmp`) are never renamed into place half-written.
        if name.starts_with('.') {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        assert!(!bytes.is_empty(), "{name} is empty");
        match path.extension().and_then(|e| e.to_str()) {
            Some("json") => {
                let _: hubload::report::document::Report = serde_json::from_slice(&bytes)
                    .unwrap_or_else(|e| panic!("{name} does not parse: {e}"));
            }
            Some("csv" | "jtl") => {
                let mut rd = csv::Reader::from_reader(&bytes[..]);
                let width = rd.headers().unwrap().len();
                let rows = rd
                    .records()
                    .map(|r| r.unwrap_or_else(|e| panic!("{name}: {e}")));
                assert!(rows.into_iter().all(|r| r.len() == width), "{name}");
                assert!(bytes.ends_with(b"\n"), "{name} ends mid-line");
            }
            Some("html") => {
                let text = String::from_utf8(bytes).unwrap();
                assert!(text.trim_end().ends_with("</html>"), "{name} is cut short");
            }
            _ => assert!(bytes.ends_with(b"\n"), "{name} ends mid-line"),
        }
    }
}

/// Lines in `path` so far (0 while it does not exist).
fn lines(path: &Path) -> usize {
    std::fs::read(path).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
}

/// A temporary report file (`.NAME.PID.N.tmp`) in `dir`: a write in progress.
fn writing(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|rd| {
        rd.flatten()
            .any(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
    })
}

fn sigterm(pid: u32) {
    let ok = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

/// A run whose reports are large (4000 topics, one row each in several files), so writing them
/// takes long enough to be caught: once every attempt is in the JTL, the directory is watched
/// for a write in progress, and the run gets `signals` SIGTERMs then. With one, the run
/// finishes its reports and exits 130; with two, it exits at once, but only once the set being
/// written is whole. Either way every file is complete, holds the level, and no temporary file
/// is left.
fn sigterm_while_the_reports_are_written(signals: usize) {
    const REQUESTS: usize = 2000;
    let _turn = SERIAL.blocking_lock();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let jtl = dir.path().join("r/run.jtl");
    let requests = REQUESTS.to_string();
    let mut child = crate::util::hubload_command()
        .args(["--quiet", "--tenants", "1000", "--concurrency", "16"])
        .args(["--requests", &requests, "--jtl", jtl.to_str().unwrap()])
        .args(["--out", out.to_str().unwrap()])
        .env("RUST_LOG", "error")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    // The header and every attempt: the level is over, its reports are being written.
    while lines(&jtl) < REQUESTS + 1 {
        assert!(Instant::now() < deadline, "the level did not end");
        assert!(child.try_wait().unwrap().is_none(), "hubload ended early");
        std::thread::sleep(Duration::from_millis(2));
    }
    // Watched without pause: a write is a few ms long.
    while !writing(&out) {
        assert!(Instant::now() < deadline, "no report write was seen");
        if child.try_wait().unwrap().is_some() {
            break;
        }
    }
    let caught = child.try_wait().unwrap().is_none();
    if caught {
        for _ in 0..signals {
            sigterm(child.id());
        }
    }
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(
        caught,
        "hubload ended before a report write was seen: {stderr}"
    );
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_complete(&out);
    assert!(!writing(&out), "a temporary file was left");
    let summary = crate::util::read_summary(&out);
    assert_eq!(summary.levels[0].derived.samples, REQUESTS as u64);
    assert_eq!(lines(&jtl), REQUESTS + 1);
}

#[test]
fn sigterm_while_the_reports_are_written_loses_nothing() {
    sigterm_while_the_reports_are_written(1);
}

#[test]
fn a_second_sigterm_while_the_reports_are_written_leaves_them_whole() {
    sigterm_while_the_reports_are_written(2);
}

/// A tmpfs mounted for one test (root only), unmounted when dropped.
struct Mount(PathBuf);

impl Mount {
    /// A tmpfs of `size` (mount's syntax, e.g. `64k`) at a fresh directory; read-only with
    /// `ro`. `None` where mounting is not allowed (not root), which fails under CI.
    fn tmpfs(size: &str, ro: bool) -> Option<Mount> {
        let at = tempfile::tempdir().unwrap().keep();
        let opts = format!("size={size}{}", if ro { ",ro" } else { "" });
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &opts, "tmpfs", at.to_str().unwrap()])
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must run these tests as root (mount -t tmpfs failed)"
            );
            eprintln!("skipped: cannot mount a tmpfs (not root?)");
            let _ = std::fs::remove_dir(&at);
            return None;
        }
        Some(Mount(at))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// `--out` where nothing can be written: exit 2, one line naming the file or directory and
/// the system's reason, before any request reaches the hub, and nothing half-written there.
async fn refused_before_the_load(out: &Path, reason: &str) {
    let scenario = Scenario::start(Default::default()).await;
    let url = scenario.hub.url.clone();
    let out_s = out.to_str().unwrap().to_string();
    let cwd = scenario.dir.path().to_path_buf();
    let output = tokio::task::spawn_blocking(move || {
        let _turn = SERIAL.blocking_lock();
        let args = ["--hub-url", &url, "--tenants", "50", "--requests", "100"];
        bin(&[&args[..], &["--out", &out_s]].concat(), &cwd)
    })
    .await
    .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.starts_with("  ")).collect();
    // The banner's head line, then the one error line.
    assert_eq!(lines.len(), 2, "{err}");
    assert!(lines[1].starts_with("hubload: error: cannot "), "{err}");
    assert!(lines[1].contains(reason), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(scenario.hub_stats().await.requests, 0, "the hub was loaded");
    if out.exists() {
        assert_complete_or_none(out);
    }
}

/// No report file at all, or complete ones; no temporary file left behind.
fn assert_complete_or_none(dir: &Path) {
    let names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.ends_with(".tmp")), "{names:?}");
    for n in &names {
        let bytes = std::fs::read(dir.join(n)).unwrap();
        if n.ends_with(".json") {
            serde_json::from_slice::<serde_json::Value>(&bytes)
                .unwrap_or_else(|e| panic!("{n} is half-written: {e}"));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_is_one_clear_error_before_the_load() {
    let Some(mnt) = Mount::tmpfs("64k", false) else {
        return;
    };
    // Fill it: the last write fails with ENOSPC.
    let filler = vec![b'x'; 4096];
    let mut f = std::fs::File::create(mnt.0.join("filler")).unwrap();
    while std::io::Write::write_all(&mut f, &filler).is_ok() {}
    drop(f);
    refused_before_the_load(&mnt.0.join("r"), "No space left on device").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_out_is_one_clear_error_before_the_load() {
    let Some(mnt) = Mount::tmpfs("1m", true) else {
        return;
    };
    // The directory itself (it exists) and one to be made in it.
    refused_before_the_load(&mnt.0, "Read-only file system").await;
    refused_before_the_load(&mnt.0.join("r"), "Read-only file system").await;
}
