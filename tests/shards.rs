//! Scale-out: N shard processes with the Indexed Job environment contract against one hub (or
//! one Service Bus emulator), merged, equal the server's own counts and a single-process run of
//! the same workload; a Service Bus run's `servicebus` sections merge too.

use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use hubload_hub::FaultConfig;

use crate::util::{assert_exit, count, hub_with, jsonl_lines, read_summary, run};

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

/// Run `count` shard processes of one run (the Indexed Job contract) with `args`, each into
/// `dir/shard<i>`, starting together; every shard must exit 0. Returns their logs together,
/// as `kubectl logs` would collect them: stdout and stderr copied into one log by two
/// readers of 1 KiB at a time, the way a container runtime copies the streams. Behind the
/// serialising lock, like every measured run.
pub(crate) async fn run_shards(dir: &Path, count: u32, run_id: &str, args: &[&str]) -> String {
    // The shards share a start window: no other load may run meanwhile.
    let _turn = crate::util::SERIAL.lock().await;
    let start_at =
        humantime::format_rfc3339_millis(SystemTime::now() + Duration::from_secs(4)).to_string();
    // Each shard's streams are copied from the moment it starts, as a runtime does.
    let children: Vec<_> = (0..count)
        .map(|i| {
            let out = dir.join(format!("shard{i}"));
            let mut c = crate::util::hubload_command()
                .args(args)
                .args(["--out", out.to_str().unwrap()])
                .env("JOB_COMPLETION_INDEX", i.to_string())
                .env("HUBLOAD_SHARD_COUNT", count.to_string())
                .env("HUBLOAD_RUN_ID", run_id)
                .env("HUBLOAD_START_AT", &start_at)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let log = Arc::new(Mutex::new(Vec::new()));
            let copiers = [
                copier(c.stdout.take().unwrap(), log.clone()),
                copier(c.stderr.take().unwrap(), log.clone()),
            ];
            (c, copiers, log)
        })
        .collect();
    let mut logs = String::new();
    for (mut c, copiers, log) in children {
        let status = tokio::task::spawn_blocking(move || {
            for t in copiers {
                t.join().unwrap();
            }
            c.wait().unwrap()
        })
        .await
        .unwrap();
        let log = String::from_utf8_lossy(&log.lock().unwrap()).into_owned();
        assert!(status.success(), "shard exited with {status}: {log}");
        logs += &log;
    }
    logs
}

/// Copy `from` into the shared `log` 1 KiB at a time, as a container runtime's stream reader.
fn copier(
    mut from: impl Read + Send + 'static,
    log: Arc<Mutex<Vec<u8>>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => log.lock().unwrap().extend_from_slice(&buf[..n]),
            }
        }
    })
}

