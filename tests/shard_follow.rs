//! `hubload merge --follow`: two shard processes against the reference hub, their stdout
//! appended to files the merge reads while they run; each level's merged row (printed, and on
//! the page's `/v1/status`) comes before the shards end, and the final reports equal a plain
//! merge of the shards' record files and the hub's own counts. Then the same lines
//! interleaved on one stdin, and a shard's stream cut; and a shard stopped by SIGINT.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use hubload_hub::FaultConfig;

use crate::util::{assert_exit, count, hub_with, hubload_command, read_summary};

/// Start shard `i` of 2 of run `follow-test`, its stdout (the `HUBLOAD-SHARD` lines and its
/// messages) appended to `dir/s<i>.log`, its reports in `dir/shard<i>`.
fn start_shard(dir: &Path, i: u32, hub: &str, start_at: &str) -> Child {
    let load = ["--concurrency", "2,4,6", "--duration", "2s"];
    start_shard_with(dir, i, hub, start_at, &load)
}

/// [`start_shard`] with `load` (the levels, and any other flags).
pub(crate) fn start_shard_with(
    dir: &Path,
    i: u32,
    hub: &str,
    start_at: &str,
    load: &[&str],
) -> Child {
    let log = std::fs::File::create(dir.join(format!("s{i}.log"))).unwrap();
    let out = dir.join(format!("shard{i}"));
    hubload_command()
        .args([
            "--tenants",
            "6",
            "--sps",
            "2",
            "--users",
            "4",
            "--seed",
            "11",
            "--quiet",
            "--hub-url",
            hub,
            "--out",
            out.to_str().unwrap(),
        ])
        .args(load)
        .env("JOB_COMPLETION_INDEX", i.to_string())
        .env("HUBLOAD_SHARD_COUNT", "2")
        .env("HUBLOAD_RUN_ID", "follow-test")
        .env("HUBLOAD_START_AT", start_at)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::from(log))
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Wait (bounded) for `child` to exit; its exit code.
pub(crate) fn wait_exit(child: &mut Child, within: Duration) -> i32 {
    let deadline = Instant::now() + within;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code().unwrap_or(-1);
        }
        assert!(Instant::now() < deadline, "still running after {within:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The report files whose bytes depend only on what was measured.
const SAME: [&str; 6] = [
    "table.txt",
    "aggregate.csv",
    "latency.csv",
    "topics.csv",
    "tenants.csv",
    "latency.hlog",
];

fn assert_same_reports(a: &Path, b: &Path) {
    for name in SAME {
        let (x, y) = (
            std::fs::read(a.join(name)).unwrap(),
            std::fs::read(b.join(name)).unwrap(),
        );
        assert!(x == y, "{name} differs between {a:?} and {b:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_merges_each_level_while_the_shards_run_and_ends_as_a_plain_merge() {
    let hub = hub_with(FaultConfig {
        fail_503_every: Some(7),
        ..FaultConfig::default()
    })
    .await;
    let _turn = crate::util::SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let start_at =
        humantime::format_rfc3339_millis(SystemTime::now() + Duration::from_secs(3)).to_string();
    let mut shards: Vec<Child> = (0..2)
        .map(|i| start_shard(&d, i, &hub.url, &start_at))
        .collect();
    let followed = d.join("followed");
    let (mut merge, rows, errs, readers) = spawn_lines(
        hubload_command()
            .args(["merge", "--follow"])
            .args([d.join("s0.log"), d.join("s1.log")])
            .args(["--web", "127.0.0.1:0", "--out"])
            .arg(&followed),
    );

    // Level "2" (the first) is merged, shown by the page's API and printed, while both
    // shards still have levels "4" and "6" (2 s each) to run.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (url, stream) = merge_page(&errs, deadline).await;
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    // A merged second with attempts in it, on the page's status, while both shards run.
    let second = until_status(&http, &url, deadline, "no merged second", |a| {
        let s = &a["second"];
        (s["ended"].as_u64() > Some(0)).then(|| s.clone())
    })
    .await;
    for (i, s) in shards.iter_mut().enumerate() {
        assert!(
            s.try_wait().unwrap().is_none(),
            "shard {i} had ended before a second was merged: {second}"
        );
    }
    assert_eq!(second["shards"], 2, "{second}");
    let status = until_status(&http, &url, deadline, "level 2 never merged", |a| {
        let merged = &a["merge"];
        (merged["levels_merged"].as_u64() >= Some(1)).then(|| merged.clone())
    })
    .await;
    for (i, s) in shards.iter_mut().enumerate() {
        assert!(
            s.try_wait().unwrap().is_none(),
            "shard {i} had ended before level 2 was merged: {status}"
        );
    }
    assert_eq!(status["shards"], 2);
    assert_eq!(status["shards_ended"], 0, "{status}");
    // The page steers nothing: a pause is refused, and says why.
    let r = http.post(format!("{url}v1/pause")).send().await.unwrap();
    assert_eq!(r.status(), 409);
    assert!(r.text().await.unwrap().contains("steers none of them"));
    let first = loop {
        let row = rows
            .lock()
            .unwrap()
            .iter()
            .find(|l| l.starts_with("merged level 2 (2 shards): "))
            .cloned();
        if let Some(r) = row {
            break r;
        }
        assert!(Instant::now() < deadline, "no merged row for level 2");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    for s in &mut shards {
        assert_eq!(wait_exit(s, Duration::from_secs(60)), 0);
    }
    assert_eq!(wait_exit(&mut merge, Duration::from_secs(30)), 0);
    for r in readers {
        r.join().unwrap();
    }

    // A plain merge of the shards' own record files writes the same reports.
    let plain = d.join("plain");
    let out = hubload_command()
        .args(["merge"])
        .args([d.join("shard0"), d.join("shard1")])
        .arg("--out")
        .arg(&plain)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert_same_reports(&followed, &plain);
    let f = read_summary(&followed);
    assert!(!f.partial);

    // The second seen live is the sum of the two shards' own records of that wall-clock second
    // and level (a record carries the last parts of the levels that ended in it apart).
    let at = second["at"].as_u64().unwrap();
    let mut own = std::collections::BTreeMap::<String, u64>::new();
    for i in 0..2 {
        let file = d.join(format!("shard{i}/shard-{i}-of-2.jsonl"));
        for rec in seconds_of(&file).iter().filter(|r| r["at"] == at) {
            for part in parts(rec) {
                if part["level"] != second["level"] {
                    continue;
                }
                for (class, n) in part["by_class"].as_object().unwrap() {
                    *own.entry(class.clone()).or_default() += n.as_u64().unwrap();
                }
            }
        }
    }
    let live: std::collections::BTreeMap<String, u64> =
        serde_json::from_value(second["by_class"].clone()).unwrap();
    assert_eq!(live, own, "second {at}");
    // The page's seconds, all of them, add up to the merged run's counts.
    let events = tokio::time::timeout(Duration::from_secs(30), stream)
        .await
        .expect("the page's stream ends with the merge")
        .unwrap();
    let mut summed = hubload::stats::Counts::default();
    let mut seconds = 0;
    for (kind, data) in &events {
        if kind == "second" {
            seconds += 1;
            let m: std::collections::BTreeMap<String, u64> =
                serde_json::from_value(data["by_class"].clone()).unwrap();
            summed += &hubload::stats::Counts::from_map(&m).unwrap();
        }
    }
    assert!(seconds >= 6, "3 levels of 2 s: {seconds} seconds");
    assert_eq!(events.last().map(|e| e.0.as_str()), Some("end"));
    assert_eq!(summed, f.total.as_ref().unwrap().stats.counts);
    // ... and each level's, class by class, to its merged row.
    let page: Vec<&serde_json::Value> = events
        .iter()
        .filter(|(k, _)| k == "second")
        .map(|(_, v)| v)
        .collect();
    let by_level = crate::live_panels::per_level(&page);
    assert_eq!(by_level.len(), f.levels.len(), "{by_level:?}");
    for (i, l) in f.levels.iter().enumerate() {
        assert_eq!(by_level[&(i as u64)], l.stats.counts, "level {}", l.label);
        assert_eq!(by_level[&(i as u64)].total(), l.derived.samples);
    }
    let level2 = &f.levels[0];
    let classes: Vec<String> = hubload::result::Class::ALL
        .iter()
        .filter(|c| level2.stats.counts.get(**c) > 0)
        .map(|c| format!("{} {}", c.name(), level2.stats.counts.get(*c)))
        .collect();
    assert_eq!(
        first,
        format!(
            "merged level 2 (2 shards): {} attempts, {:.1}/s, p50 {} ms, p99 {} ms, errors {:.2} % [{}]",
            level2.derived.samples,
            level2.derived.throughput,
            level2.derived.median_ms,
            level2.derived.p99_ms,
            level2.derived.error_pct,
            classes.join(", "),
        ),
        "the printed row is the level's row in summary.json"
    );

    // ... and the hub's own counts.
    let s = hub.stats().await;
    let t = f.total.as_ref().unwrap();
    assert_eq!(t.derived.samples, s.publish.total());
    assert_eq!(count(t, "accepted"), s.publish.accepted);
    assert_eq!(count(t, "http_503"), s.publish.fault_503);
    assert_eq!(count(t, "denied"), s.publish.denied);
    assert!(t.derived.samples > 0 && s.publish.fault_503 > 0);
    assert_eq!(summed.total(), s.publish.total(), "the seconds and the hub");

    // The same lines interleaved on one stdin, as `kubectl logs -f -l …` gives them.
    let logs: Vec<Vec<String>> = (0..2)
        .map(|i| {
            std::fs::read_to_string(d.join(format!("s{i}.log")))
                .unwrap()
                .lines()
                .map(str::to_string)
                .collect()
        })
        .collect();
    let mut mixed = String::new();
    for k in 0..logs[0].len().max(logs[1].len()) {
        for l in &logs {
            if let Some(line) = l.get(k) {
                mixed.push_str(line);
                mixed.push('\n');
            }
        }
    }
    let stdin_dir = d.join("stdin");
    let out = follow_stdin(&stdin_dir, &mixed);
    assert_exit(&out, 0);
    assert_same_reports(&stdin_dir, &plain);

    // Shard 1 killed after its first level: its stream stops there. Reported as incomplete
    // (exit 4, one line naming the shard), and what every shard had, level "2", written and
    // marked partial; not merged as if it were whole.
    let cut_at = logs[1]
        .iter()
        .position(|l| l.contains(" level-1 "))
        .expect("shard 1 printed level 1");
    let mut cut = logs[0].join("\n");
    cut.push('\n');
    cut.push_str(&logs[1][..cut_at].join("\n"));
    cut.push('\n');
    let cut_dir = d.join("cut");
    let out = follow_stdin(&cut_dir, &cut);
    assert_exit(&out, 4);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "run follow-test shard 1/2: the stream ends after 1 level(s) without its end record"
        ),
        "{err}"
    );
    let c = read_summary(&cut_dir);
    assert!(c.partial);
    assert_eq!(c.levels.len(), 1);
    assert_eq!(c.levels[0].derived.samples, level2.derived.samples);
    assert_eq!(c.levels[0].stats.counts, level2.stats.counts);
}

/// The `second` records of a shard's `.jsonl` file.
pub(crate) fn seconds_of(file: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter_map(|v| v.get("second").cloned())
        .collect()
}

/// A shard's second record and the last parts of the levels that ended in it.
pub(crate) fn parts(rec: &serde_json::Value) -> impl Iterator<Item = &serde_json::Value> {
    std::iter::once(rec).chain(rec["ended"].as_array().into_iter().flatten())
}

/// The merge's page URL, from its message on stderr (`errs`, waited for until `deadline`), and
/// the page's whole stream, read from now until its `end`.
pub(crate) async fn merge_page(
    errs: &Lines,
    deadline: Instant,
) -> (
    String,
    tokio::task::JoinHandle<Vec<(String, serde_json::Value)>>,
) {
    let url = loop {
        let line = errs.lock().unwrap().iter().find_map(|l| {
            l.strip_prefix("hubload: the merge's live page is at ")
                .map(str::to_string)
        });
        if let Some(u) = line {
            break u;
        }
        assert!(
            Instant::now() < deadline,
            "no page: {:?}",
            errs.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let port: u16 = url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let stream = tokio::spawn(async move {
        crate::live_panels::stream(&crate::live_control::Api::new(port, None)).await
    });
    (url, stream)
}

/// Lines collected as they come.
type Lines = Arc<Mutex<Vec<String>>>;

/// Start `cmd`, its stdout's and stderr's lines collected as they come (the readers end with
/// the process).
pub(crate) fn spawn_lines(
    cmd: &mut std::process::Command,
) -> (Child, Lines, Lines, [std::thread::JoinHandle<()>; 2]) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (rows, errs) = (Lines::default(), Lines::default());
    let readers = [
        lines_into(child.stdout.take().unwrap(), rows.clone()),
        lines_into(child.stderr.take().unwrap(), errs.clone()),
    ];
    (child, rows, errs, readers)
}

/// Poll the page's `/v1/status` until `pick` finds what it wants in its attributes (failing
/// with `what` at `deadline`).
pub(crate) async fn until_status(
    http: &reqwest::Client,
    url: &str,
    deadline: Instant,
    what: &str,
    pick: impl Fn(&serde_json::Value) -> Option<serde_json::Value>,
) -> serde_json::Value {
    loop {
        let body = http
            .get(format!("{url}v1/status"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        if let Some(got) = pick(&v["data"]["attributes"]) {
            return got;
        }
        assert!(Instant::now() < deadline, "{what}: {v}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Collect `from`'s lines into `into` as they come.
fn lines_into(
    from: impl std::io::Read + Send + 'static,
    into: Arc<Mutex<Vec<String>>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for l in BufReader::new(from).lines() {
            into.lock().unwrap().push(l.unwrap());
        }
    })
}

/// `hubload merge --follow -` with `text` on its stdin, into `out`.
fn follow_stdin(out: &Path, text: &str) -> std::process::Output {
    let mut c = hubload_command()
        .args(["merge", "--follow", "-", "--out"])
        .arg(out)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = c.stdin.take().unwrap();
    let text = text.to_string();
    let w = std::thread::spawn(move || {
        let _ = stdin.write_all(text.as_bytes());
    });
    let out = c.wait_with_output().unwrap();
    w.join().unwrap();
    out
}

/// A shard stopped by SIGINT ends its stream cleanly: its cut level, then its end marked
/// partial; the merge of its file is that partial run, the shard's own report's figures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_shard_ends_its_stream_marked_partial() {
    let hub = hub_with(FaultConfig::default()).await;
    let _turn = crate::util::SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("shard0");
    let mut shard = hubload_command()
        .args([
            "--tenants",
            "4",
            "--concurrency",
            "2,4",
            "--duration",
            "60s",
        ])
        .args(["--quiet", "--hub-url", &hub.url, "--out"])
        .arg(&out)
        .env("JOB_COMPLETION_INDEX", "0")
        .env("HUBLOAD_SHARD_COUNT", "1")
        .env("HUBLOAD_RUN_ID", "stopped")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Load is going: the hub has answered publishes.
    let deadline = Instant::now() + Duration::from_secs(30);
    while hub.stats().await.publish.total() < 100 {
        assert!(Instant::now() < deadline, "no load reached the hub");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let ok = std::process::Command::new("kill")
        .args(["-INT", &shard.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    assert_eq!(wait_exit(&mut shard, Duration::from_secs(20)), 130);

    let text = std::fs::read_to_string(out.join("shard-0-of-1.jsonl")).unwrap();
    let kinds: Vec<String> = text
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v.as_object().unwrap().keys().next().unwrap().clone()
        })
        .collect();
    let kinds: Vec<&String> = kinds.iter().filter(|k| *k != "second").collect();
    assert_eq!(kinds, ["head", "level", "end"]);
    let end: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(end["end"]["partial"], true);
    assert_eq!(end["end"]["levels"], 1);

    let merged = dir.path().join("merged");
    let m = hubload_command()
        .arg("merge")
        .arg(&out)
        .arg("--out")
        .arg(&merged)
        .output()
        .unwrap();
    assert_exit(&m, 0);
    let (got, own) = (read_summary(&merged), read_summary(&out));
    assert!(got.partial);
    assert_eq!(got.levels.len(), 1);
    let (g, o) = (got.total.unwrap(), own.total.unwrap());
    assert_eq!(
        (g.derived.samples, &g.stats.counts),
        (o.derived.samples, &o.stats.counts)
    );
    // Its seconds, the last cut by the signal, add up to its counts (the cut level's last part
    // in the record after its end).
    let mut summed = hubload::stats::Counts::default();
    let seconds = seconds_of(&out.join("shard-0-of-1.jsonl"));
    for part in seconds.iter().flat_map(parts) {
        let m: std::collections::BTreeMap<String, u64> =
            serde_json::from_value(part["by_class"].clone()).unwrap();
        summed += &hubload::stats::Counts::from_map(&m).unwrap();
    }
    assert_eq!(summed, o.stats.counts);
}

/// Bad merge input is one line naming what is wrong, exit 2: a line of another version, stdin
/// without `--follow`, `--web` without `--follow`, a bad `--stall-timeout` or one without
/// `--follow`, a line over the limit.
#[test]
fn bad_merge_input_is_one_line_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let v3 = dir.path().join("v3.log");
    std::fs::write(&v3, "x\nHUBLOAD-SHARD v3 r 0/1 head 1/1 AAAA\n").unwrap();
    let long = dir.path().join("long.log");
    std::fs::write(&long, format!("start\n{}\n", "y".repeat(70_000))).unwrap();
    let cases: [(&[&str], String); 6] = [
        (
            &["merge", v3.to_str().unwrap()],
            format!(
                "hubload: error: {}: line 2: HUBLOAD-SHARD line version v3 is not supported (this hubload reads v1 and v2)\n",
                v3.display()
            ),
        ),
        (
            &["merge", "-"],
            "hubload: error: -: stdin is read with --follow only\n".into(),
        ),
        (
            &["merge", "x", "--web", "127.0.0.1:0"],
            "hubload: error: --web needs --follow: a plain merge has no run to watch\n".into(),
        ),
        (
            &["merge", "x", "--follow", "--stall-timeout", "soon"],
            "hubload: error: invalid --stall-timeout `soon`: is not a duration (use e.g. 300ms, 5s, 1m30s)\n".into(),
        ),
        (
            &["merge", "x", "--stall-timeout", "1s"],
            "hubload: error: --stall-timeout needs --follow: a plain merge reads whole inputs\n".into(),
        ),
        (
            &["merge", long.to_str().unwrap()],
            format!(
                "hubload: error: {}: a line is over the limit of 65536 bytes\n",
                long.display()
            ),
        ),
    ];
    for (args, want) in cases {
        let out = crate::util::bin(args, dir.path());
        assert_exit(&out, 2);
        assert_eq!(String::from_utf8_lossy(&out.stderr), want, "{args:?}");
    }
}
