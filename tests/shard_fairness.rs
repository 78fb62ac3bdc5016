//! A sharded run's fairness figures and isolation verdicts are exact: the merged figures equal
//! those computed from the union of the shards' per-tenant rows, the isolation verdicts (publish
//! and delivery) of the merged quiet seconds equal a single process's over the same seconds, and
//! `hubload merge --threshold` judges the fairness gates on the merged figures.

use std::collections::BTreeMap;

use hubload::fairness::isolation::{delivery_verdict, verdict, Isolation, SurgeShape};
use hubload::fairness::{figures, per_tenant, Fairness};
use hubload::report::document::Report;
use hubload::result::Class;
use hubload::stats::{LevelStats, TopicStats};
use hubload_hub::FaultConfig;

use crate::fairness::{hub_accepted, jain_by_hand};
use crate::shards::{merge_logs, run_shards};
use crate::util::{hub_with, read_summary, settled, TestHub};

/// 6 tenants, one level of 180 publishes through 3 workers, split over the shards.
const ARGS: &[&str] = &[
    "--tenants",
    "6",
    "--sps",
    "2",
    "--users",
    "3",
    "--seed",
    "11",
    "--concurrency",
    "3",
    "--requests",
    "180",
    "--quiet",
];

/// The fairness figures from the union of the shards' per-tenant rows: each shard's topic
/// rows of `levels` rolled up by tenant, the tenants of all shards together (a tenant several
/// shards published for is their sum).
fn from_union(shards: &[Report], levels: std::ops::Range<usize>) -> Option<Fairness> {
    let mut union: BTreeMap<String, TopicStats> = BTreeMap::new();
    for r in shards {
        let rows = r.levels[levels.clone()]
            .iter()
            .flat_map(|l| &l.topics)
            .map(|t| (t.topic, &t.stats));
        for (tenant, s) in per_tenant(rows, &r.topic_tenants, hubload::workload::tenant_name) {
            *union.entry(tenant).or_default() += &s;
        }
    }
    figures(&union.into_iter().collect::<Vec<_>>())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shards_merge_to_the_fairness_figures_of_their_tenants_union_and_gates_judge_them() {
    // One tenant's publishes fail every third time: the index is below 1.
    let hub = hub_with(FaultConfig {
        fail_503_every: Some(3),
        topic_prefixes: vec!["tenant0002.".into()],
        ..FaultConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut args = ARGS.to_vec();
    args.extend(["--hub-url", &hub.url]);
    let logs = run_shards(dir.path(), 2, "fairness-test", &args).await;
    let merged = merge_logs(dir.path(), &logs);
    let shards: Vec<_> = (0..2)
        .map(|i| read_summary(&dir.path().join(format!("shard{i}"))))
        .collect();
    let level = &merged.levels[0];
    let f = level.fairness.clone().expect("6 tenants: figures");
    assert_eq!(f.tenants, 6);
    // The merged figures are those of the union, exactly: every share, index and spread.
    // (The numbers read back through JSON text as the reports' are, summary.json's figures
    // and fairness.jsonl's rows: serde_json's reading of a float may be one unit in the last
    // place off the value written.)
    let as_read = |f: Option<Fairness>| -> Option<Fairness> {
        f.map(|f| {
            let rows = serde_json::to_string(&f.by_tenant).unwrap();
            let mut back: Fairness =
                serde_json::from_str(&serde_json::to_string(&f).unwrap()).unwrap();
            back.by_tenant = serde_json::from_str(&rows).unwrap();
            back
        })
    };
    assert_eq!(Some(f.clone()), as_read(from_union(&shards, 0..1)));
    // TOTAL's too, from every level's rows (the shards' TOTAL rows keep no topic rows).
    assert_eq!(
        merged.total.as_ref().unwrap().fairness,
        as_read(from_union(&shards, 0..1))
    );
    // And the hub's own counts: each tenant's good attempts are its accepted publishes, and
    // the index follows from them.
    let hub_good = hub_accepted(&hub.stats().await.topics);
    let x: Vec<f64> = f
        .by_tenant
        .iter()
        .map(|t| {
            assert_eq!(t.good, hub_good[&t.tenant], "{}", t.tenant);
            t.good as f64 / t.attempts as f64
        })
        .collect();
    let jain = f.jain_index.unwrap();
    assert!((jain - jain_by_hand(&x)).abs() < 1e-12, "{jain} vs {x:?}");
    assert!(jain < 1.0, "{f:?}");

    // `hubload merge --threshold` judges the merged figure: it lies between the index's
    // 5-decimal floor and that + 0.00001.
    let lo = format!("{:.5}", (jain * 1e5).floor() / 1e5);
    let hi = format!("{:.5}", (jain * 1e5).floor() / 1e5 + 1e-5);
    let merged_dir = dir.path().join("gated");
    let out = crate::util::hubload_command()
        .args(["merge", dir.path().join("shards.log").to_str().unwrap()])
        .args(["--out", merged_dir.to_str().unwrap()])
        .args(["--threshold", &format!("tenant_fairness>{lo}")])
        .args(["--threshold", &format!("tenant_fairness>{hi}")])
        .output()
        .unwrap();
    crate::util::assert_exit(&out, 1);
    let gated = read_summary(&merged_dir);
    let verdicts: Vec<(String, String, bool)> = gated
        .verdicts
        .iter()
        .map(|v| (v.threshold.clone(), v.actual.clone(), v.passed))
        .collect();
    let actual = format!("{jain:.3}");
    assert_eq!(
        verdicts,
        [
            (format!("tenant_fairness>{lo}"), actual.clone(), true),
            (format!("tenant_fairness>{hi}"), actual, false)
        ]
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("FAIL tenant_fairness>{hi}")),
        "{stdout}"
    );
}

/// Tenant `t`'s attempts that ended in second `s`: a few, latencies spread over 0.1–20 ms and
/// higher from the surge's second 5 on, every 17th one an error.
fn tenant_second(t: u64, s: u64) -> TopicStats {
    let mut st = TopicStats::default();
    for k in 0..(3 + (t * 5 + s * 3) % 7) {
        let mut us = 100 + (t * 7919 + s * 104_729 + k * 31) % 20_000;
        if s >= 5 {
            us *= 1 + t % 3;
        }
        let class = match (t + s + k) % 17 {
            0 => Class::Http503,
            _ => Class::Accepted,
        };
        st.record(class, us);
    }
    st
}

#[test]
fn the_isolation_verdict_of_merged_quiet_seconds_is_a_single_process_s() {
    const SECONDS: u64 = 12;
    let shape = SurgeShape {
        surging: vec!["tenant0000".into()],
        factor: 10.0,
        from_s: 5,
        quiet_tenants: 7,
        noise_floor_us: 100_000,
    };
    // One process sees every quiet tenant's attempts of each second.
    let single: Vec<TopicStats> = (0..SECONDS)
        .map(|s| {
            let mut all = TopicStats::default();
            (1..=7).for_each(|t| all += &tenant_second(t, s));
            all
        })
        .collect();
    // Two shards own whole tenants (odd and even), record their own quiet seconds, ship them
    // in their artifacts (serialized) and the merge adds them with `+=`.
    let mut merged = LevelStats::default();
    for shard in 0..2 {
        let stats = LevelStats {
            quiet_seconds: (0..SECONDS)
                .map(|s| {
                    let mut own = TopicStats::default();
                    (1..=7u64)
                        .filter(|t| t % 2 == shard)
                        .for_each(|t| own += &tenant_second(t, s));
                    own
                })
                .collect(),
            ..LevelStats::default()
        };
        let shipped: LevelStats =
            serde_json::from_str(&serde_json::to_string(&stats).unwrap()).unwrap();
        merged += &shipped;
    }
    assert_eq!(merged.quiet_seconds, single);
    let (one, both) = (
        verdict(&shape, &single),
        verdict(&shape, &merged.quiet_seconds),
    );
    let v = one.expect("quiet attempts before and during the surge");
    assert_eq!(Some(v.clone()), both);
    // The windows count what was recorded: seconds 0–4 and 5–11.
    let attempts = |r: std::ops::Range<u64>| -> u64 {
        r.flat_map(|s| (1..=7).map(move |t| tenant_second(t, s).counts.total()))
            .sum()
    };
    assert_eq!(
        (
            v.baseline.seconds,
            v.baseline.attempts,
            v.surge.seconds,
            v.surge.attempts
        ),
        (5, attempts(0..5), 7, attempts(5..SECONDS))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharded_surge_merges_to_one_isolation_verdict_and_merge_judges_the_quiet_gates() {
    // tests/noisy.rs's surge (tenant0001 at 9× its share from 4 s of 8) with room to spare,
    // over two shards.
    let hub = hub_with(crate::noisy::slow_hub()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut args = crate::noisy::flags("64", crate::noisy::GATE);
    args.extend(["--quiet", "--hub-url", &hub.url]);
    let logs = run_shards(dir.path(), 2, "surge-test", &args).await;
    let dump = dir.path().join("shards.log");
    std::fs::write(&dump, logs).unwrap();
    let merged_dir = dir.path().join("merged");
    let out = crate::util::hubload_command()
        .args(["merge", dump.to_str().unwrap()])
        .args(["--out", merged_dir.to_str().unwrap()])
        .args(["--threshold", "quiet_p99_increase<300%"])
        .args(["--threshold", "quiet_errors>0.1%"])
        .output()
        .unwrap();
    // The second gate fails: the quiet tenants had no error.
    crate::util::assert_exit(&out, 1);
    let merged = read_summary(&merged_dir);
    let level = &merged.levels[0];
    let v = level.isolation.as_ref().expect("the merged verdict");
    assert_eq!((v.quiet_tenants, v.from_s), (3, 4));
    assert_eq!((v.baseline.errors, v.surge.errors), (0, 0));
    // Its windows hold every quiet attempt of both shards, which are the hub's publishes of
    // the quiet tenants' topics.
    let hub_published = hub_accepted(&hub.stats().await.topics);
    let quiet: u64 = hub_published
        .iter()
        .filter(|(t, _)| t.as_str() != "tenant0001")
        .map(|(_, n)| n)
        .sum();
    assert_eq!(v.baseline.attempts + v.surge.attempts, quiet);
    let f = level.fairness.as_ref().unwrap();
    for t in &f.by_tenant {
        assert_eq!(t.attempts, hub_published[&t.tenant], "{}", t.tenant);
    }
    let verdicts: Vec<(String, String, bool)> = merged
        .verdicts
        .iter()
        .map(|g| (g.threshold.clone(), g.actual.clone(), g.passed))
        .collect();
    let up = v.p99_increase_pct.unwrap();
    assert_eq!(
        verdicts,
        [
            (
                "quiet_p99_increase<300%".into(),
                format!("{up:.3}%"),
                up < 300.0
            ),
            ("quiet_errors>0.1%".into(), "0.000%".into(), false),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharded_surge_with_subscribers_merges_to_the_delivery_verdict_of_the_shards_seconds() {
    // tests/fair_delivery.rs's surge with subscribers (tenant0001 at 9× its share from 4 s of
    // 8), over two shards that own whole tenants, against a hub without a delivery limit.
    let hub = TestHub::start(hubload_hub::HubConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut args = crate::fair_delivery::FLAGS.to_vec();
    args.extend(["--quiet", "--hub-url", &hub.url]);
    let logs = run_shards(dir.path(), 2, "delivery-surge", &args).await;
    let merged = merge_logs(dir.path(), &logs);
    let hub_delivered = crate::fair_delivery::hub_delivered(&settled(&hub).await);
    let v = merged.levels[0]
        .delivery_isolation
        .clone()
        .expect("the merged delivery verdict");
    // The verdict over the union of the shards' quiet seconds, as their artifacts carry them,
    // added second by second here.
    let (mut union, mut lost): (Vec<TopicStats>, Vec<u64>) = Default::default();
    for a in hubload::shard::from_log_dump(&logs).unwrap() {
        let d = &a.levels[0]
            .delivery
            .as_ref()
            .expect("a shard's deliveries")
            .stats;
        for (s, t) in d.quiet_seconds.iter().enumerate() {
            if union.len() <= s {
                union.resize(s + 1, TopicStats::default());
            }
            union[s] += t;
        }
        for (s, n) in d.quiet_lost.iter().enumerate() {
            if lost.len() <= s {
                lost.resize(s + 1, 0);
            }
            lost[s] += n;
        }
    }
    let shape = SurgeShape {
        surging: vec!["tenant0001".into()],
        factor: 9.0,
        from_s: 4,
        quiet_tenants: 3,
        noise_floor_us: 100_000,
    };
    // Read back through JSON text as summary.json's figures are.
    let as_read = |v: Isolation| -> Isolation {
        serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap()
    };
    let expected =
        delivery_verdict(&shape, &union, &lost).expect("quiet deliveries in both windows");
    assert_eq!(v, as_read(expected));
    // Window by window, the shards' own verdicts' counts add up to the merged one's.
    let shards: Vec<Report> = (0..2)
        .map(|i| read_summary(&dir.path().join(format!("shard{i}"))))
        .collect();
    let windows = |r: &Report| {
        r.levels[0]
            .delivery_isolation
            .as_ref()
            .map_or((0, 0, 0, 0), |v| {
                let (b, s) = (&v.baseline, &v.surge);
                (b.attempts, b.errors, s.attempts, s.errors)
            })
    };
    let (a, b) = (windows(&shards[0]), windows(&shards[1]));
    let sum = (a.0 + b.0, a.1 + b.1, a.2 + b.2, a.3 + b.3);
    let (bl, su) = (&v.baseline, &v.surge);
    assert_eq!(sum, (bl.attempts, bl.errors, su.attempts, su.errors));
    // And the hub's own counts: every quiet tenant's delivery is in one window, once.
    let quiet: u64 = hub_delivered
        .iter()
        .filter(|(t, _)| t.as_str() != "tenant0001")
        .map(|(_, n)| n)
        .sum();
    assert_eq!(bl.attempts + su.attempts, quiet, "{v:?}");
    assert!(bl.attempts > 0 && su.attempts > 0, "{v:?}");
    // TOTAL has no verdict: its seconds would pool levels of different rates.
    assert_eq!(merged.total.as_ref().unwrap().delivery_isolation, None);

    // `hubload merge --threshold` judges the delivery gates on the merged verdict.
    let gated = dir.path().join("gated");
    let out = crate::util::hubload_command()
        .args(["merge", dir.path().join("shards.log").to_str().unwrap()])
        .args(["--out", gated.to_str().unwrap()])
        .args(["--threshold", "quiet_delivery_loss<0.1%"])
        .args(["--threshold", "quiet_delivery_p99_increase<0%"])
        .output()
        .unwrap();
    let up = v.p99_increase_pct.expect("a baseline p99");
    crate::util::assert_exit(&out, if up < 0.0 { 0 } else { 1 });
    let verdicts: Vec<(String, String, bool)> = (read_summary(&gated).verdicts.iter())
        .map(|g| (g.threshold.clone(), g.actual.clone(), g.passed))
        .collect();
    assert_eq!(
        verdicts,
        [
            ("quiet_delivery_loss<0.1%".into(), "0.000%".into(), true),
            (
                "quiet_delivery_p99_increase<0%".into(),
                format!("{up:.3}%"),
                up < 0.0
            ),
        ]
    );
}