/// `hubload merge` of a log dump into `dir/merged`; the merged summary.
pub(crate) fn merge_logs(dir: &Path, logs: &str) -> hubload::report::document::Report {
    let dump = dir.join("shards.log");
    std::fs::write(&dump, logs).unwrap();
    let merged_dir = dir.join("merged");
    let m = crate::util::hubload_command()
        .args([
            "merge",
            dump.to_str().unwrap(),
            "--out",
            merged_dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_exit(&m, 0);
    read_summary(&merged_dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_shards_merge_to_the_hubs_counts_and_to_a_single_run() {
    let hub = hub_with(FaultConfig {
        fail_503_every: Some(6),
        ..FaultConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut args = ARGS.to_vec();
    args.extend(["--hub-url", &hub.url]);
    let logs = run_shards(dir.path(), 3, "shard-test", &args).await;
    let merged = merge_logs(dir.path(), &logs);

    // 1. The merge equals the hub's own counts.
    let s = hub.stats().await;
    let t = merged.total.as_ref().unwrap();
    assert_eq!(t.derived.samples, 480);
    assert_eq!(s.publish.total(), 480);
    assert_eq!(count(t, "accepted"), s.publish.accepted);
    assert_eq!(count(t, "http_503"), s.publish.fault_503);
    // Server-Timing merges across shards: one `hub` per answer of the hub's publish handler.
    assert_eq!(
        t.derived.server_timing["hub"].count,
        s.publish.accepted + s.publish.denied
    );
    assert_eq!(
        merged.registration.as_ref().unwrap().result.topics,
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

    // Per-second histograms merge second by second: the merged second s counts the shards'
    // seconds s together, which is the merged timeline (recorded apart), and the level.
    let shard_reports: Vec<_> = (0..3)
        .map(|i| read_summary(&dir.path().join(format!("shard{i}"))))
        .collect();
    let per_second = |l: &hubload::report::model::LevelReport| -> Vec<u64> {
        let ps = &l.stats.seconds;
        ps.latency
            .iter()
            .map(|b| match b.as_str() {
                "" => 0,
                b => hubload::stats::from_base64(b).unwrap().len(),
            })
            .collect()
    };
    for (i, l) in merged.levels.iter().enumerate() {
        let got = per_second(l);
        let mut want = vec![0u64; got.len()];
        for r in &shard_reports {
            for (s, c) in per_second(&r.levels[i]).into_iter().enumerate() {
                want[s] += c;
            }
        }
        assert_eq!(got, want, "level {}", l.label);
        let timeline: Vec<u64> = l.stats.timeline.iter().map(|b| b.count).collect();
        assert_eq!(got, timeline, "level {}", l.label);
        assert_eq!(
            got.iter().sum::<u64>(),
            l.derived.samples,
            "level {}",
            l.label
        );
    }

    // 2. The merge equals one process running the same workload: the same events, so the same
    //    counts per topic (the per-class split depends on the hub's fault schedule order).
    let single_hub = hub_with(FaultConfig::default()).await;
    let out = tempfile::tempdir().unwrap();
    let mut args: Vec<&str> = ARGS.to_vec();
    args.retain(|a| *a != "--quiet");
    args.extend([
        "--hub-url",
        &single_hub.url,
        "--out",
        out.path().to_str().unwrap(),
    ]);
    run(&args).await;
    // Read back: a run's own report keeps only a few topic rows per level in memory.
    let single = read_summary(out.path());
    let st = single.total.as_ref().unwrap();
    assert_eq!(st.derived.samples, t.derived.samples);
    for (a, b) in single.levels.iter().zip(&merged.levels) {
        assert_eq!(a.derived.samples, b.derived.samples);
        assert_eq!(a.topic_attempts(), b.topic_attempts(), "level {}", a.label);
        assert_eq!(
            a.stats.bytes_sent, b.stats.bytes_sent,
            "level {}: the same events, byte for byte",
            a.label
        );
    }
    // tenants.csv of the merge rolls up by tenant like the single run's: the same tenants,
    // topics and attempts per level (9 tenants, none blank).
    let tenant_rows = |d: &Path| -> Vec<[String; 4]> {
        let text = std::fs::read_to_string(d.join("tenants.csv")).unwrap();
        text.lines()
            .skip(1)
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                [f[0], f[1], f[2], f[3]].map(String::from)
            })
            .collect()
    };
    let merged_tenants = tenant_rows(&dir.path().join("merged"));
    assert_eq!(merged_tenants, tenant_rows(out.path()));
    assert_eq!(merged_tenants.len(), 2 * 9, "{merged_tenants:?}");
    assert!(merged_tenants.iter().all(|r| r[1].starts_with("tenant")));
    // Fairness of the merge is exact: each tenant's statistics are the sum of the shards'
    // (its attempts, good attempts and histogram buckets add), its attempts those of the single
    // run (the same events), and the index follows from the merged counts.
    for (i, (m, one)) in merged.levels.iter().zip(&single.levels).enumerate() {
        let f = m.fairness.as_ref().expect("9 tenants: figures");
        assert_eq!(f.tenants, 9, "level {}", m.label);
        let attempts = |f: &hubload::fairness::Fairness| -> Vec<(String, u64)> {
            f.by_tenant
                .iter()
                .map(|t| (t.tenant.clone(), t.attempts))
                .collect()
        };
        assert_eq!(attempts(f), attempts(one.fairness.as_ref().unwrap()));
        for t in &f.by_tenant {
            let (mut n, mut good, mut max) = (0u64, 0u64, 0u64);
            let mut buckets = vec![0u64; hubload::stats::TOPIC_BUCKETS];
            for r in &shard_reports {
                for topic in &r.levels[i].topics {
                    let owner = r.topic_tenants[topic.topic].map(hubload::workload::tenant_name);
                    if owner.as_deref() != Some(t.tenant.as_str()) {
                        continue;
                    }
                    n += topic.stats.counts.total();
                    good += topic.stats.counts.get(hubload::result::Class::Accepted);
                    max = max.max(topic.stats.max_us);
                    for (b, c) in topic.stats.nonempty_buckets() {
                        buckets[b] += u64::from(c);
                    }
                }
            }
            // Nearest rank ⌈0.99·n⌉, the bucket's highest value clamped to the exact max.
            let rank = ((0.99 * n as f64).ceil() as u64).clamp(1, n);
            let mut seen = 0;
            let at = buckets.iter().position(|c| {
                seen += c;
                seen >= rank
            });
            let p99 = hubload::stats::bucket_high(at.unwrap()).min(max);
            assert_eq!(
                (t.attempts, t.good, t.p99_us, t.max_us),
                (n, good, p99, max),
                "level {} {}",
                m.label,
                t.tenant
            );
        }
        let x: Vec<f64> = f
            .by_tenant
            .iter()
            .map(|t| t.good as f64 / t.attempts as f64)
            .collect();
        let want = crate::fairness::jain_by_hand(&x);
        assert!(
            (f.jain_index.unwrap() - want).abs() < 1e-12,
            "level {}",
            m.label
        );
        let good: u64 = f.by_tenant.iter().map(|t| t.good).sum();
        assert_eq!(good, count(m, "accepted"), "level {}", m.label);
    }
    let single_hub_stats = single_hub.stats().await;
    let single_attempts = crate::util::attempts_by_topic(&single);
    for (i, name) in single.topics.iter().enumerate() {
        assert_eq!(
            single_attempts.get(i).copied().unwrap_or(0),
            single_hub_stats.topics[&**name].published,
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
    let m = crate::util::hubload_command()
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
    assert_exit(&out, 2);
}

/// Two Service Bus shards against one emulator: `hubload merge` adds their `servicebus`
/// sections, and the merged counts equal the emulator's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_service_bus_shards_merge_their_section_to_the_emulators_counts() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let emu = hubload_servicebus::emulator::Emulator::start(
        listener,
        hubload_servicebus::emulator::EmulatorConfig {
            throttle_every: Some(5),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let cs = emu.connection_string();
    let dir = tempfile::tempdir().unwrap();
    let mut args = ARGS.to_vec();
    args.extend([
        "--target",
        "servicebus",
        "--sb-connection-string",
        &cs,
        "--retries",
        "0",
    ]);
    let logs = run_shards(dir.path(), 2, "sb-shards", &args).await;
    let merged = merge_logs(dir.path(), &logs);
    let shards: Vec<_> = (0..2)
        .map(|i| read_summary(&dir.path().join(format!("shard{i}"))))
        .collect();
    let c = emu.counts();
    let t = merged.total.as_ref().unwrap();
    assert_eq!(merged.target.as_str(), "servicebus");
    assert_eq!(t.derived.samples, 480);
    assert_eq!(c.accepted + c.throttled, 480);
    assert_eq!(count(t, "accepted"), c.accepted);
    assert_eq!(count(t, "throttled"), c.throttled);
    let sb = merged
        .servicebus
        .as_ref()
        .expect("the merged servicebus section");
    let parts: Vec<_> = shards
        .iter()
        .map(|r| r.servicebus.clone().unwrap())
        .collect();
    assert!(parts.iter().all(|p| p.token_puts > 0));
    assert_eq!(
        sb.token_puts,
        parts.iter().map(|p| p.token_puts).sum::<u64>()
    );
    assert_eq!(
        sb.reconnects,
        parts.iter().map(|p| p.reconnects).sum::<u64>()
    );
    assert_eq!(
        (sb.endpoint.as_str(), sb.connections),
        (parts[0].endpoint.as_str(), parts[0].connections)
    );
    assert_eq!(sb.emulator, None, "an external emulator is not reported");
    // Every topic was attached once, by the shard owning its tenant.
    assert_eq!(merged.registration.as_ref().unwrap().result.topics, 36);
    emu.shutdown().await;
}

/// Shard artifacts of format version 1 (two shards of a run against a hub failing every fifth
/// request, written by the build before version 2) still merge, into the very reports that
/// build's `hubload merge` wrote from them, plus what came after it: the fairness figures
/// (table.txt's last block, `fairness` in summary.json).
#[test]
fn version_1_artifacts_merge_into_the_reports_their_build_wrote() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/shards-v1");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("merged");
    let m = crate::util::hubload_command()
        .args([
            "merge",
            fixtures.join("shard-0-of-2.json").to_str().unwrap(),
            fixtures.join("shard-1-of-2.json").to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_exit(&m, 0);
    for name in [
        "table.txt",
        "aggregate.csv",
        "topics.csv",
        "tenants.csv",
        "latency.csv",
        "whatif.csv",
        "latency.hlog",
    ] {
        let want = std::fs::read_to_string(fixtures.join(format!("merged-{name}"))).unwrap();
        let got = std::fs::read_to_string(out.join(name)).unwrap();
        let got = match got.split_once("\nFairness between tenants") {
            Some((before, _)) if name == "table.txt" => before.to_string(),
            _ => got,
        };
        assert_eq!(got, want, "{name}");
    }
    // summary.json too, value for value but for the time the merge wrote it and the
    // fairness figures, which that build did not write: every row has them now.
    let read = |path: &Path| -> serde_json::Value {
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        v.as_object_mut().unwrap().remove("finished_at");
        v
    };
    let mut want = read(&fixtures.join("merged-summary.json"));
    let mut got = read(&out.join("summary.json"));
    // That build wrote each level's topics inline; this one writes them to topics.jsonl, the
    // same rows value for value, and says so (the attempts per topic are the rows' attempts).
    // The topics' names and tenants likewise, to topic-names.jsonl.
    let got_meta = got.as_object_mut().unwrap();
    assert_eq!(got_meta.remove("schema_version"), Some(5.into()));
    assert_eq!(got_meta.remove("topics_file"), Some("topics.jsonl".into()));
    assert_eq!(
        got_meta.remove("fairness_file"),
        Some("fairness.jsonl".into())
    );
    // No subscribers: no subscribers.jsonl.
    assert_eq!(got_meta.get("subscribers_file"), None);
    assert_eq!(
        got_meta.remove("topic_names_file"),
        Some("topic-names.jsonl".into())
    );
    let want_meta = want.as_object_mut().unwrap();
    let named = jsonl_lines(&out, "topic-names.jsonl");
    let names: Vec<_> = named.iter().map(|t| t["topic"].clone()).collect();
    let tenants: Vec<_> = named.iter().map(|t| t["tenant"].clone()).collect();
    assert_eq!(want_meta.remove("topics"), Some(names.into()));
    assert_eq!(want_meta.remove("topic_tenants"), Some(tenants.into()));
    let lines = std::fs::read_to_string(out.join("topics.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    for (i, (row, line)) in want["levels"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .zip(&lines)
        .enumerate()
    {
        let row = row.as_object_mut().unwrap();
        assert_eq!((&line["level"], &line["label"]), (&i.into(), &row["label"]));
        let topics = row.remove("topics").unwrap();
        assert_eq!(line["topics"], topics, "level {i}");
        let dense = row.remove("topic_attempts").unwrap();
        for t in topics.as_array().unwrap() {
            let n = t["topic"].as_u64().unwrap() as usize;
            assert_eq!(dense[n], t["attempts"], "level {i} topic {n}");
        }
    }
    for field in ["topics", "topic_attempts"] {
        want["total"]
            .as_object_mut()
            .unwrap()
            .remove(field)
            .unwrap();
    }
    // Schema 5: each row holds its statistics (`stats`) where that build wrote copies of
    // some of them beside the figures derived from them.
    fn row(v: &mut serde_json::Value, i: usize) -> &mut serde_json::Map<String, serde_json::Value> {
        let n = v["levels"].as_array().unwrap().len();
        let r = if i < n {
            &mut v["levels"][i]
        } else {
            &mut v["total"]
        };
        r.as_object_mut().unwrap()
    }
    for i in 0..=want["levels"].as_array().unwrap().len() {
        let stats = row(&mut got, i).remove("stats").unwrap();
        let w = row(&mut want, i);
        for field in [
            "counts",
            "dropped",
            "first_start_us",
            "bytes_sent",
            "bytes_received",
            "timeline",
        ] {
            assert_eq!(w.remove(field).as_ref(), stats.get(field), "{field}");
        }
        let reasons = stats
            .get("reasons")
            .cloned()
            .unwrap_or_else(|| serde_json::json!({}));
        assert_eq!(w.remove("reasons"), Some(reasons));
        let h = w.remove("histograms").unwrap();
        assert_eq!(h["latency"], stats["latency"]);
        assert_eq!(h.get("per_second"), stats.get("seconds"));
    }
    // Schema 5: a phase is written as the target recorded it, its reasons only when any.
    for phase in ["registration", "deregistration"] {
        if let Some(p) = want[phase].as_object_mut() {
            if p.get("reasons") == Some(&serde_json::json!({})) {
                p.remove("reasons");
            }
        }
    }
    let mut figures = 0;
    for row in got["levels"].as_array_mut().unwrap() {
        figures += usize::from(row.as_object_mut().unwrap().remove("fairness").is_some());
    }
    let total = got["total"].as_object_mut().unwrap();
    figures += usize::from(total.remove("fairness").is_some());
    assert_eq!(figures, 3, "two levels and TOTAL");
    assert!(got == want, "summary.json differs from the fixture");
}
